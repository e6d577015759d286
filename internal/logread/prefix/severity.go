package prefix

import (
	"bytes"
	"encoding/binary"
	"strings"
	"unicode/utf8"
)

// Severity classes: the severity words as the server writes them with
// lc_messages = 'C' start a message (Primary: LOG, ERROR, ...) or
// continue the message before them (Secondary: DETAIL, HINT, ...).
const (
	Primary   = 1
	Secondary = 2
)

// SeverityClass returns the class of a severity word, 0 when w is none.
func SeverityClass(w []byte) int {
	switch string(w) {
	case "LOG", "ERROR", "FATAL", "PANIC", "WARNING", "NOTICE", "INFO",
		"DEBUG", "DEBUG1", "DEBUG2", "DEBUG3", "DEBUG4", "DEBUG5":
		return Primary
	case "DETAIL", "HINT", "QUERY", "CONTEXT", "LOCATION", "STATEMENT":
		return Secondary
	}
	return 0
}

// SplitSeverity splits "LOG:  message" into the severity word and the
// message. The server writes two spaces after the colon.
func SplitSeverity(b []byte) (sev, msg []byte, ok bool) {
	n := len(b)
	if n > 12 {
		n = 12
	}
	i := bytes.IndexByte(b[:n], ':')
	if i <= 0 || SeverityClass(b[:i]) == 0 {
		return nil, nil, false
	}
	msg = b[i+1:]
	for k := 0; k < 2 && len(msg) > 0 && msg[0] == ' '; k++ {
		msg = msg[1:]
	}
	return b[:i], msg, true
}

// Severity is a severity word as a number, for the stderr reader's hot
// path. The secondary ones come last, from SevDetail on.
type Severity uint8

const (
	SevNone Severity = iota
	SevLog
	SevError
	SevFatal
	SevPanic
	SevWarning
	SevNotice
	SevInfo
	SevDebug
	SevDebug1
	SevDebug2
	SevDebug3
	SevDebug4
	SevDebug5
	SevDetail
	SevHint
	SevQuery
	SevContext
	SevLocation
	SevStatement
)

var severityWords = [...]string{"", "LOG", "ERROR", "FATAL", "PANIC", "WARNING", "NOTICE", "INFO",
	"DEBUG", "DEBUG1", "DEBUG2", "DEBUG3", "DEBUG4", "DEBUG5",
	"DETAIL", "HINT", "QUERY", "CONTEXT", "LOCATION", "STATEMENT"}

// String returns the word, "" for SevNone.
func (s Severity) String() string {
	if int(s) < len(severityWords) {
		return severityWords[s]
	}
	return ""
}

// SeverityOf returns the severity of a word, SevNone when it is none.
func SeverityOf(w []byte) Severity {
	switch string(w) {
	case "LOG":
		return SevLog
	case "ERROR":
		return SevError
	case "FATAL":
		return SevFatal
	case "PANIC":
		return SevPanic
	case "WARNING":
		return SevWarning
	case "NOTICE":
		return SevNotice
	case "INFO":
		return SevInfo
	case "DEBUG":
		return SevDebug
	case "DEBUG1":
		return SevDebug1
	case "DEBUG2":
		return SevDebug2
	case "DEBUG3":
		return SevDebug3
	case "DEBUG4":
		return SevDebug4
	case "DEBUG5":
		return SevDebug5
	case "DETAIL":
		return SevDetail
	case "HINT":
		return SevHint
	case "QUERY":
		return SevQuery
	case "CONTEXT":
		return SevContext
	case "LOCATION":
		return SevLocation
	case "STATEMENT":
		return SevStatement
	}
	return SevNone
}

// Little-endian words of the severities most lines have, with the colon
// and the first space.
var (
	// WordLog is "LOG:  " as the low six bytes of a little-endian word:
	// a line's severity is most often this one.
	WordLog    = binary.LittleEndian.Uint64([]byte("LOG:  \x00\x00")) & 0xffffffffffff
	wordDetail = binary.LittleEndian.Uint64([]byte("DETAIL: "))
	wordError  = binary.LittleEndian.Uint64([]byte("ERROR:  "))
)

// SplitSeverityFast is SplitSeverity with the severity as a number, and
// the common words recognized by one or two compares; SevNone when b
// does not start with a severity.
func SplitSeverityFast(b []byte) (Severity, []byte) {
	if len(b) >= 8 {
		w := binary.LittleEndian.Uint64(b)
		switch {
		case w&0xffffffffffff == WordLog:
			// "LOG:  duration: ..."
			return SevLog, b[6:]
		case w == wordDetail:
			// "DETAIL:  parameters: ..."
			msg := b[8:]
			if len(msg) > 0 && msg[0] == ' ' {
				msg = msg[1:]
			}
			return SevDetail, msg
		case w == wordError:
			return SevError, b[8:]
		}
	}
	sev, msg, ok := SplitSeverity(b)
	if !ok {
		return SevNone, nil
	}
	return SeverityOf(sev), msg
}

