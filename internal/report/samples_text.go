package report

import "github.com/pgrehearse/pgrehearse/internal/results"

// writeKept says what a result keeps for explaining plans: the plans the
// log holds (auto_explain) and the samples with parameter values.
func writeKept(ew *errWriter, r *results.Result) {
	if n := len(r.LoggedPlans); n > 0 {
		several := 0
		for _, p := range r.LoggedPlans {
			if p.Shapes > 1 {
				several++
			}
		}
		ew.printf("plans       logged by auto_explain for %s queries", thousands(int64(n)))
		if several > 0 {
			ew.printf(", %s of them with several plans", thousands(int64(several)))
		}
		ew.printf("\n")
	}
	if r.KeptSamples {
		ew.printf("samples     parameter values kept for %s queries (their slowest and median executions)\n", thousands(int64(len(r.Samples))))
	}
}
