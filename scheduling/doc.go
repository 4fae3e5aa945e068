// Package scheduling is nodeplan's provisioning solver: given pending pods, NodePools, an
// instance catalog and the existing nodes, [Solve] decides which nodes to launch, where every pod
// goes, and why any pod cannot be placed — and reports a lower bound on the cost, so a plan can be
// judged against the best possible.
//
// It is pure: no I/O, no clock, no logging, no goroutines left running, no state kept between
// calls. Equal inputs give results that cmp.Diff finds equal.
//
// # How it decides
//
// Pods with the same scheduling-relevant spec are grouped, so 100,000 replicas of 20 deployments
// cost about as much to solve as 20 pods. Pending pods go onto existing nodes and in-flight
// claims first (best fit: the fullest node that still takes them), then onto new nodes.
//
// New nodes are chosen by price, not by what fits first. Each group goes to the highest-weight
// NodePool that can take it (as in Karpenter). Within a pool, the solver repeatedly opens the node
// that packs the remaining pods at the lowest price per unit of work, where a pod's work is its
// value under the resource prices of the lower bound — cpu and memory counted together, so
// neither is stranded. A pattern that fits is replicated as often as the remaining pods allow,
// then a local search re-sizes, merges and splits nodes wherever that lowers the total.
//
// Karpenter instead grows one node while any instance type still fits and only then picks the
// cheapest type for that node: it never weighs one big node against two small ones (pods of 3+1
// vCPU get an 8-vCPU node instead of a 4 and a 2, 33% more), orders pods by cpu alone, and runs
// in time quadratic in the pod count. See the README for measured comparisons.
//
// # The lower bound
//
// [Result.LowerBound] is the value of a feasible dual of the fluid relaxation: every instance
// type gets resource prices y (cpu, memory, pods, …) with y·capacity ≤ its price, and a pod is
// worth the least it could cost on any type it may use. No plan can cost less than the pods'
// total worth, whatever the packing. Pods placed on existing capacity are free.
//
// # Limits
//
// A NodePool's limits count existing nodes, in-flight claims and the new claims at the capacity
// of the instance type each claim is costed at. A claim's fallback options are trimmed so that
// even if every claim fell back to its largest option, the limits would still hold.
//
// # Explanations
//
// Every pod left unplaced gets an [Unschedulable] entry: a [Reason] code for programs and, for
// every NodePool considered, a sentence for people — which taint, which requirement, which limit,
// which zone, and the nearest instance type that missed.
//
// # Usage
//
//	res, err := scheduling.Solve(ctx, scheduling.Input{
//		Pods:          pending,
//		NodePools:     pools,
//		InstanceTypes: catalog,
//		Nodes:         existing,
//	})
//	for _, c := range res.NodeClaims {
//		// launch c.NodeClaim through a cloudprovider.Provider
//	}
//	for _, u := range res.Unschedulable {
//		// u.Pod could not be placed: u.Code, u.Message
//	}
package scheduling
