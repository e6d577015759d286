package sweep

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/connstr"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/rounds"
)

// Options configure a sweep.
type Options struct {
	Driver   Driver
	Clients  []int // client counts, ascending
	Warmup   time.Duration
	Duration time.Duration
	// Repeat is how many steps run at each client count of each
	// configuration (0: DefaultRepeat); their spread is the noise the
	// peak, the knee, the cliff and the comparison are judged against.
	Repeat int
	// CliffRatio: the cliff is the first step after the peak below
	// CliffRatio times the peak's TPS.
	CliffRatio float64
	// Configs are compared in one sweep; none means the server as it is,
	// under the name "default".
	Configs []Config
	// Target is the server's connection string; empty means a throwaway
	// cluster per configuration.
	Target string
	// Init runs Driver.Init on the target (throwaway clusters always get
	// it), at Scale.
	Init  bool
	Scale int
	// BinDir holds the PostgreSQL binaries of throwaway clusters (empty:
	// pgcluster's choice).
	BinDir string
	// TopWaits and TopQueries bound the lists kept per step.
	TopWaits, TopQueries int
	// Progress receives one line per event of note; nil discards them.
	Progress func(format string, args ...any)
	// ProcDir is /proc, replaceable for tests.
	ProcDir string
}

func (o *Options) maxClients() int {
	m := 0
	for _, n := range o.Clients {
		m = max(m, n)
	}
	return m
}

// Validate reports the first option that cannot run, in words that name
// the option. Run calls it; a caller that tells bad input from a failed
// run (the CLI's usage errors) calls it first.
func (o *Options) Validate() error {
	switch {
	case o.Driver == nil:
		return errors.New("sweep: no workload")
	case len(o.Clients) == 0:
		return errors.New("sweep: no client counts")
	case !slices.IsSorted(o.Clients):
		return fmt.Errorf("sweep: client counts must be ascending, got %v", o.Clients)
	case o.Clients[0] < 1:
		return fmt.Errorf("sweep: client counts must be positive, got %d", o.Clients[0])
	case o.Duration < time.Second || o.Duration%time.Second != 0:
		return fmt.Errorf("sweep: the duration must be whole seconds, at least 1s, got %v", o.Duration)
	case o.Warmup < 0 || o.Warmup%time.Second != 0:
		return fmt.Errorf("sweep: the warm-up must be whole seconds, got %v", o.Warmup)
	case o.Repeat < 0:
		return fmt.Errorf("sweep: the repeats must be at least 1, got %d", o.Repeat)
	case !(o.CliffRatio > 0 && o.CliffRatio < 1):
		return fmt.Errorf("sweep: the cliff ratio must be between 0 and 1, got %v", o.CliffRatio)
	case o.Scale < 1 && (o.Target == "" || o.Init):
		return fmt.Errorf("sweep: the scale must be at least 1, got %d", o.Scale)
	}
	seen := map[string]bool{}
	for _, c := range o.Configs {
		if seen[c.Name] {
			return fmt.Errorf("sweep: configuration %s given twice", c.Name)
		}
		seen[c.Name] = true
	}
	return nil
}

// latencyBudget is about how many transactions a step logs for its
// percentiles; see the package comment.
const latencyBudget = 300_000

// Run runs the sweep. It returns the result so far along with an error
// when it stops early, interrupted or failing, marked Partial.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Progress == nil {
		opts.Progress = func(string, ...any) {}
	}
	if opts.ProcDir == "" {
		opts.ProcDir = "/proc"
	}
	if opts.Repeat == 0 {
		opts.Repeat = DefaultRepeat(len(opts.Configs))
	}
	if opts.TopWaits == 0 {
		opts.TopWaits = 5
	}
	if opts.TopQueries == 0 {
		opts.TopQueries = 5
	}
	configs := opts.Configs
	if len(configs) == 0 {
		configs = []Config{{Name: "default", Settings: map[string]string{}}}
	}
	res := &Result{
		Kind: "sweep", Version: 1, Started: time.Now().UTC().Truncate(time.Millisecond),
		Workload:   opts.Driver.Info(),
		ClientCPUs: runtime.NumCPU(),
		Plan: PlanInfo{Clients: opts.Clients, WarmupS: opts.Warmup.Seconds(), DurationS: opts.Duration.Seconds(),
			CliffRatio: opts.CliffRatio, Order: "alternating: A B at the 1st client count, B A at the 2nd, A B at the 3rd..."},
		Target:             "throwaway",
		DriverSharesServer: opts.Target == "" || connstr.IsLocal(opts.Target),
	}
	if opts.Repeat > 1 {
		res.Plan.Repeat = opts.Repeat
		res.Plan.Order = "alternating: A B at the 1st step, B A at the 2nd, A B at the 3rd... (every repeat of every client count is a step)"
	}
	if (opts.Target == "" || opts.Init) && res.Workload.Kind == "pgbench" {
		res.Workload.Scale = opts.Scale
	}
	for _, c := range configs {
		res.Configs = append(res.Configs, ConfigRun{Name: c.Name, Settings: c.Settings, Steps: []Step{}})
	}
	err := run(ctx, &opts, configs, res)
	Judge(res, opts.Repeat, opts.CliffRatio)
	if err != nil {
		res.Partial = true
	}
	return res, err
}

