package proxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/capture"
)

// memSink keeps every record in memory, in the order Add was called.
type memSink struct {
	mu   sync.Mutex
	recs []capture.Record
}

func (s *memSink) Add(r capture.Record) bool {
	s.mu.Lock()
	s.recs = append(s.recs, r)
	s.mu.Unlock()
	return true
}

func (s *memSink) records() []capture.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]capture.Record(nil), s.recs...)
}

// sessions groups the records by session, each in the order added.
func (s *memSink) sessions() map[uint64][]capture.Record {
	m := map[uint64][]capture.Record{}
	for _, r := range s.records() {
		m[r.Session] = append(m[r.Session], r)
	}
	return m
}

// waitEnds polls until n sessions have a KindEnd, and returns the sessions.
func (s *memSink) waitEnds(t *testing.T, n int) map[uint64][]capture.Record {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m := s.sessions()
		ends := 0
		for _, recs := range m {
			for _, r := range recs {
				if r.Kind == capture.KindEnd {
					ends++
				}
			}
		}
		if ends >= n {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions ended after 30 s, want %d", ends, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkSessions asserts that every session opens with one KindStartup and
// closes with one KindEnd, and returns the end reasons.
func checkSessions(t *testing.T, m map[uint64][]capture.Record) map[uint64]capture.EndReason {
	t.Helper()
	ends := map[uint64]capture.EndReason{}
	for id, recs := range m {
		if recs[0].Kind != capture.KindStartup {
			t.Errorf("session %d opens with %v, want startup", id, recs[0].Kind)
		}
		if last := recs[len(recs)-1]; last.Kind != capture.KindEnd {
			t.Errorf("session %d closes with %v, want end", id, last.Kind)
		} else {
			ends[id] = last.End
		}
		var starts, endsN int
		for _, r := range recs {
			switch r.Kind {
			case capture.KindStartup:
				starts++
			case capture.KindEnd:
				endsN++
			}
		}
		if starts != 1 || endsN != 1 {
			t.Errorf("session %d has %d startups and %d ends, want 1 and 1", id, starts, endsN)
		}
	}
	return ends
}

type running struct {
	p     *Proxy
	sink  *memSink
	addr  string
	port  int
	stop  func() error
	warns func() []string
}

// startProxy serves a proxy on a loopback port until the test ends.
func startProxy(t testing.TB, cfg Config) *running {
	t.Helper()
	sink := &memSink{}
	if cfg.Sink == nil {
		cfg.Sink = sink
	}
	var mu sync.Mutex
	var warns []string
	cfg.Warn = func(s string) {
		mu.Lock()
		warns = append(warns, s)
		mu.Unlock()
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	var once sync.Once
	var serveErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case serveErr = <-done:
			case <-time.After(30 * time.Second):
				serveErr = errors.New("Serve did not return 30 s after its context was canceled")
			}
		})
		return serveErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	return &running{
		p: p, sink: sink, addr: ln.Addr().String(), port: ln.Addr().(*net.TCPAddr).Port, stop: stop,
		warns: func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), warns...) },
	}
}

// dsn is a connection string to the proxy.
func (r *running) dsn(user, db, extra string) string {
	return "host=127.0.0.1 port=" + strconv.Itoa(r.port) + " user=" + user + " dbname=" + db + " " + extra
}

// selfSigned returns a certificate and key for 127.0.0.1 and localhost,
// in PEM, and as a tls.Certificate.
func selfSigned(t testing.TB) (certPEM, keyPEM []byte, cert tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	cert, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM, cert
}

// poll calls cond until it holds, failing t after 30 s.
func poll(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// functionalCase marks t as a functional case, which measures no time:
// it asserts counts, errors, messages, results or files, with generous
// time bounds or none. Go runs such tests in parallel (at most -parallel
// at once, GOMAXPROCS by default) and only after every sequential test
// of the package has finished: the tests that time real servers (pacing,
// lag, throughput, overhead, comparisons), left sequential, still run
// alone, undisturbed.
func functionalCase(t *testing.T) {
	t.Helper()
	t.Parallel()
}
