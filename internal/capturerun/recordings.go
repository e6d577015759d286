package capturerun

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/proxy"
)

// State is where a recording is in its life.
type State string

const (
	// StateRecording: sessions that start are recorded into it.
	StateRecording State = "recording"
	// StateFinalized: it stopped and its capture directory is
	// finalized (complete or not: see its manifest).
	StateFinalized State = "finalized"
)

// ErrBusy is returned (wrapped in a *BusyError) by a start while a
// recording is under way: one recording at a time.
var ErrBusy = errors.New("a recording is under way")

// BusyError names the recording under way that refused a start.
type BusyError struct{ ID string }

func (e *BusyError) Error() string {
	return fmt.Sprintf("recording %s is under way; stop it first (one recording at a time)", e.ID)
}

func (e *BusyError) Unwrap() error { return ErrBusy }

// ErrUnknownRecording is returned for a recording id the proxy never
// started.
var ErrUnknownRecording = errors.New("no such recording")

// ErrShuttingDown is returned by a start once the proxy is stopping.
var ErrShuttingDown = errors.New("the proxy is stopping: no new recording")

// StartOptions is one recording to start.
type StartOptions struct {
	// Out is the capture directory, created; it must not hold a capture
	// already. {start} in it is replaced by the UTC start time.
	Out string
	// Duration and MaxSize bound the recording (0: unbounded); when one
	// is reached the recording is finalized and the proxy relays on.
	Duration time.Duration
	MaxSize  int64
	// FileSize starts a new file of the capture at this size (0: the
	// writer's default).
	FileSize int64
	// StartState is the upstream's starting point, written into the
	// manifest; nil reads it through Config.MonitorDSN when set.
	StartState *capture.StartState
}

// Status is what a recording is and did: what GET /recordings answers.
// Its JSON field names are the admin interface's contract: add, never
// rename.
type Status struct {
	ID    string `json:"id"`
	Out   string `json:"out"`
	State State  `json:"state"`
	// Duration and MaxSize are its limits, 0 when unbounded.
	Duration string     `json:"duration,omitempty"`
	MaxSize  int64      `json:"max_size,omitempty"`
	Started  time.Time  `json:"started"`
	Stopped  *time.Time `json:"stopped,omitempty"`
	// StopReason says why it stopped; empty while recording.
	StopReason StopReason `json:"stop_reason,omitempty"`
	// Sessions counts the sessions recorded: from their start, or
	// from the middle (Resumed of them).
	Sessions int64 `json:"sessions"`
	// NotRecorded counts the sessions open when the recording started
	// that are not in it, and NotRecordedWhy by why (a session whose
	// state the proxy could not keep, one never idle while it
	// recorded): they are relayed, but none of their statements is in
	// this capture.
	NotRecorded    int64            `json:"sessions_not_recorded"`
	NotRecordedWhy map[string]int64 `json:"sessions_not_recorded_by_reason,omitempty"`
	// Resumed counts the sessions open when the recording started that
	// it took up from the middle, with their state (docs/capture-format.md):
	// an idle one at once, one inside a transaction or with a request in
	// flight (ResumedLate) at its next idle point, the messages it sent
	// before counted in SkippedBeforeRecording, by why it was not idle.
	// Waiting are still waiting for their idle point.
	Resumed                int64            `json:"sessions_resumed,omitempty"`
	ResumedLate            int64            `json:"sessions_resumed_late,omitempty"`
	Waiting                int64            `json:"sessions_waiting_for_idle,omitempty"`
	SkippedBeforeRecording map[string]int64 `json:"messages_skipped_before_recording,omitempty"`
	// NotResumedReason is why the first session whose state the proxy
	// could not keep was left out.
	NotResumedReason string `json:"not_resumed_reason,omitempty"`
	// OpenAtEnd counts the sessions recorded as open: relayed still
	// when the recording stopped.
	OpenAtEnd int64 `json:"sessions_open_at_end"`
	// Records, Bytes and Dropped are the recorder's counters while it
	// records, the manifest's once finalized.
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
	Dropped int64 `json:"dropped"`
	// Complete, Reason and Error are the manifest's, once finalized.
	Complete bool           `json:"complete"`
	Reason   capture.Reason `json:"reason,omitempty"`
	Error    string         `json:"error,omitempty"`
}

