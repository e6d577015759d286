package proxy_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/proxy"
)

// records is a capture.Sink that keeps what it is given, in memory. A
// real capture hands the proxy a capture.Recorder, which writes the
// records to a capture's files.
type records struct {
	mu sync.Mutex
	rs []capture.Record
}

func (s *records) Add(r capture.Record) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rs = append(s.rs, r)
	return true
}

// standIn plays PostgreSQL for the example, for one session: it lets the
// client in without a password, answers one query and waits for the
// client's Terminate.
func standIn(ln net.Listener) {
	conn, err := ln.Accept()
	if err != nil {
		return
	}
	defer conn.Close()
	be := pgproto3.NewBackend(conn, conn)
	if _, err := be.ReceiveStartupMessage(); err != nil {
		return
	}
	be.Send(&pgproto3.AuthenticationOk{})
	be.Send(&pgproto3.BackendKeyData{ProcessID: 4242, SecretKey: []byte{0, 0, 0, 7}})
	be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
	if be.Flush() != nil {
		return
	}
	for {
		msg, err := be.Receive()
		if err != nil {
			return
		}
		switch msg.(type) {
		case *pgproto3.Query:
			be.Send(&pgproto3.RowDescription{Fields: []pgproto3.FieldDescription{{Name: []byte("n"), DataTypeOID: 23, DataTypeSize: 4, TypeModifier: -1}}})
			be.Send(&pgproto3.DataRow{Values: [][]byte{[]byte("1")}})
			be.Send(&pgproto3.CommandComplete{CommandTag: []byte("SELECT 1")})
			be.Send(&pgproto3.ReadyForQuery{TxStatus: 'I'})
			if be.Flush() != nil {
				return
			}
		case *pgproto3.Terminate:
			return
		}
	}
}

// untilReady reads the server's messages through the proxy up to
// ReadyForQuery and returns the last CommandComplete's tag.
func untilReady(fe *pgproto3.Frontend) (tag string, err error) {
	for {
		msg, err := fe.Receive()
		if err != nil {
			return "", err
		}
		switch m := msg.(type) {
		case *pgproto3.CommandComplete:
			tag = string(m.CommandTag)
		case *pgproto3.ErrorResponse:
			return "", fmt.Errorf("%s: %s", m.Code, m.Message)
		case *pgproto3.ReadyForQuery:
			return tag, nil
		}
	}
}

// Record an application's session through the proxy: the proxy relays
// every byte to the upstream server and hands a record of each message to
// its sink. A stand-in answers for PostgreSQL here, so that the example
// needs no server.
func Example() {
	upstream, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer upstream.Close()
	go standIn(upstream)

	sink := &records{}
	p, err := proxy.New(proxy.Config{
		Upstream: "host=127.0.0.1 port=" + fmt.Sprint(upstream.Addr().(*net.TCPAddr).Port) + " sslmode=disable",
		Sink:     sink,
		// Once Serve's context is done, wait for the open sessions to
		// end by themselves (up to a minute) before closing them.
		Drain: time.Minute,
	})
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, ln) }()

	// The application: connect through the proxy, run a query, leave.
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	fe := pgproto3.NewFrontend(conn, conn)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
		Parameters: map[string]string{"user": "shop", "database": "shop"}})
	if err := fe.Flush(); err != nil {
		panic(err)
	}
	if _, err := untilReady(fe); err != nil {
		panic(err)
	}
	fe.Send(&pgproto3.Query{String: "SELECT 1 AS n"})
	if err := fe.Flush(); err != nil {
		panic(err)
	}
	tag, err := untilReady(fe)
	if err != nil {
		panic(err)
	}
	fmt.Println("the application got:", tag)
	fe.Send(&pgproto3.Terminate{})
	if err := fe.Flush(); err != nil {
		panic(err)
	}
	conn.Close()

	stop()
	if err := <-served; err != nil {
		panic(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for _, r := range sink.rs {
		fmt.Printf("session %d %-8s", r.Session, r.Kind)
		switch r.Kind {
		case capture.KindStartup:
			fmt.Printf(" %d params, backend pid %d", len(r.Params), r.BackendPID)
		case capture.KindFrontend:
			fmt.Printf(" %q, %d bytes", r.Msg[0], len(r.Msg))
		case capture.KindComplete:
			fmt.Printf(" %s, row digest kept %t", r.Tag, r.HasDigest)
		case capture.KindReady:
			fmt.Printf(" %c", r.TxStatus)
		case capture.KindEnd:
			fmt.Printf(" %s", r.End)
		}
		fmt.Println()
	}
	st := p.Stats()
	fmt.Printf("sessions %d, open %d\n", st.SessionsTotal, st.SessionsOpen)
	// Output:
	// the application got: SELECT 1
	// session 1 startup  2 params, backend pid 4242
	// session 1 ready    I
	// session 1 frontend 'Q', 19 bytes
	// session 1 complete SELECT 1, row digest kept true
	// session 1 ready    I
	// session 1 frontend 'X', 5 bytes
	// session 1 end      terminate
	// sessions 1, open 0
}

// New refuses an upstream connection string it cannot read, and its
// message never quotes the string, which may hold a password.
func ExampleNew() {
	_, err := proxy.New(proxy.Config{Upstream: "host=db port=not-a-port password=secret"})
	fmt.Println(err)
	// Output: proxy: invalid upstream connection string
}
