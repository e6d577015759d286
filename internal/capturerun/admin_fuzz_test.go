package capturerun

import (
	"encoding/json"
	"testing"
)

// FuzzStartRequest: whatever body a client sends, reading it as a
// recording to start either fails with a reason or gives limits that are
// not negative (a negative size or duration would mean unbounded, or
// worse, to the writer).
func FuzzStartRequest(f *testing.F) {
	for _, seed := range []string{
		`{"out": "/captures/{start}", "duration": "1h", "max_size": "10GB"}`,
		`{"out": "x", "max_size": "1.5 MiB"}`,
		`{"out": "x", "max_size": "1e30GB"}`,
		`{"out": "x", "duration": "-1h"}`,
		`{"out": ""}`,
		`{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var req StartRequest
		if json.Unmarshal(body, &req) != nil {
			return
		}
		opts, err := req.options()
		if err != nil {
			if err.Error() == "" {
				t.Error("an error without a reason")
			}
			return
		}
		if opts.Out == "" || opts.Duration < 0 || opts.MaxSize < 0 {
			t.Errorf("%q read as %+v", body, opts)
		}
	})
}
