package sweep

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Summary is what pgbench prints on standard output at the end of a run.
type Summary struct {
	TransactionType string // "<builtin: select only>" or the script's path
	Mode            string // query mode
	Clients         int
	Threads         int
	Transactions    int64
	Failed          int64
	LatencyAvgMS    float64
	ConnectMS       float64 // initial connection time (pgbench 14+)
	// TPS excludes connection time: "tps = ... (without initial
	// connection time)" since pgbench 14, "(excluding connections
	// establishing)" before.
	TPS float64
}

var (
	summaryTPS = regexp.MustCompile(`^tps = ([0-9.]+) \((without initial connection time|excluding connections establishing)\)`)
	leadingNum = regexp.MustCompile(`^[0-9.]+`)
)

// ParseSummary reads pgbench's end-of-run summary. It fails when the
// output has no TPS line, which is what an aborted run prints.
func ParseSummary(out []byte) (Summary, error) {
	var s Summary
	haveTPS := false
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if m := summaryTPS.FindStringSubmatch(line); m != nil {
			v, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				return s, fmt.Errorf("pgbench summary: %q: %w", line, err)
			}
			s.TPS, haveTPS = v, true
			continue
		}
		key, val, ok := strings.Cut(line, ": ")
		if !ok {
			key, val, ok = strings.Cut(line, " = ")
		}
		if !ok {
			continue
		}
		num := leadingNum.FindString(val)
		switch key {
		case "transaction type":
			s.TransactionType = val
		case "query mode":
			s.Mode = val
		case "number of clients":
			s.Clients, _ = strconv.Atoi(num)
		case "number of threads":
			s.Threads, _ = strconv.Atoi(num)
		case "number of transactions actually processed":
			// "12345" or, with -t, "12345/12345".
			s.Transactions, _ = strconv.ParseInt(num, 10, 64)
		case "number of failed transactions":
			s.Failed, _ = strconv.ParseInt(num, 10, 64)
		case "latency average":
			s.LatencyAvgMS, _ = strconv.ParseFloat(num, 64)
		case "initial connection time":
			s.ConnectMS, _ = strconv.ParseFloat(num, 64)
		}
	}
	if !haveTPS {
		return s, errors.New("pgbench printed no tps line: the run did not complete")
	}
	return s, nil
}

// Progress is one --progress report: the interval ending At seconds after
// the benchmark started.
type Progress struct {
	At      float64
	TPS     float64
	LatMS   float64
	StdDev  float64
	Failed  int64
	HasFail bool
}

// "progress: 2.0 s, 82869.9 tps, lat 0.045 ms stddev 0.049, 0 failed"
// (pgbench 15; without ", 0 failed" before, with ", lag ..." under --rate).
var progressLine = regexp.MustCompile(`^progress: ([0-9.]+) s, ([0-9.]+) tps, lat ([0-9.]+|NaN) ms stddev ([0-9.]+|NaN)(?:, (?:[^,]*, )*?([0-9]+) failed)?`)

// ParseProgress parses one --progress line; ok is false for any other line.
func ParseProgress(line string) (p Progress, ok bool) {
	m := progressLine.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return p, false
	}
	p.At, _ = strconv.ParseFloat(m[1], 64)
	p.TPS, _ = strconv.ParseFloat(m[2], 64)
	p.LatMS, _ = strconv.ParseFloat(m[3], 64) // NaN with no transactions
	p.StdDev, _ = strconv.ParseFloat(m[4], 64)
	if m[5] != "" {
		p.Failed, _ = strconv.ParseInt(m[5], 10, 64)
		p.HasFail = true
	}
	return p, true
}

// windowStats combines the progress reports of intervals inside (from, to]
// seconds: TPS over those intervals, the transaction count and the mean
// latency weighted by transactions. pgbench reports at whole seconds, so an
// interval is inside when its end is.
func windowStats(reports []Progress, from, to float64) (tps float64, tx int64, failed int64, meanMS float64, span float64) {
	prev := 0.0
	var txf, latSum float64
	for _, p := range reports {
		length := p.At - prev
		prev = p.At
		if p.At <= from+1e-9 || p.At > to+1e-9 || length <= 0 {
			continue
		}
		n := p.TPS * length
		txf += n
		if n > 0 && p.LatMS == p.LatMS { // not NaN
			latSum += p.LatMS * n
		}
		failed += p.Failed
		span += length
	}
	if span > 0 {
		tps = txf / span
	}
	if txf > 0 {
		meanMS = latSum / txf
	}
	return tps, int64(txf + 0.5), failed, meanMS, span
}

// TxRecord is one line of pgbench's per-transaction log (-l):
// "client_id transaction_no time script_no time_epoch time_us
// [schedule_lag [retries]]", time being the latency in microseconds or
// "failed"/"skipped", and time_epoch.time_us the completion time.
type TxRecord struct {
	LatencyUS int64
	Failed    bool
	Skipped   bool
	// EndUS is the completion time in microseconds since the Unix epoch.
	EndUS int64
}

// ParseTxLine parses one per-transaction log line.
func ParseTxLine(line string) (TxRecord, error) {
	var r TxRecord
	f := strings.Fields(line)
	if len(f) < 6 {
		return r, fmt.Errorf("pgbench log line %q: want at least 6 fields", line)
	}
	switch f[2] {
	case "failed":
		r.Failed = true
	case "skipped":
		r.Skipped = true
	default:
		v, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return r, fmt.Errorf("pgbench log line %q: latency: %w", line, err)
		}
		r.LatencyUS = v
	}
	sec, err1 := strconv.ParseInt(f[4], 10, 64)
	us, err2 := strconv.ParseInt(f[5], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return r, fmt.Errorf("pgbench log line %q: time: %w", line, err)
	}
	r.EndUS = sec*1_000_000 + us
	return r, nil
}

// readTxLog calls fn for every record of a per-transaction log.
func readTxLog(r io.Reader, fn func(TxRecord)) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		rec, err := ParseTxLine(sc.Text())
		if err != nil {
			return err
		}
		fn(rec)
	}
	return sc.Err()
}