// recording is one recording: a Recorder attached to the proxy from its
// start to its stop.
type recording struct {
	id   string
	opts StartOptions
	w    *capture.Writer
	rec  *capture.Recorder
	// stop is closed once the recording is finalized, to end its watch.
	stop chan struct{}

	// Guarded by Recordings.mu.
	status   Status
	manifest capture.Manifest
	recStats capture.RecorderStats
}

// Recordings starts, watches and stops the recordings of one proxy, one
// at a time. Its methods are safe from any goroutine; the admin
// interface calls them.
type Recordings struct {
	p         *proxy.Proxy
	queue     int
	warn      func(string)
	finalized func(*recording)
	// monitorDSN reads each recording's starting point (StartState).
	monitorDSN string
	countBelow int64

	mu  sync.Mutex
	cur *recording
	// lost is the last recording finalized at its size limit or on its
	// writer's failure while the proxy relays on; what the proxy relays
	// until it stops or the next recording starts is lost to it, and
	// counted in its manifest's dropped (settleLost). lostFrom is the
	// proxy's Unrecorded when it was finalized.
	lost     *recording
	lostFrom int64
	all      []*recording
	closed   bool
	// starting is the id of a start under way (Start, reserve), which
	// reads the starting point without holding mu.
	starting string
	finalize sync.Mutex // one finalization at a time, outside mu
}

func newRecordings(p *proxy.Proxy, cfg Config, finalized func(*recording)) *Recordings {
	return &Recordings{p: p, queue: cfg.Queue, warn: cfg.Warn, finalized: finalized, monitorDSN: cfg.MonitorDSN, countBelow: cfg.CountBelow}
}

// Start starts a recording: from now on, every session that starts is
// recorded into opts.Out, and every session open now is taken up from
// the middle (an idle one before Start returns, so that everything it
// sends afterwards is in the recording). It refuses with a *BusyError
// while another records or starts, and with ErrShuttingDown once the
// proxy is stopping. No connection is touched. ctx bounds the reading of
// the starting point (Config.MonitorDSN); rs.mu is not held meanwhile,
// so that listing the recordings does not wait for the upstream.
func (rs *Recordings) Start(ctx context.Context, opts StartOptions) (Status, error) {
	if opts.Out == "" {
		return Status{}, errors.New("capture: a recording needs an output directory")
	}
	if opts.Duration < 0 || opts.MaxSize < 0 || opts.FileSize < 0 {
		return Status{}, errors.New("capture: duration, max size and file size cannot be negative")
	}
	id, err := rs.reserve()
	if err != nil {
		return Status{}, err
	}
	defer rs.unreserve()
	now := time.Now()
	opts.Out = strings.ReplaceAll(opts.Out, "{start}", now.UTC().Format("20060102T150405Z"))
	if opts.StartState == nil && rs.monitorDSN != "" {
		st, err := StartState(ctx, rs.monitorDSN, rs.countBelow)
		if err != nil {
			return Status{}, err
		}
		opts.StartState = st
	}
	w, err := capture.Create(opts.Out, capture.WriterOptions{Start: now, MaxSize: opts.MaxSize, FileSize: opts.FileSize, StartState: opts.StartState})
	if err != nil {
		return Status{}, err
	}
	r := &recording{
		id:   id,
		opts: opts,
		w:    w,
		rec:  capture.NewRecorder(w, capture.RecorderOptions{Queue: rs.queue}),
		stop: make(chan struct{}),
	}
	r.status = Status{ID: r.id, Out: opts.Out, State: StateRecording, MaxSize: opts.MaxSize, Started: now}
	if opts.Duration > 0 {
		r.status.Duration = opts.Duration.String()
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closed {
		// The proxy began stopping while the starting point was read.
		r.rec.Close()
		return Status{}, ErrShuttingDown
	}
	// What the proxy relayed unrecorded up to now is lost to the
	// recording before, if one was lost at its limit.
	rs.settleLostLocked()
	// The sessions open now are taken up from the middle, or counted
	// as not recorded, in the proxy's Resumes.
	if _, err := rs.p.Attach(r.rec); err != nil {
		r.rec.Close()
		return Status{}, err
	}
	r.status.setResumes(rs.p.Resumes())
	rs.cur = r
	rs.all = append(rs.all, r)
	go rs.watch(r)
	return rs.statusLocked(r), nil
}

// reserve claims the next recording's id for a start under way: another
// start is refused with it until unreserve, and so is a start once the
// proxy is stopping.
func (rs *Recordings) reserve() (string, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	switch {
	case rs.closed:
		return "", ErrShuttingDown
	case rs.cur != nil:
		return "", &BusyError{ID: rs.cur.id}
	case rs.starting != "":
		return "", &BusyError{ID: rs.starting}
	}
	rs.starting = recordingID(len(rs.all) + 1)
	return rs.starting, nil
}

func (rs *Recordings) unreserve() {
	rs.mu.Lock()
	rs.starting = ""
	rs.mu.Unlock()
}

// Stop finalizes the recording id, if it still records, and returns its
// status. Stopping a finalized recording returns its status unchanged.
func (rs *Recordings) Stop(id string) (Status, error) {
	r := rs.byID(id)
	if r == nil {
		return Status{}, fmt.Errorf("%w: %q", ErrUnknownRecording, id)
	}
	rs.finish(r, StopRequested)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.statusLocked(r), nil
}

// List returns every recording this proxy started, oldest first.
func (rs *Recordings) List() []Status {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]Status, len(rs.all))
	for i, r := range rs.all {
		out[i] = rs.statusLocked(r)
	}
	return out
}

