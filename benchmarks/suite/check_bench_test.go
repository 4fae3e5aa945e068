package suite_test

import (
	"context"
	"testing"
	"time"

	"github.com/nodeplan/nodeplan/benchmarks/suite"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/check"
)

// BenchmarkCheck times the independent checker (check.Result) on each scenario's plan, which
// is solved once before timing starts: benchmarks/karpenter checks every plan it measures, so
// the checker must keep up with the largest scenarios. Select with -bench, e.g.
// -bench 'Check/karpenter-mix-drawn' -benchtime 1x.
func BenchmarkCheck(b *testing.B) {
	scs, err := suite.Scenarios(suite.Full)
	if err != nil {
		b.Fatal(err)
	}
	for _, sc := range scs {
		b.Run(sc.Name, func(b *testing.B) {
			res, err := scheduling.Solve(context.Background(), sc.Input)
			if err != nil {
				b.Fatal(err)
			}
			var violations int
			var cpu time.Duration
			b.ReportAllocs()
			for b.Loop() {
				start := cpuTime()
				violations = len(check.Violations(check.Result(sc.Input, res)))
				cpu += cpuTime() - start
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(len(sc.Input.Pods))*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
			b.ReportMetric(float64(violations), "violations")
		})
	}
}
