package suite_test

import (
	"context"
	"testing"

	"github.com/nodeplan/nodeplan/benchmarks/suite"
	"github.com/nodeplan/nodeplan/scheduling"
)

// BenchmarkSuite solves every scenario of the full suite. Select with -bench, e.g.
// -bench 'Suite/inflate'; the slowest scenarios take seconds per iteration, so -benchtime=3x
// is plenty.
func BenchmarkSuite(b *testing.B) {
	scs, err := suite.Scenarios(suite.Full)
	if err != nil {
		b.Fatal(err)
	}
	for _, sc := range scs {
		b.Run(sc.Name, func(b *testing.B) {
			var res scheduling.Result
			b.ReportAllocs()
			for b.Loop() {
				var err error
				res, err = scheduling.Solve(context.Background(), sc.Input)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(sc.Input.Pods))*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
			b.ReportMetric(res.Cost, "$/h")
			if res.LowerBound > 0 {
				b.ReportMetric(res.Cost/res.LowerBound, "cost/LB")
			}
			b.ReportMetric(float64(len(res.NodeClaims)), "nodes")
			b.ReportMetric(float64(len(res.Unschedulable)), "unplaced")
		})
	}
}