// Current returns the id of the recording under way, "" when none.
func (rs *Recordings) Current() string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.cur == nil {
		return ""
	}
	return rs.cur.id
}

// shutdown refuses new recordings and finalizes the one under way. Once
// it returns, every finalization and its callback are done.
func (rs *Recordings) shutdown(why StopReason) {
	rs.mu.Lock()
	rs.closed = true
	r := rs.cur
	rs.mu.Unlock()
	if r != nil {
		rs.finish(r, why)
	}
	rs.finalize.Lock()
	rs.finalize.Unlock()
}

// settleLost counts into the manifest of the recording lost at its limit
// what the proxy relayed unrecorded since; Run calls it once the proxy
// stopped.
func (rs *Recordings) settleLost() error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.settleLostLocked()
}

func (rs *Recordings) settleLostLocked() error {
	r := rs.lost
	if r == nil {
		return nil
	}
	rs.lost = nil
	n := rs.p.Unrecorded() - rs.lostFrom
	if n <= 0 {
		return nil
	}
	m, err := capture.AddDropped(r.opts.Out, n)
	if err != nil {
		// The manifest keeps the count of its finalization.
		return err
	}
	r.manifest = *m
	r.recStats.Dropped += n
	r.status.Dropped, r.status.Complete = m.Dropped, m.Complete
	return nil
}

// FirstID is the first recording's id: the capture into Config.Out when
// there is one, which Summary gives apart.
var FirstID = recordingID(1)

// recordingID names the n-th recording of a proxy.
func recordingID(n int) string { return "r" + strconv.Itoa(n) }

// totals are the recorders' counters summed over every recording, for
// the metrics, which must not go back when a recording ends; Lag and
// Queued are the recording under way's.
func (rs *Recordings) totals() capture.RecorderStats {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var t capture.RecorderStats
	for _, r := range rs.all {
		st := r.recStats
		if r.status.State == StateRecording {
			st = r.rec.Stats()
			t.Lag, t.Queued = st.Lag, st.Queued
		}
		t.Records += st.Records
		t.Dropped += st.Dropped
		t.Bytes = st.Bytes
	}
	return t
}

func (rs *Recordings) byID(id string) *recording {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.all {
		if r.id == id {
			return r
		}
	}
	return nil
}

// statusLocked is r's status with its live counters. rs.mu is held.
func (rs *Recordings) statusLocked(r *recording) Status {
	st := r.status
	if st.State == StateRecording {
		if rs.cur == r {
			st.setResumes(rs.p.Resumes())
		}
		rst, wst := r.rec.Stats(), r.w.Stats()
		st.Sessions, st.Records, st.Bytes, st.Dropped = wst.Sessions, rst.Records, rst.Bytes, rst.Dropped
		st.Complete = false
	}
	return st
}