// CompareRepeat is the steps a comparison of configurations runs at each
// client count unless told otherwise: three, so that the spread between
// steps is measured, not assumed. With one step each, two identical
// configurations on a busy machine differ by 30% at a client count, which
// an assumed noise reads as a difference.
const CompareRepeat = 3

// DefaultRepeat is the steps per client count of a sweep of configs
// configurations when the caller asks for no number: CompareRepeat with two
// configurations or more, else one (a single curve's peak and cliff are
// read against the noise assumed of one step).
func DefaultRepeat(configs int) int {
	if configs > 1 {
		return CompareRepeat
	}
	return 1
}

// NoiseUnmeasured reports whether a sweep of configs configurations with
// repeat steps per client count compares configurations without having
// measured the noise between steps: with one step each, nothing says how
// far two steps of the same configuration differ, so no ratio, cliff or
// knee can be told from noise (the judge's rule,
// judge.CurveNoiseUnmeasured).
func NoiseUnmeasured(configs, repeat int) bool {
	return judge.CurveNoiseUnmeasured(configs, repeat)
}

// Judge fills in every configuration's knee, peak and cliff and the
// comparison of configurations from the steps of res, run repeat times at
// each client count. A comparison whose noise was not measured
// (NoiseUnmeasured) claims nothing that needs it: its ratios have no
// interval and no "~" (no Change), and every configuration's knee and
// cliff are left nil and its peak without the client counts within noise
// of it; res.NoiseUnmeasured says so. A knee or a cliff one configuration
// shows and another does not, whose curves no client count tells apart,
// is claimed on neither (withholdOneSided).
func Judge(res *Result, repeat int, cliffRatio float64) {
	unmeasured := NoiseUnmeasured(len(res.Configs), repeat)
	res.NoiseUnmeasured = unmeasured
	for i := range res.Configs {
		cr := &res.Configs[i]
		cr.Peak = FindPeak(cr.Steps)
		if unmeasured {
			cr.Knee, cr.Cliff = nil, nil
			if cr.Peak != nil {
				cr.Peak.Lo, cr.Peak.Hi = 0, 0
			}
			continue
		}
		cr.Knee = FindKnee(cr.Steps)
		cr.Cliff = FindCliff(cr.Steps, cliffRatio)
	}
	res.Comparison = CompareConfigs(res.Configs)
	if !unmeasured {
		withholdOneSided(res.Configs)
	}
	if unmeasured {
		for i := range res.Comparison {
			res.Comparison[i].Change = nil
		}
	}
}

