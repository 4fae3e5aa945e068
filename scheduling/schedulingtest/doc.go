// Package schedulingtest helps test solvers of the scheduling package: random inputs for
// property tests, and baselines to judge a plan's cost by.
//
//   - [Inputs] generates small, valid [scheduling.Input]s with rapid (pgregory.net/rapid);
//     [Config] chooses the features, up to topology spread and pod (anti-)affinity.
//   - [FirstFitDecreasing] is a plain Karpenter-like packer: a plan to beat.
//   - [Optimal] is an exhaustive search over tiny inputs (at most 8 pods and 6 types): the plan
//     that cannot be beaten, under the assumptions its doc lists.
//   - [OptimalTopology] is an exhaustive search over tiny inputs with zone and hostname
//     spread, pod anti-affinity and affinity (at most 7 pods, 4 types, one NodePool), under
//     package check's rules or, with [TopologyRules], Karpenter's reading of hostname spread;
//     [TopologyInputs] generates inputs it solves.
//
// Validity of a plan is package check's business; this package says nothing about it.
// Nothing here is fast, and nothing is meant for production code.
//
// # Usage
//
//	func TestSolveNearOptimal(t *testing.T) {
//		gen := schedulingtest.Inputs(schedulingtest.Config{Exact: true})
//		for seed := range 500 {
//			in := gen.Example(seed)
//			res, err := scheduling.Solve(context.Background(), in)
//			if err != nil {
//				t.Fatal(err)
//			}
//			best, _, ok := schedulingtest.Optimal(in)
//			if ok && res.Cost > best*1.05 {
//				t.Errorf("seed %d: cost %v, optimum %v", seed, res.Cost, best)
//			}
//		}
//	}
package schedulingtest