// finish finalizes r once: detaches it from the proxy, which records its
// open sessions as open, closes its recorder and reads its manifest.
func (rs *Recordings) finish(r *recording, why StopReason) {
	rs.finalize.Lock()
	defer rs.finalize.Unlock()
	rs.mu.Lock()
	if r.status.State != StateRecording {
		rs.mu.Unlock()
		return
	}
	rs.mu.Unlock()
	open := rs.p.Detach()
	resumes := rs.p.Resumes()
	closeErr := r.rec.Close()
	recStats := r.rec.Stats()
	var m capture.Manifest
	if mp, err := capture.ReadManifest(r.opts.Out); err == nil {
		m = *mp
	} else {
		// Not finalized: what the files hold, as a reader of an
		// unfinalized capture will find it.
		m = capture.Manifest{Records: recStats.Records, Bytes: recStats.Bytes, Dropped: recStats.Dropped,
			Reason: capture.ReasonNotFinalized, Error: errors.Join(closeErr, err).Error()}
	}
	stopped := time.Now()
	rs.mu.Lock()
	r.manifest, r.recStats = m, recStats
	st := &r.status
	st.State, st.Stopped, st.StopReason = StateFinalized, &stopped, why
	st.OpenAtEnd = open
	st.setResumes(resumes)
	st.Sessions, st.Records, st.Bytes, st.Dropped = m.Sessions, m.Records, m.Bytes, m.Dropped
	st.Complete, st.Reason, st.Error = m.Complete, m.Reason, m.Error
	if rs.cur == r {
		rs.cur = nil
	}
	if (why == StopMaxSize || why == StopWriteFailed) && m.Reason != capture.ReasonNotFinalized {
		rs.lost, rs.lostFrom = r, rs.p.Unrecorded()
	}
	rs.mu.Unlock()
	close(r.stop)
	if rs.finalized != nil {
		rs.finalized(r)
	}
}

// watch finalizes r when it reaches its duration or its size, or when
// its writer fails, and tells the operator once when the recorder falls
// behind, until r is finalized.
func (rs *Recordings) watch(r *recording) {
	var limit <-chan time.Time
	if r.opts.Duration > 0 {
		t := time.NewTimer(r.opts.Duration)
		defer t.Stop()
		limit = t.C
	}
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	var warnedDropped int64
	for {
		select {
		case <-r.stop:
			return
		case <-limit:
			rs.finish(r, StopDuration)
			return
		case <-poll.C:
			st := r.rec.Stats()
			// Records dropped because recording stopped are told with
			// the stop, not as a recorder that fell behind.
			if st.Dropped > 0 && warnedDropped == 0 && st.Stopped == "" && rs.warn != nil {
				rs.warn(fmt.Sprintf("the recorder fell behind the traffic and dropped %d records: the capture will be marked incomplete; "+
					"the proxy goes on relaying every message unchanged (a larger --queue or a faster disk keeps up)", st.Dropped))
			}
			warnedDropped = st.Dropped
			switch st.Stopped {
			case "":
			case capture.ReasonMaxSize:
				rs.finish(r, StopMaxSize)
				return
			default:
				if rs.warn != nil {
					rs.warn(fmt.Sprintf("recording stopped: %s; the capture is finalized as incomplete, and the proxy goes on relaying, unrecorded", st.Stopped))
				}
				rs.finish(r, StopWriteFailed)
				return
			}
		}
	}
}

// setResumes copies what became of the sessions open at the start.
func (st *Status) setResumes(c proxy.ResumeCounts) {
	st.NotRecorded, st.NotRecordedWhy = 0, nil
	for why, n := range c.NotRecorded {
		if st.NotRecordedWhy == nil {
			st.NotRecordedWhy = map[string]int64{}
		}
		st.NotRecordedWhy[string(why)] = n
		st.NotRecorded += n
	}
	st.Resumed, st.ResumedLate, st.Waiting, st.NotResumedReason = c.Resumed, c.Late, c.Waiting, c.Reason
	st.SkippedBeforeRecording = nil
	for why, n := range c.Skipped {
		if st.SkippedBeforeRecording == nil {
			st.SkippedBeforeRecording = map[string]int64{}
		}
		st.SkippedBeforeRecording[string(why)] = n
	}
}
