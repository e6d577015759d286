package capture

// Sink takes the records of a capture as the proxy sees them, in each
// session's order. Add must never block the caller: the proxy forwards an
// application's traffic and calls Add on its way, so a Sink that cannot keep
// up drops the record, counts it, and returns false (the capture then holds
// a KindGap where it lost records). Add takes ownership of r.Msg and
// r.Params: the caller does not touch them afterwards. Add is safe from any
// goroutine.
type Sink interface {
	Add(r Record) bool
}
