package sweep

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

// curve builds steps from client counts and TPS values.
func curve(points ...float64) []Step {
	var steps []Step
	for i := 0; i+1 < len(points); i += 2 {
		steps = append(steps, Step{Clients: int(points[i]), TPS: points[i+1]})
	}
	return steps
}

// One step per client count: each reading is assumed within
// stepcurve.DefaultNoise (15%) of another, so that only clear falls are
// called; the peak spans the client counts within that noise of it.
func TestPeakAndCliff(t *testing.T) {
	functionalCase(t)
	tests := []struct {
		name  string
		steps []Step
		ratio float64
		peak  *Peak
		cliff *Cliff
	}{
		{"rising: no cliff", curve(1, 100, 2, 190, 4, 350, 8, 600), 0.8,
			&Peak{8, 600, 8, 8, 1}, &Cliff{Ratio: 0.8, UpTo: 8}},
		{"plateau above the threshold: no cliff", curve(1, 100, 2, 200, 4, 300, 8, 290, 16, 250), 0.8,
			&Peak{4, 300, 4, 8, 1}, &Cliff{Ratio: 0.8, UpTo: 16}},
		// 310 of 400 is 0.775: within the noise of one reading of the
		// threshold, not a cliff; 150 is.
		{"cliff at the first step below 0.8 of the peak beyond the noise", curve(1, 100, 2, 200, 4, 400, 8, 330, 16, 310, 32, 150), 0.8,
			&Peak{4, 400, 4, 4, 1}, &Cliff{Found: true, Clients: 32, TPS: 150, RatioToPeak: 150.0 / 400, Ratio: 0.8, UpTo: 32}},
		// The field report's shape: track_planning on peaks early and
		// halves.
		{"track_planning on, 192 vCPUs", curve(1, 10e3, 10, 90e3, 20, 160e3, 40, 200e3, 80, 120e3, 160, 100e3), 0.8,
			&Peak{40, 200e3, 40, 40, 1}, &Cliff{Found: true, Clients: 80, TPS: 120e3, RatioToPeak: 0.6, Ratio: 0.8, UpTo: 160}},
		{"a dip before the peak is no cliff", curve(1, 100, 2, 50, 4, 300), 0.8,
			&Peak{4, 300, 4, 4, 1}, &Cliff{Ratio: 0.8, UpTo: 4}},
		{"a tie goes to fewer clients", curve(1, 100, 2, 300, 4, 300, 8, 100), 0.8,
			&Peak{2, 300, 2, 4, 1}, &Cliff{Found: true, Clients: 8, TPS: 100, RatioToPeak: 1.0 / 3, Ratio: 0.8, UpTo: 8}},
		{"steps out of order", curve(8, 100, 1, 100, 4, 400, 2, 200), 0.8,
			&Peak{4, 400, 4, 4, 1}, &Cliff{Found: true, Clients: 8, TPS: 100, RatioToPeak: 0.25, Ratio: 0.8, UpTo: 8}},
		{"one step", curve(1, 100), 0.8, &Peak{1, 100, 1, 1, 1}, &Cliff{Ratio: 0.8, UpTo: 1}},
		{"no steps", nil, 0.8, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FindPeak(tt.steps); !reflect.DeepEqual(got, tt.peak) {
				t.Errorf("peak %+v, want %+v", got, tt.peak)
			}
			got := FindCliff(tt.steps, tt.ratio)
			if got != nil {
				// The interval is FindBreak's, tested in stepcurve.
				if got.Found && !(got.Lo <= float64(got.Clients) && got.Lo < got.Hi && got.Estimate >= got.Lo && got.Estimate <= got.Hi) {
					t.Errorf("cliff %+v: its interval does not hold it", got)
				}
				got.Lo, got.Hi, got.Estimate = 0, 0, 0
			}
			if !reflect.DeepEqual(got, tt.cliff) {
				t.Errorf("cliff %+v, want %+v", got, tt.cliff)
			}
		})
	}
}

func TestClientCounts(t *testing.T) {
	functionalCase(t)
	tests := []struct {
		list []int
		max  int
		want []int
	}{
		{nil, 64, []int{1, 2, 4, 8, 16, 32, 64}},
		{nil, 12, []int{1, 2, 4, 8, 12}},
		{nil, 1, []int{1}},
		{[]int{8, 1, 4, 4, 2}, 99, []int{1, 2, 4, 8}},
	}
	for _, tt := range tests {
		if got := ClientCounts(tt.list, tt.max); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ClientCounts(%v, %d) = %v, want %v", tt.list, tt.max, got, tt.want)
		}
	}
}

