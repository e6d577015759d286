package capturerun

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The admin interface is HTTP with JSON bodies (docs/capture-admin.md):
//
//	POST /recordings            StartRequest → 201 Status; 409 ErrorBody with the running one's id
//	GET  /recordings            → 200 List
//	POST /recordings/{id}/stop  → 200 Status; 404 for an unknown id
//
// With a token, every request carries "Authorization: Bearer TOKEN"
// (401 otherwise).

// StartRequest is POST /recordings' body.
type StartRequest struct {
	// Out is the capture directory, on the proxy's machine.
	Out string `json:"out"`
	// Duration is a Go duration ("1h", "90m"); empty: unbounded.
	Duration string `json:"duration,omitempty"`
	// MaxSize is a size ("10GB", "512MiB"; see ParseSize); empty:
	// unbounded.
	MaxSize string `json:"max_size,omitempty"`
}

// List is GET /recordings' answer.
type List struct {
	// Current is the id of the recording under way, empty when none.
	Current string `json:"current"`
	// SessionsOpen counts the sessions the proxy relays now, recorded
	// or not.
	SessionsOpen int64    `json:"sessions_open"`
	Recordings   []Status `json:"recordings"`
}

// ErrorBody is the answer to a request refused.
type ErrorBody struct {
	Error string `json:"error"`
	// ID is the recording under way, on a 409.
	ID string `json:"id,omitempty"`
}

// Handler is the admin interface on recs. A non-empty token is required
// as a bearer token on every request. New recordings use fileSize for
// their files' size (0: the default).
func Handler(recs *Recordings, token string, fileSize int64) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /recordings", func(w http.ResponseWriter, r *http.Request) {
		var req StartRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, ErrorBody{Error: "the body is not a recording: " + err.Error()})
			return
		}
		opts, err := req.options()
		if err != nil {
			writeJSON(w, http.StatusBadRequest, ErrorBody{Error: err.Error()})
			return
		}
		opts.FileSize = fileSize
		st, err := recs.Start(r.Context(), opts)
		var busy *BusyError
		switch {
		case errors.As(err, &busy):
			writeJSON(w, http.StatusConflict, ErrorBody{Error: err.Error(), ID: busy.ID})
		case errors.Is(err, ErrShuttingDown):
			writeJSON(w, http.StatusServiceUnavailable, ErrorBody{Error: err.Error()})
		case err != nil:
			// A directory that holds a capture, or cannot be created.
			writeJSON(w, http.StatusBadRequest, ErrorBody{Error: err.Error()})
		default:
			writeJSON(w, http.StatusCreated, st)
		}
	})
	mux.HandleFunc("GET /recordings", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, List{Current: recs.Current(), SessionsOpen: recs.p.Stats().SessionsOpen, Recordings: recs.List()})
	})
	mux.HandleFunc("POST /recordings/{id}/stop", func(w http.ResponseWriter, r *http.Request) {
		st, err := recs.Stop(r.PathValue("id"))
		if errors.Is(err, ErrUnknownRecording) {
			writeJSON(w, http.StatusNotFound, ErrorBody{Error: err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, st)
	})
	if token == "" {
		return mux
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="pgrehearse capture"`)
			writeJSON(w, http.StatusUnauthorized, ErrorBody{Error: "a bearer token is required (the proxy's admin token file)"})
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func (req StartRequest) options() (StartOptions, error) {
	opts := StartOptions{Out: req.Out}
	if strings.TrimSpace(req.Out) == "" {
		return opts, errors.New(`a recording needs "out", its capture directory`)
	}
	if req.Duration != "" {
		d, err := time.ParseDuration(req.Duration)
		if err != nil || d < 0 {
			return opts, fmt.Errorf(`"duration": %q is not a duration (e.g. "1h", "90m")`, req.Duration)
		}
		opts.Duration = d
	}
	n, err := ParseSize(req.MaxSize)
	if err != nil {
		return opts, fmt.Errorf(`"max_size": %v`, err)
	}
	opts.MaxSize = n
	return opts, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// ErrAdminToken is returned by Run when the admin interface would listen
// beyond loopback without a token.
var ErrAdminToken = errors.New("capture: the admin interface listens beyond loopback: it needs a token")

// serveAdmin serves Handler on addr (a bare ":port" is loopback only)
// and returns the address it listens on and a function that stops it.
// An address that is not loopback needs a token: whoever reaches the
// interface chooses where the proxy writes and what it records.
func serveAdmin(addr, token string, recs *Recordings, fileSize int64) (string, func(), error) {
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("capture: admin interface: %w", err)
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); ok && !ta.IP.IsLoopback() && token == "" {
		ln.Close()
		return "", nil, fmt.Errorf("%w (%s)", ErrAdminToken, ln.Addr())
	}
	srv := &http.Server{Handler: Handler(recs, token, fileSize), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}, nil
}

// ParseSize reads a size: a number of bytes with an optional unit (kB,
// MB, GB, TB: powers of 1000; KiB, MiB, GiB, TiB: of 1024). Empty is 0.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	i := len(s)
	for i > 0 && (s[i-1] < '0' || s[i-1] > '9') {
		i--
	}
	num, unit := strings.TrimSpace(s[:i]), strings.TrimSpace(s[i:])
	mult := map[string]float64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}[strings.ToUpper(unit)]
	if mult == 0 {
		return 0, fmt.Errorf("%q: unknown unit %q (kB, MB, GB, TB, KiB, MiB, GiB, TiB)", s, unit)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	// A float beyond int64 converts to anything: refuse it.
	if f*mult >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(f * mult), nil
}
