package suite_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/nodeplan/nodeplan/benchmarks/suite"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
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

// BenchmarkSolveVsFFD solves each scenario with nodeplan and with schedulingtest's
// first-fit-decreasing pass (the practical floor: no LP, no topology, no explanations) in the
// same benchmark, alternating, and reports nodeplan's time over FFD's as "x-FFD" beside the
// plan's domain figures. Select with -bench, e.g. -bench 'SolveVsFFD/karpenter-mix-drawn'.
func BenchmarkSolveVsFFD(b *testing.B) {
	scs, err := suite.Scenarios(suite.Full)
	if err != nil {
		b.Fatal(err)
	}
	for _, sc := range scs {
		b.Run(sc.Name, func(b *testing.B) {
			var res scheduling.Result
			var solve, ffd, solveCPU, ffdCPU time.Duration
			b.ReportAllocs()
			for b.Loop() {
				start, startCPU := time.Now(), cpuTime()
				var err error
				res, err = scheduling.Solve(context.Background(), sc.Input)
				if err != nil {
					b.Fatal(err)
				}
				mid, midCPU := time.Now(), cpuTime()
				schedulingtest.FirstFitDecreasing(sc.Input)
				solve += mid.Sub(start)
				ffd += time.Since(mid)
				solveCPU += midCPU - startCPU
				ffdCPU += cpuTime() - midCPU
			}
			b.ReportMetric(float64(len(sc.Input.Pods))*float64(b.N)/solve.Seconds(), "pods/s")
			b.ReportMetric(float64(solve.Nanoseconds())/float64(b.N), "solve-ns/op")
			b.ReportMetric(float64(ffd.Nanoseconds())/float64(b.N), "ffd-ns/op")
			b.ReportMetric(solve.Seconds()/ffd.Seconds(), "x-FFD")
			b.ReportMetric(solveCPU.Seconds()/ffdCPU.Seconds(), "cpu-x-FFD")
			b.ReportMetric(float64(solveCPU.Nanoseconds())/float64(b.N), "solve-cpu-ns/op")
			b.ReportMetric(res.Cost, "$/h")
			if res.LowerBound > 0 {
				b.ReportMetric(res.Cost/res.LowerBound, "cost/LB")
			}
			b.ReportMetric(float64(len(res.NodeClaims)), "nodes")
			b.ReportMetric(float64(len(res.Unschedulable)), "unplaced")
		})
	}
}

// cpuTime is the CPU time the process has used so far (user and system): on a shared machine
// it moves less with other work than the wall clock does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
