package logread

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"
)

// Severity words as the server writes them with lc_messages = 'C'. The
// secondary ones (DETAIL, HINT, ...) continue the message before them.
const (
	sevPrimary   = 1
	sevSecondary = 2
)

func severityClass(w []byte) int {
	switch string(w) {
	case "LOG", "ERROR", "FATAL", "PANIC", "WARNING", "NOTICE", "INFO",
		"DEBUG", "DEBUG1", "DEBUG2", "DEBUG3", "DEBUG4", "DEBUG5":
		return sevPrimary
	case "DETAIL", "HINT", "QUERY", "CONTEXT", "LOCATION", "STATEMENT":
		return sevSecondary
	}
	return 0
}

// splitSeverity splits "LOG:  message" into the severity word and the
// message. The server writes two spaces after the colon.
func splitSeverity(b []byte) (sev, msg []byte, ok bool) {
	n := len(b)
	if n > 12 {
		n = 12
	}
	i := bytes.IndexByte(b[:n], ':')
	if i <= 0 || severityClass(b[:i]) == 0 {
		return nil, nil, false
	}
	msg = b[i+1:]
	for k := 0; k < 2 && len(msg) > 0 && msg[0] == ' '; k++ {
		msg = msg[1:]
	}
	return b[:i], msg, true
}

// severity is a severity word as a number, for the stderr reader's hot
// path. The secondary ones come last, from sevDetail on.
type severity uint8

const (
	sevNone severity = iota
	sevLog
	sevError
	sevFatal
	sevPanic
	sevWarning
	sevNotice
	sevInfo
	sevDebug
	sevDebug1
	sevDebug2
	sevDebug3
	sevDebug4
	sevDebug5
	sevDetail
	sevHint
	sevQuery
	sevContext
	sevLocation
	sevStatement
)

var severityWords = [...]string{"", "LOG", "ERROR", "FATAL", "PANIC", "WARNING", "NOTICE", "INFO",
	"DEBUG", "DEBUG1", "DEBUG2", "DEBUG3", "DEBUG4", "DEBUG5",
	"DETAIL", "HINT", "QUERY", "CONTEXT", "LOCATION", "STATEMENT"}

func severityOf(w []byte) severity {
	switch string(w) {
	case "LOG":
		return sevLog
	case "ERROR":
		return sevError
	case "FATAL":
		return sevFatal
	case "PANIC":
		return sevPanic
	case "WARNING":
		return sevWarning
	case "NOTICE":
		return sevNotice
	case "INFO":
		return sevInfo
	case "DEBUG":
		return sevDebug
	case "DEBUG1":
		return sevDebug1
	case "DEBUG2":
		return sevDebug2
	case "DEBUG3":
		return sevDebug3
	case "DEBUG4":
		return sevDebug4
	case "DEBUG5":
		return sevDebug5
	case "DETAIL":
		return sevDetail
	case "HINT":
		return sevHint
	case "QUERY":
		return sevQuery
	case "CONTEXT":
		return sevContext
	case "LOCATION":
		return sevLocation
	case "STATEMENT":
		return sevStatement
	}
	return sevNone
}

// Little-endian words of the severities most lines have, with the colon
// and the first space.
var (
	wordLog    = binary.LittleEndian.Uint64([]byte("LOG:  \x00\x00")) & 0xffffffffffff
	wordDetail = binary.LittleEndian.Uint64([]byte("DETAIL: "))
	wordError  = binary.LittleEndian.Uint64([]byte("ERROR:  "))
)

// splitSeverityFast is splitSeverity with the severity as a number, and
// the common words recognized by one or two compares; sevNone when b
// does not start with a severity.
func splitSeverityFast(b []byte) (severity, []byte) {
	if len(b) >= 8 {
		w := binary.LittleEndian.Uint64(b)
		switch {
		case w&0xffffffffffff == wordLog:
			// "LOG:  duration: ..."
			return sevLog, b[6:]
		case w == wordDetail:
			// "DETAIL:  parameters: ..."
			msg := b[8:]
			if len(msg) > 0 && msg[0] == ' ' {
				msg = msg[1:]
			}
			return sevDetail, msg
		case w == wordError:
			return sevError, b[8:]
		}
	}
	sev, msg, ok := splitSeverity(b)
	if !ok {
		return sevNone, nil
	}
	return severityOf(sev), msg
}

