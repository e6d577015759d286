package logread

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
// A zone abbreviation not in zoneOffsets is taken as UTC: the result is
// then off by the zone's offset but stable, so durations and ordering
// within the file stay right. log_timezone is a server-wide setting, so
// one file uses one abbreviation pair (CET/CEST) throughout.
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
	off, ok := zoneOffset(zone)
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

// zoneOffset returns the zone's offset east of UTC in seconds.
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
	if off, ok := zoneOffsets[string(z)]; ok {
		return off, true
	}
	return 0, true // unknown abbreviation: UTC, see parse
}

// zoneOffsets are the abbreviations PostgreSQL prints for common
// log_timezone settings. Ambiguous ones take the most common meaning in
// server logs: IST is India (+05:30), not Israel or Ireland; CST is US
// Central, not China (Asia/Shanghai also prints CST: such logs come out
// 14 h off, but consistently).
var zoneOffsets = map[string]int64{
	"UTC": 0, "GMT": 0, "Z": 0, "UT": 0, "WET": 0,
	"WEST": 3600, "BST": 3600, "IST": 5*3600 + 1800,
	"CET": 3600, "CEST": 7200, "MET": 3600, "MEST": 7200,
	"EET": 7200, "EEST": 3 * 3600, "SAST": 7200,
	"MSK": 3 * 3600, "MSD": 4 * 3600,
	"PKT": 5 * 3600, "WIB": 7 * 3600, "ICT": 7 * 3600,
	"HKT": 8 * 3600, "SGT": 8 * 3600, "AWST": 8 * 3600, "PHT": 8 * 3600,
	"JST": 9 * 3600, "KST": 9 * 3600,
	"ACST": 9*3600 + 1800, "ACDT": 10*3600 + 1800,
	"AEST": 10 * 3600, "AEDT": 11 * 3600,
	"NZST": 12 * 3600, "NZDT": 13 * 3600,
	"EST": -5 * 3600, "EDT": -4 * 3600,
	"CST": -6 * 3600, "CDT": -5 * 3600,
	"MST": -7 * 3600, "MDT": -6 * 3600,
	"PST": -8 * 3600, "PDT": -7 * 3600,
	"AKST": -9 * 3600, "AKDT": -8 * 3600,
	"HST": -10 * 3600,
	"AST": -4 * 3600, "ADT": -3 * 3600,
	"NST": -3*3600 - 1800, "NDT": -2*3600 - 1800,
	"BRT": -3 * 3600,
}
