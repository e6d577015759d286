package capture

import (
	"errors"
	"sync"
	"time"
	"unsafe"
)

const (
	defaultQueue         = 1 << 20
	defaultQueueBytes    = 64 << 20
	defaultFlushInterval = 100 * time.Millisecond
	// wakeRecords and wakeBytes are the queue at which Add wakes the
	// writer before its next tick (or half the queue's bounds, when
	// smaller). Below them the records wait for the tick, at most
	// FlushInterval, as they would in the writer's buffer anyway: waking
	// the writer for each record costs the relay a goroutine switch per
	// message (issue 47 item 4).
	wakeRecords = 1024
	wakeBytes   = 1 << 20
	// recordCost is what a queued record holds besides its message and
	// parameters: the Record value itself (216 bytes on amd64).
	recordCost = int64(unsafe.Sizeof(Record{}))
)

// RecorderOptions configures a Recorder. The zero value is usable.
type RecorderOptions struct {
	// Queue is how many records may wait for the writer; 0 means
	// 1,048,576. QueueBytes bounds the memory they hold (the Record
	// values, their messages and parameters); 0 means 64 MiB. The queue
	// grows as records come, up to whichever bound comes first, so that
	// a burst (a COPY of a hundred thousand rows is as many CopyData
	// messages) waits for the disk instead of being dropped; twice that
	// at most is held, the queue filling and the batch being written.
	Queue      int
	QueueBytes int64
	// FlushInterval bounds how long a written record may wait in the
	// writer's buffer before a reader can see it; 0 means 100 ms.
	FlushInterval time.Duration
}

// RecorderStats are a Recorder's counters, for Prometheus.
type RecorderStats struct {
	// Records counts the records in the files (KindGap records
	// included); Bytes is the size of the files.
	Records, Bytes int64
	// Dropped counts the records Add took or refused that will never
	// be in the files.
	Dropped int64
	// Queued is how many records wait for the writer.
	Queued int
	// Lag is the age of the oldest record waiting.
	Lag time.Duration
	// Stopped says why recording stopped early (the writer failed);
	// empty while recording.
	Stopped Reason
}

// Recorder is the Sink the proxy records through: Add puts a record on a
// bounded queue and returns at once, and one goroutine writes the queue
// to a Writer. When the queue is full Add drops the record and counts it
// for its session; the session's next record that fits is preceded by a
// KindGap record saying how many were lost, so the gap sits where they
// were. When the writer fails (a full disk, MaxSize) recording stops:
// every later Add drops and counts, and still returns at once.
type Recorder struct {
	w        *Writer
	interval time.Duration

	mu       sync.Mutex
	maxQueue int
	maxBytes int64
	// wakeRecords and wakeBytes: the queue at which Add wakes the writer.
	wakeRecords int
	wakeBytes   int64
	queuedBytes int64    // the cost of the records in queue
	queue       []Record // Add appends; the writing goroutine swaps it out
	spare       []Record
	queuedAt    time.Time      // when queue[0] was added
	gaps        map[uint64]gap // dropped records not yet in a queued KindGap
	dropped     int64
	batch       int       // records in the batch being written
	batchAt     time.Time // when its first record was added
	stopped     Reason
	stopErr     error
	closed      bool

	wake     chan struct{}
	closing  chan struct{}
	done     chan struct{}
	closeErr error
}

var _ Sink = (*Recorder)(nil)

// gap is what a session lost since its last record queued: how many
// records, and the time of the last one, which the KindGap record takes.
type gap struct {
	n    int64
	time int64
}

func (g gap) record(session uint64) Record {
	return Record{Kind: KindGap, Session: session, Time: g.time, Dropped: g.n}
}

// NewRecorder starts the goroutine that writes to w. The Recorder owns w
// from now on: Close closes it.
func NewRecorder(w *Writer, opts RecorderOptions) *Recorder {
	if opts.Queue <= 0 {
		opts.Queue = defaultQueue
	}
	if opts.QueueBytes <= 0 {
		opts.QueueBytes = defaultQueueBytes
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = defaultFlushInterval
	}
	rc := &Recorder{
		w:           w,
		interval:    opts.FlushInterval,
		maxQueue:    opts.Queue,
		maxBytes:    opts.QueueBytes,
		wakeRecords: max(1, min(wakeRecords, opts.Queue/2)),
		wakeBytes:   max(1, min(wakeBytes, opts.QueueBytes/2)),
		queue:       make([]Record, 0, min(opts.Queue, 4096)),
		spare:       make([]Record, 0, min(opts.Queue, 4096)),
		gaps:        make(map[uint64]gap),
		wake:        make(chan struct{}, 1),
		closing:     make(chan struct{}),
		done:        make(chan struct{}),
	}
	go rc.run()
	return rc
}

