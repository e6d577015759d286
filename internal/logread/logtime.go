package logread

import (
	"fmt"
	"strings"
	"time"
)

// Log times are parsed by hand: time.Parse allocates, walks a layout
// string and looks zone abbreviations up in the local zone database, which
// costs more than the rest of a csvlog record together. Log files write the
// same second many times in a row, so logTimeParser remembers the last
// "date time zone" it converted and only re-reads the fraction when the
// seconds did not change.

// maxZoneLen bounds the zone text the cache remembers; longer zones (which
// PostgreSQL never writes) are parsed every time.
const maxZoneLen = 16

// logTimeParser converts log timestamps to µs since the Unix epoch, caching
// the last whole second. One parser belongs to one reader: it is not safe
// for concurrent use, which is why the cache is not a package variable.
type logTimeParser struct {
	ok      bool
	secText [19]byte // "YYYY-MM-DD HH:MM:SS" of the cached value
	zone    [maxZoneLen]byte
	zoneLen int
	unix    int64 // seconds since the epoch, zone applied
	// zones says how to read abbreviations the table does not settle,
	// and keeps the warnings; nil reads them as UTC, silently (tests).
	zones *zoneReading
}

// zoneReading is how a reader takes time-zone abbreviations that are
// unknown or ambiguous, and what it told the user about them.
type zoneReading struct {
	// loc is the server's log_timezone as the user gave it:
	// it reads unknown and ambiguous abbreviations, and times without
	// a zone. nil: UTC for unknown ones, the table's meaning for
	// ambiguous ones.
	loc      *time.Location
	warned   map[string]bool
	warnings *[]string
}

// warn says once per abbreviation how it was read.
func (z *zoneReading) warn(abbr, text string) {
	if z.warned == nil {
		z.warned = make(map[string]bool)
	}
	if !z.warned[abbr] {
		z.warned[abbr] = true
		*z.warnings = append(*z.warnings, text)
	}
}

// parseLogTime parses one timestamp without a cache. Readers should keep a
// logTimeParser instead; this is for one-off values and tests.
func parseLogTime(b []byte) (int64, bool) {
	var p logTimeParser
	return p.parse(b)
}

// parse converts a timestamp as PostgreSQL writes it to µs since the epoch.
// Accepted forms:
//
//	2026-11-22 08:11:02 UTC          %t, csvlog session_start_time
//	2026-11-22 08:11:02.123 UTC      %m, csvlog log_time, jsonlog timestamp
//	2026-11-22 08:11:02.123456 CET   fractions of up to 9 digits (truncated to µs)
//	2026-11-22 08:11:02.123 +0530    numeric zones: +03, +0530, -07:00
//	2020-05-02T13:00:20.382318Z      RFC 3339, as Cloud Logging writes it
//	2026-11-22 08:11:02              no zone: UTC
//	1700000000.123                   %n, epoch seconds
//
// Abbreviations are read as zoneTable says (see zoneReading for unknown
// and ambiguous ones): log_timezone is a server-wide setting, so one file
// uses one abbreviation pair (CET/CEST) throughout.
func (p *logTimeParser) parse(b []byte) (int64, bool) {
	if len(b) < 19 || b[4] != '-' {
		return parseEpoch(b)
	}
	if b[10] != ' ' && b[10] != 'T' {
		return 0, false
	}
	// Fraction: ".123" right after the seconds.
	i := 19
	var frac int64
	if i < len(b) && b[i] == '.' {
		i++
		start := i
		scale := int64(100000)
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			if scale > 0 {
				frac += int64(b[i]-'0') * scale
				scale /= 10
			}
			i++
		}
		if i == start {
			return 0, false
		}
	}
	// Zone: " UTC", " +03", "Z" (RFC 3339 writes it without a space).
	zone := b[i:]
	if len(zone) > 0 && zone[0] == ' ' {
		zone = zone[1:]
	}
	if p.ok && len(zone) == p.zoneLen && string(b[:19]) == string(p.secText[:]) && string(zone) == string(p.zone[:p.zoneLen]) {
		return p.unix*1e6 + frac, true
	}
	sec, ok := civilSeconds(b[:19])
	if !ok {
		return 0, false
	}
	off, ok := p.offset(zone, sec)
	if !ok {
		return 0, false
	}
	sec -= off
	if len(zone) <= maxZoneLen {
		p.ok = true
		copy(p.secText[:], b[:19])
		p.zoneLen = copy(p.zone[:], zone)
		p.unix = sec
	}
	return sec*1e6 + frac, true
}

// parseEpoch reads "%n" times: "1700000000.123", seconds since the epoch
// with an optional fraction. CloudNativePG's "ts" is the same shape.
func parseEpoch(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 30 {
		return 0, false
	}
	var sec int64
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		if i >= 12 { // beyond year 33658: not a log time
			return 0, false
		}
		sec = sec*10 + int64(b[i]-'0')
		i++
	}
	if i == 0 {
		return 0, false
	}
	var frac int64
	if i < len(b) && b[i] == '.' {
		i++
		scale := int64(100000)
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			frac += int64(b[i]-'0') * scale
			scale /= 10
			i++
		}
	}
	if i != len(b) {
		return 0, false
	}
	return sec*1e6 + frac, true
}