// SeverityIndex returns where in b a severity word followed by ":  "
// starts, or -1: the end of a prefix whose last escape is free text. One
// space after the colon is taken too, as in logs edited by hand. The
// word may follow the prefix's last value with no space between, as a
// prefix that does not end in a space writes it ("user=%u,db=%d":
// "db=shopLOG:  ..."); then the colon must have its two spaces.
func SeverityIndex(b []byte) int {
	off := 0
	for {
		i := bytes.Index(b[off:], []byte(": "))
		if i < 0 {
			return -1
		}
		end := off + i
		start := end
		for start > 0 && b[start-1] >= 'A' && b[start-1] <= 'Z' || start > 0 && b[start-1] >= '0' && b[start-1] <= '9' {
			start--
		}
		if SeverityClass(b[start:end]) != 0 && (start == 0 || !isAlnum(b[start-1]) && b[start-1] != '_') {
			return start
		}
		if start < end && end+2 < len(b) && b[end+2] == ' ' {
			// Glued to the value before it: the longest severity word
			// that ends the run of capitals ("SHOPLOG", "shopLOG").
			for k := start; k < end; k++ {
				if SeverityClass(b[k:end]) != 0 {
					return k
				}
			}
		}
		off = end + 1
	}
}

// A log written with another lc_messages than C or en_* cannot be
// interpreted: "duration:" and "statement:" are translated too. What gives
// a translation away is its shape, whatever the language: a severity word
// that is not one of the English ones, or a LOG message that starts like
// "duration: 0.123 ms" or "statement: SELECT" in other words.

// ForeignSeverity returns the translated severity word at the start of b
// ("FEHLER:  ...", "エラー:  ..."), or "" when b does not start with one.
func ForeignSeverity(b []byte) string {
	n := min(len(b), 64)
	i := bytes.Index(b[:n], []byte(":  "))
	if i <= 0 {
		return ""
	}
	w := b[:i]
	if !severityShaped(w) || SeverityClass(w) != 0 {
		return ""
	}
	return string(w)
}

// severityShaped reports whether w looks like a severity word in some
// language: one word, no digits, and in capitals or in a script without
// ASCII letters ("ERREUR", "ОШИБКА", "오류").
func severityShaped(w []byte) bool {
	if len(w) < 2 || !utf8.Valid(w) {
		return false
	}
	ascii := true
	for _, c := range w {
		switch {
		case c >= 0x80:
			ascii = false
		case c >= 'A' && c <= 'Z':
		default:
			return false // lower case, a digit, a space or punctuation
		}
	}
	return !ascii || len(w) >= 3
}

// foreignSeverityIn finds a translated severity anywhere in a line whose
// prefix is not known: the word before the first ":  ".
func foreignSeverityIn(line []byte) (string, bool) {
	n := min(len(line), 256)
	i := bytes.Index(line[:n], []byte(":  "))
	if i <= 0 {
		return "", false
	}
	j := i
	for j > 0 && line[j-1] != ' ' && line[j-1] != ']' && line[j-1] != ':' && line[j-1] != '-' && line[j-1] != '|' {
		j--
	}
	if w := ForeignSeverity(line[j:]); w != "" {
		return w, true
	}
	return "", false
}

// sqlStarts are the first words of statements, for telling a translated
// "statement: SELECT ..." by its shape.
var sqlStarts = []string{"SELECT", "INSERT", "UPDATE", "DELETE", "BEGIN", "COMMIT", "ROLLBACK", "WITH", "SET", "SHOW",
	"CREATE", "DROP", "ALTER", "COPY", "VALUES", "TRUNCATE", "EXPLAIN", "CALL", "DO", "FETCH", "DECLARE", "LOCK",
	"GRANT", "REVOKE", "VACUUM", "ANALYZE", "PREPARE", "EXECUTE", "DEALLOCATE", "START", "END", "SAVEPOINT", "RELEASE", "TABLE"}

// TranslatedMessage returns the first word of a LOG message that is
// shaped like one the reader knows, in another language: "Dauer: 0.123
// ms", "durée : 0.123 ms", "Anweisung: SELECT 1", "продолжительность: ...".
// It returns "" for English messages and for messages of no known shape.
func TranslatedMessage(msg string) string {
	colon := strings.IndexByte(msg[:min(len(msg), 64)], ':')
	if colon <= 0 {
		return ""
	}
	head := strings.TrimRight(msg[:colon], " ")
	if head == "" || head == "duration" || head == "statement" || !utf8.ValidString(head) {
		return ""
	}
	rest := strings.TrimLeft(msg[colon+1:], " ")
	// "Dauer: 0.123 ms", "期間: 0.230 ミリ秒": a duration, "%.3f" then a unit.
	d := 0
	for d < len(rest) && rest[d] >= '0' && rest[d] <= '9' {
		d++
	}
	if d > 0 && len(rest) >= d+5 && (rest[d] == '.' || rest[d] == ',') && isDigit(rest[d+1]) && isDigit(rest[d+2]) && isDigit(rest[d+3]) && rest[d+4] == ' ' {
		return head
	}
	// "Anweisung: SELECT 1": one word, then a statement.
	if !strings.Contains(head, " ") {
		for _, k := range sqlStarts {
			if len(rest) >= len(k) && strings.EqualFold(rest[:len(k)], k) && (len(rest) == len(k) || !isAlnum(rest[len(k)])) {
				return head
			}
		}
	}
	return ""
}
