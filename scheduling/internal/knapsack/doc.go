// Package knapsack finds the most valuable set of pods for one node: an integer knapsack over
// every resource (cpu, memory, pod slots, GPUs…), where each kind of pod (an Item) has a value
// and a most-copies count, kinds may share per-node caps (one pod per node among a family of
// anti-affine groups, a hostname spread's maxSkew), and pairs of kinds may conflict.
//
// The scheduling package prices the columns of its configuration LP with it (a node of one
// instance type and offering, at the LP's pod values: is some set of pods worth more than
// the node's price?) and bounds what an existing node's free room can hold. The search is a
// depth-first branch and bound whose bound at each search node is the tightest of a few
// surrogate relaxations (the resources folded into one by weights 1/capacity); when a search
// runs out of budget, the LP relaxation (few items) or a Lagrangian bound (many) bounds the
// best it may have missed. Budgets count search nodes, never time, so the same problem gives
// the same answer on any machine.
//
// It does not know pods, nodes or prices: the caller describes the node's room and the items,
// and maps the answer (IDs and counts) back. It keeps no state between calls but scratch space
// and the work counter.
//
// # Usage
//
//	var s knapsack.Solver
//	p := &knapsack.Problem{
//		Capacity: []int64{4000, 16 << 30},               // millicpu, bytes
//		Items: []knapsack.Item{
//			{ID: 1, Value: 0.05, Req: []int64{1000, 2 << 30}, Max: 10, Size: 0.375},
//			{ID: 2, Value: 0.02, Req: []int64{250, 1 << 30}, Max: 40, Size: 0.125},
//		},
//	}
//	picks, value, upper := s.Solve(p, 4000, 0) // the best set found, its value, a bound on the best
//	_, _, proved := s.Search(p, 1000, 16, 0.19) // only sets worth more than 0.19 matter
package knapsack