// severityIndex returns where in b a severity word followed by ":  "
// starts, or -1: the end of a prefix whose last escape is free text.
func severityIndex(b []byte) int {
	off := 0
	for {
		i := bytes.Index(b[off:], []byte(":  "))
		if i < 0 {
			return -1
		}
		end := off + i
		start := end
		for start > 0 && b[start-1] >= 'A' && b[start-1] <= 'Z' || start > 0 && b[start-1] >= '0' && b[start-1] <= '9' {
			start--
		}
		if severityClass(b[start:end]) != 0 && (start == 0 || b[start-1] == ' ' || b[start-1] == ':' || b[start-1] == ']') {
			return start
		}
		off = end + 1
	}
}

// Severity words in the message translations the server ships. A log
// written with another lc_messages than C or en_* cannot be interpreted:
// "duration:" and "statement:" are translated too. Seeing one of these in
// the severity position is reported, never parsed into nothing.
var foreignSeverities = map[string]string{
	"FEHLER": "de", "WARNUNG": "de", "ANWEISUNG": "de", "TIPP": "de", "ZUSAMMENHANG": "de",
	"ERREUR": "fr", "ATTENTION": "fr", "INSTRUCTION": "fr", "ASTUCE": "fr", "CONTEXTE": "fr", "DÉTAIL": "fr",
	"SENTENCIA": "es", "SUGERENCIA": "es", "DETALLE": "es", "REGISTRO": "es", "CONTEXTO": "es/pt",
	"ERRO": "pt", "COMANDO": "pt", "DICA": "pt", "DETALHE": "pt", "AVISO": "es/pt",
	"ERRORE": "it", "ISTRUZIONE": "it", "DETTAGLI": "it", "SUGGERIMENTO": "it",
	"ОШИБКА": "ru", "ОПЕРАТОР": "ru", "ПОДРОБНОСТИ": "ru", "ПОДСКАЗКА": "ru", "СООБЩЕНИЕ": "ru", "ВАЖНО": "ru", "ПРЕДУПРЕЖДЕНИЕ": "ru",
	"エラー": "ja", "文": "ja", "詳細": "ja", "ヒント": "ja", "ログ": "ja",
	"错误": "zh", "语句": "zh", "详细信息": "zh", "提示": "zh", "日志": "zh",
	"BŁĄD": "pl", "POLECENIE": "pl", "SZCZEGÓŁY": "pl",
	"HATA": "tr", "KOMUT": "tr", "AYRINTI": "tr",
	"FOUT": "nl", "MELDING": "nl",
	"FEL": "sv", "SATS": "sv",
	"CHYBA": "cs", "PŘÍKAZ": "cs",
	"ПОМИЛКА": "uk", "ІНСТРУКЦІЯ": "uk",
	"오류": "ko", "명령": "ko",
}

// foreignSeverity reports the language of a translated severity word at
// the start of b ("FEHLER:  ..."), or "".
func foreignSeverity(b []byte) string {
	n := len(b)
	if n > 40 {
		n = 40
	}
	i := bytes.IndexByte(b[:n], ':')
	if i <= 0 || !utf8.Valid(b[:i]) {
		return ""
	}
	return foreignSeverities[string(b[:i])]
}

// Translated starts of the LOG messages that carry statements, for logs
// whose severity words happen to be the same as in English ("LOG").
var foreignLogStarts = []struct{ start, lang string }{
	{"Dauer: ", "de"}, {"Anweisung: ", "de"},
	{"durée : ", "fr"}, {"instruction : ", "fr"},
	{"duración: ", "es"}, {"sentencia: ", "es"},
	{"duração: ", "pt"}, {"comando: ", "pt"},
	{"durata: ", "it"}, {"istruzione: ", "it"},
	{"продолжительность: ", "ru"}, {"оператор: ", "ru"},
	{"czas trwania: ", "pl"},
	{"süre: ", "tr"},
}

func foreignLogMessage(msg []byte) string {
	for _, f := range foreignLogStarts {
		if bytes.HasPrefix(msg, []byte(f.start)) {
			return f.lang
		}
	}
	return ""
}
