package sweep

import (
	"strings"
	"testing"
	"time"
)

// TestValidate: the options the CLI cannot catch while parsing flags are
// refused here, before anything runs, with a message naming the option.
func TestValidate(t *testing.T) {
	functionalCase(t)
	good := func() Options {
		return Options{Driver: &Pgbench{Builtin: "select-only", Mode: "simple"}, Clients: []int{1, 2},
			Warmup: time.Second, Duration: 2 * time.Second, CliffRatio: 0.8, Scale: 1,
			Configs: []Config{{Name: "a"}, {Name: "b"}}}
	}
	if o := good(); o.Validate() != nil {
		t.Fatalf("good options: %v", o.Validate())
	}
	cases := []struct {
		edit func(*Options)
		want string // "" when valid
	}{
		{func(o *Options) { o.Driver = nil }, "no workload"},
		{func(o *Options) { o.Clients = nil }, "no client counts"},
		{func(o *Options) { o.Clients = []int{2, 1} }, "ascending"},
		{func(o *Options) { o.Clients = []int{0, 1} }, "positive"},
		{func(o *Options) { o.Duration = 1500 * time.Millisecond }, "duration must be whole seconds"},
		{func(o *Options) { o.Duration = 0 }, "at least 1s"},
		{func(o *Options) { o.Warmup = -time.Second }, "warm-up must be whole seconds"},
		{func(o *Options) { o.Warmup = 0 }, ""},
		{func(o *Options) { o.CliffRatio = 1 }, "between 0 and 1"},
		{func(o *Options) { o.CliffRatio = 0 }, "between 0 and 1"},
		{func(o *Options) { o.Scale = 0 }, "scale must be at least 1"},
		{func(o *Options) { o.Scale, o.Target = 0, "host=/tmp" }, ""}, // not initialized: unused
		{func(o *Options) { o.Scale, o.Target, o.Init = 0, "host=/tmp", true }, "scale must be at least 1"},
		{func(o *Options) { o.Configs = []Config{{Name: "a"}, {Name: "a"}} }, "given twice"},
	}
	for i, tc := range cases {
		o := good()
		tc.edit(&o)
		err := o.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("case %d: %v, want valid", i, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("case %d: %v, want an error with %q", i, err, tc.want)
		}
	}
}