func run(ctx context.Context, opts *Options, configs []Config, res *Result) (err error) {
	servers := make([]*server, len(configs))
	if opts.Target == "" {
		for i, cfg := range configs {
			opts.Progress("%s: starting a throwaway cluster (%s), %s", cfg.Name, settingsOrDefaults(cfg), initText(opts.Driver, opts.Scale))
			s, c, err := startThrowaway(ctx, cfg, opts)
			if err != nil {
				return fmt.Errorf("configuration %s: %w", cfg.Name, err)
			}
			// Every path stops the clusters, Ctrl-C included.
			defer func() {
				if stopErr := c.Stop(); stopErr != nil {
					err = errors.Join(err, fmt.Errorf("stop the cluster of %s: %w", cfg.Name, stopErr))
				}
			}()
			servers[i] = s
		}
	} else {
		res.Target = RedactDSN(opts.Target)
		t, err := openTarget(ctx, opts.Target, configs)
		if err != nil {
			return err
		}
		if len(t.names) > 0 {
			defer func() {
				// Put the settings back even when ctx is done.
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
				defer cancel()
				if rErr := t.restore(rctx); rErr != nil {
					err = errors.Join(err, fmt.Errorf("put the target's settings back: %w", rErr))
				} else {
					opts.Progress("target: settings %v put back", t.names)
				}
			}()
		}
		if opts.Init {
			opts.Progress("target: %s", initText(opts.Driver, opts.Scale))
			if err := opts.Driver.Init(ctx, opts.Target, opts.Scale); err != nil {
				return err
			}
		}
		pid, why := localPostmaster(ctx, opts.Target)
		if pid == 0 {
			opts.Progress("target: server CPU is unknown: %v", why)
		}
		for i, cfg := range configs {
			cfg := cfg
			servers[i] = &server{cfg: cfg, dsn: opts.Target, pid: pid}
			if len(t.names) > 0 {
				servers[i].apply = func(ctx context.Context) error { return t.apply(ctx, cfg) }
			}
		}
	}

	return runSteps(ctx, opts, servers, res)
}

// runSteps runs every step, the servers in alternating order (A B, then
// B A, ...: rounds.Turn), each client count Repeat times, appending each step to its
// configuration's result.
func runSteps(ctx context.Context, opts *Options, servers []*server, res *Result) error {
	// Only the names the configuration sets are read back.
	names := func(c Config) []string { return settingNames([]Config{c}) }
	indexes := make([]int, len(servers))
	for i := range indexes {
		indexes[i] = i
	}
	seq := 0
	for _, clients := range opts.Clients {
		for round := 1; round <= opts.Repeat; round++ {
			// Each step is a pass over the servers, in the order the
			// round runner gives sides (rounds.Turn).
			order := rounds.Turn(indexes, seq)
			seq++
			for _, i := range order {
				s := servers[i]
				cr := &res.Configs[i]
				if err := ctx.Err(); err != nil {
					return err
				}
				if s.apply != nil {
					if err := s.apply(ctx); err != nil {
						return fmt.Errorf("configuration %s: apply: %w", s.cfg.Name, err)
					}
				}
				if cr.Effective == nil && len(s.cfg.Settings) > 0 {
					eff, err := readSettings(ctx, s.dsn, names(s.cfg))
					if err != nil {
						return fmt.Errorf("configuration %s: %w", s.cfg.Name, err)
					}
					cr.Effective = eff
					if !matches(s.cfg.Settings, eff) {
						opts.Progress("%s: warning: the server shows %s, asked for %s", s.cfg.Name, SettingsString(eff), SettingsString(s.cfg.Settings))
					}
				}
				st, err := runStep(ctx, opts, s, clients, samplingRate(cr.Steps, clients, opts))
				if err != nil {
					return fmt.Errorf("configuration %s, %d clients: %w", s.cfg.Name, clients, err)
				}
				rnd := ""
				if opts.Repeat > 1 {
					st.Round = round
					rnd = fmt.Sprintf(" (step %d of %d)", round, opts.Repeat)
				}
				cr.Steps = append(cr.Steps, st)
				top := "none"
				if len(st.WaitEvents) > 0 {
					top = st.WaitEvents[0].Type + ":" + st.WaitEvents[0].Event
				}
				opts.Progress("%s: %3d clients: %.0f TPS, p95 %.3f ms, top wait %s%s", s.cfg.Name, clients, st.TPS, st.Latency.P95, top, rnd)
			}
		}
	}
	return nil
}

func settingsOrDefaults(c Config) string {
	if len(c.Settings) == 0 {
		return "default settings"
	}
	return SettingsString(c.Settings)
}

// samplingRate chooses the share of transactions to log so that a step
// logs about latencyBudget of them, expecting at most linear scaling from
// the previous step.
func samplingRate(prev []Step, clients int, opts *Options) float64 {
	if len(prev) == 0 {
		return 1
	}
	last := prev[len(prev)-1]
	expect := last.TPS * float64(clients) / float64(max(last.Clients, 1))
	total := expect * (opts.Warmup + opts.Duration + Tail).Seconds()
	if total <= latencyBudget {
		return 1
	}
	return latencyBudget / total
}
