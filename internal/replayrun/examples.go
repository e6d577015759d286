package replayrun

import (
	"context"
	"io"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Examples reads cfg's input, as the replay selects it, for one real
// execution of each of fingerprints: the first whose text is that one
// statement alone and whose values the log shows whole. It stops once
// each was found. An example is a statement as the log holds it, values
// and all, for a plan that its normalized text cannot give ("interval
// $2" does not parse); its values are personal data, for the caller to
// use and not to keep. Its Role is results.SampleExample.
func Examples(ctx context.Context, cfg Config, fingerprints []string) (map[string]results.Sample, error) {
	out := map[string]results.Sample{}
	want := map[string]bool{}
	for _, fp := range fingerprints {
		want[fp] = true
	}
	if len(want) == 0 {
		return out, nil
	}
	cache := cfg.Replay.Cache
	if cache == nil {
		cache = fingerprint.NewCache(0)
	}
	set, err := openInput(&cfg)
	if err != nil {
		return out, err
	}
	defer set.Close()
	for _, src := range set.Sources() {
		for len(out) < len(want) {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			ev, err := src.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return out, err
			}
			if !ev.IsExecution() || ev.ParamState != event.ParamsComplete {
				continue
			}
			items := cache.Get(ev.Query)
			if len(items) != 1 || !want[items[0].Fingerprint] {
				continue
			}
			fp := items[0].Fingerprint
			if _, ok := out[fp]; ok {
				continue
			}
			s := results.Sample{Role: results.SampleExample, Query: strings.Clone(ev.Query), Database: strings.Clone(ev.Database)}
			if ps := ev.TextParams(); len(ps) > 0 {
				s.Params = make([]*string, len(ps))
				for i, p := range ps {
					if !p.Null {
						v := strings.Clone(p.Value)
						s.Params[i] = &v
					}
				}
			}
			out[fp] = s
		}
	}
	return out, nil
}