// Add queues r for writing and reports whether it did; it never blocks
// on the writer. It takes ownership of r.Msg and r.Params.
func (rc *Recorder) Add(r Record) bool {
	rc.mu.Lock()
	if rc.closed || rc.stopped != "" {
		rc.dropped++
		rc.mu.Unlock()
		return false
	}
	var g gap
	if len(rc.gaps) > 0 {
		g = rc.gaps[r.Session]
	}
	need := 1
	if g.n > 0 {
		need = 2
	}
	cost := r.cost()
	if len(rc.queue)+need > rc.maxQueue || rc.queuedBytes+cost > rc.maxBytes {
		rc.gaps[r.Session] = gap{g.n + 1, r.Time}
		rc.dropped++
		rc.mu.Unlock()
		return false
	}
	if len(rc.queue) == 0 {
		rc.queuedAt = time.Now()
	}
	if g.n > 0 {
		rc.queue = append(rc.queue, g.record(r.Session))
		delete(rc.gaps, r.Session)
	}
	rc.queue = append(rc.queue, r)
	rc.queuedBytes += cost
	if len(rc.queue) >= rc.wakeRecords || rc.queuedBytes >= rc.wakeBytes {
		select {
		case rc.wake <- struct{}{}:
		default:
		}
	}
	rc.mu.Unlock()
	return true
}

// cost is the memory a queued record holds.
func (r *Record) cost() int64 {
	n := recordCost + int64(len(r.Msg))
	for _, p := range r.Params {
		n += int64(len(p.Name) + len(p.Value))
	}
	return n
}

// full says whether the queue is at one of its bounds.
func (rc *Recorder) full() bool {
	return len(rc.queue) >= rc.maxQueue || rc.queuedBytes >= rc.maxBytes
}

// Stats returns the recorder's counters; safe from any goroutine.
func (rc *Recorder) Stats() RecorderStats {
	ws := rc.w.Stats()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	st := RecorderStats{
		Records: ws.Records,
		Bytes:   ws.Bytes,
		Dropped: rc.dropped + ws.Lost,
		Queued:  len(rc.queue) + rc.batch,
		Stopped: rc.stopped,
	}
	switch {
	case rc.batch > 0:
		st.Lag = time.Since(rc.batchAt)
	case len(rc.queue) > 0:
		st.Lag = time.Since(rc.queuedAt)
	}
	return st
}

// Err returns the writer's failure that stopped recording, or nil.
func (rc *Recorder) Err() error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.stopErr
}

// Close stops taking records (a later Add drops and counts), writes what
// is queued and the KindGap records still owed, and closes the writer,
// which writes the manifest. It returns the writer's Close error.
func (rc *Recorder) Close() error {
	rc.mu.Lock()
	if rc.closed {
		rc.mu.Unlock()
		return errors.New("capture: Recorder closed twice")
	}
	rc.closed = true
	rc.mu.Unlock()
	close(rc.closing)
	<-rc.done
	return rc.closeErr
}

func (rc *Recorder) run() {
	defer close(rc.done)
	tick := time.NewTicker(rc.interval)
	defer tick.Stop()
	for {
		select {
		case <-rc.wake:
			rc.drain(false)
		case <-tick.C:
			rc.drain(false)
			if len(rc.w.raw) > 0 && rc.w.err == nil {
				if err := rc.w.Flush(); err != nil {
					rc.stop(err, nil)
				}
			}
		case <-rc.closing:
			rc.drain(true)
			rc.mu.Lock()
			end := EndInfo{Dropped: rc.dropped}
			rc.mu.Unlock()
			rc.closeErr = rc.w.Close(end)
			return
		}
	}
}

// drain writes batches until the queue is empty. Gaps owed to sessions
// that added nothing since their drop are queued once there is room
// (all of them when closing), so none waits for the session's next
// record forever.
func (rc *Recorder) drain(closing bool) {
	for {
		rc.mu.Lock()
		for s, g := range rc.gaps {
			if !closing && rc.full() {
				break
			}
			if rc.stopped == "" {
				rc.queue = append(rc.queue, g.record(s))
			}
			delete(rc.gaps, s)
		}
		batch := rc.queue
		rc.queue, rc.spare = rc.spare[:0], nil
		rc.queuedBytes = 0
		rc.batch, rc.batchAt = len(batch), rc.queuedAt
		rc.mu.Unlock()
		if len(batch) == 0 {
			rc.mu.Lock()
			rc.spare = batch
			rc.mu.Unlock()
			return
		}
		rc.write(batch)
		clear(batch) // let the messages go
		rc.mu.Lock()
		rc.spare = batch[:0]
		rc.batch = 0
		rc.mu.Unlock()
	}
}

func (rc *Recorder) write(batch []Record) {
	for i := range batch {
		if rc.w.err != nil {
			rc.stop(rc.w.err, batch[i:])
			return
		}
		r := &batch[i]
		err := rc.w.Write(r)
		switch {
		case err == nil:
		case errors.Is(err, ErrRecordTooLarge):
			rc.mu.Lock()
			rc.dropped++
			rc.mu.Unlock()
			gap := Record{Kind: KindGap, Session: r.Session, Time: r.Time, Dropped: 1}
			if err := rc.w.Write(&gap); err != nil {
				rc.stop(err, batch[i+1:])
				return
			}
		default:
			rc.stop(err, batch[i:])
			return
		}
	}
}

// stop records the writer's failure; the records of the batch it did not
// write count as dropped, except KindGap records, which stand for records
// counted already.
func (rc *Recorder) stop(err error, lost []Record) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.stopped == "" {
		rc.stopped, rc.stopErr = rc.w.reason, err
	}
	for i := range lost {
		if lost[i].Kind != KindGap {
			rc.dropped++
		}
	}
}