func TestParseConfig(t *testing.T) {
	functionalCase(t)
	tests := []struct {
		in   string
		want Config
		err  bool
	}{
		{"A:pg_stat_statements.track_planning=on", Config{"A", map[string]string{"pg_stat_statements.track_planning": "on"}}, false},
		{"big:work_mem=64MB, jit=off", Config{"big", map[string]string{"work_mem": "64MB", "jit": "off"}}, false},
		{"p:search_path=a,b,c,jit=off", Config{"p", map[string]string{"search_path": "a,b,c", "jit": "off"}}, false},
		{"base:", Config{"base", map[string]string{}}, false},
		{"no-colon", Config{}, true},
		{"bad name:jit=off", Config{}, true},
		{"A:jit", Config{}, true},
		{"A:jit=on,jit=off", Config{}, true},
		{"A:evil;drop=1", Config{}, true},
	}
	for _, tt := range tests {
		got, err := ParseConfig(tt.in)
		if (err != nil) != tt.err || (!tt.err && !reflect.DeepEqual(got, tt.want)) {
			t.Errorf("ParseConfig(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestThrowawaySettings(t *testing.T) {
	functionalCase(t)
	s := throwawaySettings(Config{Settings: map[string]string{"shared_preload_libraries": "auto_explain"}}, 200)
	if s["shared_preload_libraries"] != "auto_explain,pg_stat_statements" || s["max_connections"] != "210" {
		t.Errorf("settings %v", s)
	}
	s = throwawaySettings(Config{Settings: map[string]string{"pg_stat_statements.track_planning": "on"}}, 4)
	if s["shared_preload_libraries"] != "pg_stat_statements" || s["max_connections"] != "100" || s["pg_stat_statements.track_planning"] != "on" {
		t.Errorf("settings %v", s)
	}
}

func TestServerCPU(t *testing.T) {
	functionalCase(t)
	// A fake /proc: postmaster 100 with two children, and an unrelated
	// process 300 whose command name holds ") 1 2 (".
	proc := t.TempDir()
	stat := func(pid int, comm string, ppid, utime, stime, cutime, cstime int) {
		dir := filepath.Join(proc, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// pid (comm) state ppid pgrp session tty tpgid flags minflt
		// cminflt majflt cmajflt utime stime cutime cstime ...
		line := strconv.Itoa(pid) + " (" + comm + ") S " + strconv.Itoa(ppid) + " 1 1 0 -1 0 0 0 0 0 " +
			strconv.Itoa(utime) + " " + strconv.Itoa(stime) + " " + strconv.Itoa(cutime) + " " + strconv.Itoa(cstime) + " 20 0 1 0\n"
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stat(100, "postgres", 1, 10, 5, 300, 200)
	stat(101, "postgres", 100, 40, 10, 0, 0)
	stat(102, "postgres: checkpointer", 100, 1, 1, 0, 0)
	stat(300, "x) 1 2 (y", 100, 1000, 0, 0, 0) // its ppid is 100 too: counted
	stat(400, "other", 1, 5000, 0, 0, 0)
	if err := os.MkdirAll(filepath.Join(proc, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := serverCPU(proc, 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := float64(10+5+300+200+40+10+1+1+1000) / 100; got != want {
		t.Errorf("serverCPU = %v, want %v", got, want)
	}
	if _, err := serverCPU(proc, 999); err == nil {
		t.Error("no error for a missing postmaster")
	}
}

func TestPostmasterPID(t *testing.T) {
	functionalCase(t)
	dir := t.TempDir()
	content := "4242\n/var/lib/postgresql/15/main\n1795336816\n5433\n/var/run/postgresql\n*\n  1234  5678\nready   \n"
	if err := os.WriteFile(filepath.Join(dir, "postmaster.pid"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	pid, port, err := postmasterPID(dir)
	if err != nil || pid != 4242 || port != 5433 {
		t.Errorf("pid %d port %d err %v", pid, port, err)
	}
}

// lat builds steps of clients, TPS and mean latency (ms) triples.
func lat(points ...float64) []Step {
	var steps []Step
	for i := 0; i+2 < len(points); i += 3 {
		steps = append(steps, Step{Clients: int(points[i]), TPS: points[i+1], Latency: Latency{Mean: points[i+2]}})
	}
	return steps
}

func TestKnee(t *testing.T) {
	functionalCase(t)
	tests := []struct {
		name  string
		steps []Step
		want  *Knee
	}{
		{"scales, then queues", lat(1, 1000, 1.0, 2, 1900, 1.05, 4, 3600, 1.1, 8, 4000, 2.0, 16, 4100, 3.9),
			&Knee{Found: true, Clients: 4, TPS: 3600, MeanMS: 1.1, NextClients: 8, TPSGrowth: 4000.0 / 3600, LatencyGrowth: 2.0 / 1.1, Lo: 4, Hi: 4, UpTo: 16}},
		// A flat curve: the highest reading (16 clients) is noise; the
		// knee is where throughput stopped paying, at once.
		{"flat with noise", lat(1, 5000, 0.2, 2, 5150, 0.39, 4, 4950, 0.81, 8, 5050, 1.58, 16, 5200, 3.1),
			&Knee{Found: true, Clients: 1, TPS: 5000, MeanMS: 0.2, NextClients: 2, TPSGrowth: 5150.0 / 5000, LatencyGrowth: 0.39 / 0.2, Lo: 1, Hi: 1, UpTo: 16}},
		{"every step pays", lat(1, 100, 1, 2, 200, 1, 4, 390, 1.02), &Knee{Lo: 4, Hi: 4, UpTo: 4}},
		// 4 clients' power is 5% below 2's: within the noise of one
		// reading, so no knee is called.
		{"a knee within the noise is none", lat(1, 100, 1, 2, 200, 1, 4, 390, 2.05), &Knee{Lo: 2, Hi: 4, UpTo: 4}},
		{"one step", lat(1, 100, 1), &Knee{UpTo: 1}},
		{"untimed steps are passed over", lat(1, 100, 0, 2, 200, 1, 4, 210, 1.9),
			&Knee{Found: true, Clients: 2, TPS: 200, MeanMS: 1, NextClients: 4, TPSGrowth: 210.0 / 200, LatencyGrowth: 1.9, Lo: 2, Hi: 2, UpTo: 4}},
		{"steps out of order", lat(4, 3600, 1.1, 1, 1000, 1.0, 8, 4000, 2.0, 2, 1900, 1.05),
			&Knee{Found: true, Clients: 4, TPS: 3600, MeanMS: 1.1, NextClients: 8, TPSGrowth: 4000.0 / 3600, LatencyGrowth: 2.0 / 1.1, Lo: 4, Hi: 4, UpTo: 8}},
		{"no steps", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FindKnee(tt.steps); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("knee %+v, want %+v", got, tt.want)
			}
		})
	}
}