// civilSeconds converts "YYYY-MM-DD HH:MM:SS" (any separator at 10) to
// seconds since the epoch, as if in UTC.
func civilSeconds(b []byte) (int64, bool) {
	if b[4] != '-' || b[7] != '-' || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	year, ok1 := digits(b[0:4])
	month, ok2 := digits(b[5:7])
	day, ok3 := digits(b[8:10])
	hour, ok4 := digits(b[11:13])
	minute, ok5 := digits(b[14:16])
	second, ok6 := digits(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return 0, false
	}
	// second 60 is a leap second as some systems print it.
	if month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60 {
		return 0, false
	}
	return daysFromCivil(year, month, day)*86400 + hour*3600 + minute*60 + second, true
}

func digits(b []byte) (int64, bool) {
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// daysFromCivil is Howard Hinnant's algorithm: days since 1970-01-01 in
// the proleptic Gregorian calendar, without tables or loops.
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y
	if era < 0 { // year 0000 in January or February: floor, not truncate
		era -= 399
	}
	era /= 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// offset returns the offset east of UTC of a time written in zone, whose
// civil time is sec (seconds since the epoch as if in UTC). Unknown and
// ambiguous abbreviations are read as zones says, with a warning.
func (p *logTimeParser) offset(zone []byte, sec int64) (int64, bool) {
	off, ok := zoneOffset(zone)
	if !ok || len(zone) == 0 || zone[0] == '+' || zone[0] == '-' {
		if ok && len(zone) == 0 && p.zones != nil && p.zones.loc != nil {
			return locOffset(p.zones.loc, sec), true
		}
		return off, ok
	}
	z := p.zones
	if z == nil {
		return off, true
	}
	abbr := string(zone)
	m, known := zoneTable[abbr]
	switch {
	case !known && z.loc != nil:
		z.warn(abbr, fmt.Sprintf("time zone %q is not an abbreviation the reader knows: read in %s, as given", abbr, z.loc))
		return locOffset(z.loc, sec), true
	case !known:
		z.warn(abbr, fmt.Sprintf("time zone %q is not an abbreviation the reader knows: read as UTC (give the server's log_timezone)", abbr))
		return 0, true
	case len(m.others) > 0 && z.loc != nil:
		z.warn(abbr, fmt.Sprintf("time zone %q is ambiguous: read in %s, as given", abbr, z.loc))
		return locOffset(z.loc, sec), true
	case len(m.others) > 0:
		z.warn(abbr, fmt.Sprintf("time zone %q is ambiguous: read as %s (%s), not %s (give the server's log_timezone)",
			abbr, fmtOffset(m.offset), m.zone, strings.Join(m.others, " or ")))
	}
	return off, true
}

// locOffset returns the offset of loc at the civil time sec.
func locOffset(loc *time.Location, sec int64) int64 {
	c := time.Unix(sec, 0).UTC()
	t := time.Date(c.Year(), c.Month(), c.Day(), c.Hour(), c.Minute(), c.Second(), 0, loc)
	_, off := t.Zone()
	return int64(off)
}

func fmtOffset(s int) string {
	sign := "+"
	if s < 0 {
		sign, s = "-", -s
	}
	if s%3600 == 0 {
		return fmt.Sprintf("UTC%s%d", sign, s/3600)
	}
	return fmt.Sprintf("UTC%s%d:%02d", sign, s/3600, s%3600/60)
}

// zoneMeaning is what an abbreviation is read as: its offset east of UTC
// in seconds and a zone that uses it, and what else it means when it is
// ambiguous.
type zoneMeaning struct {
	offset int
	zone   string
	others []string
}

// zoneOffset returns the zone's offset east of UTC in seconds: numeric
// offsets, and abbreviations as zoneTable reads them (UTC when unknown).
func zoneOffset(z []byte) (int64, bool) {
	if len(z) == 0 {
		return 0, true // "2026-11-22 08:11:02": no zone written, take UTC
	}
	if z[0] == '+' || z[0] == '-' {
		// "+03", "+0530", "-07:00", "+05:30:00" (PostgreSQL prints
		// numeric abbreviations for zones that have none, e.g. "+03"
		// for Europe/Istanbul).
		sign := int64(1)
		if z[0] == '-' {
			sign = -1
		}
		var parts [3]int64
		n, i := 0, 1
		for n < 3 && i < len(z) {
			if i+2 > len(z) {
				return 0, false
			}
			v, ok := digits(z[i : i+2])
			if !ok {
				return 0, false
			}
			parts[n] = v
			n++
			i += 2
			if i < len(z) && z[i] == ':' {
				i++
			}
		}
		if n == 0 || i != len(z) || parts[0] > 15 || parts[1] > 59 || parts[2] > 59 {
			return 0, false
		}
		return sign * (parts[0]*3600 + parts[1]*60 + parts[2]), true
	}
	for _, c := range z {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return 0, false
		}
	}
	if m, ok := zoneTable[string(z)]; ok {
		return int64(m.offset), true
	}
	switch string(z) {
	case "Z", "UT":
		return 0, true
	}
	return 0, true // unknown abbreviation: UTC, see parse
}
