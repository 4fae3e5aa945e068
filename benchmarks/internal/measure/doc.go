// Package measure times solvers the same way for every peer: repeated runs with the median
// taken, wall-clock and process CPU time, allocations of one run, and for nodeplan the
// independent checker's verdict.
//
// It is internal to the benchmarks: cmd/bench and the karpenter comparison share it so that
// their numbers mean the same thing.
//
// # Usage
//
//	t, err := measure.Repeat(ctx, measure.Options{}, func(ctx context.Context) error {
//		_, err := scheduling.Solve(ctx, in)
//		return err
//	})
package measure
