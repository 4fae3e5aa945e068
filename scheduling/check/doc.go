// Package check verifies a [scheduling.Result] against its [scheduling.Input]: it is the
// independent referee of the solver. It is written from Kubernetes' scheduling semantics and
// the documented contract of the Result, not from the solver's code, so a bug has to be made
// twice to slip through.
//
// [Result] reports every broken rule at once, each as a [*Violation] naming the rule, the pod,
// claim or node, and the numbers:
//
//   - every pending pod appears exactly once, bound pods never, and an unschedulable pod has a
//     reason;
//   - pods fit (requests as kube-scheduler counts them: component-helpers' PodRequests, so
//     pod-level resources, sidecars, init containers, overhead and resize status): on a new claim, its pods plus the DaemonSet pods that would run there fit the
//     allocatable of the chosen instance type and of every option, in every offering its
//     requirements allow (a provider may fall back to any); on an existing node, allocatable
//     minus bound pods minus DaemonSet pods not yet running there; on an in-flight claim,
//     allocatable minus its Resources;
//   - nodeSelector and required node affinity match the node's labels (for a claim: its labels,
//     the instance type's, the offering's zone and capacity type and karpenter.sh/nodepool),
//     and NoSchedule/NoExecute taints are tolerated (a pool's startup taints are not checked,
//     nor, on a pool's node not yet karpenter.sh/initialized, the taints it sheds as it comes
//     up: not-ready, unreachable, uninitialized, unregistered and its startup taints);
//   - the chosen offering is available, within the claim's requirements and the cheapest its
//     options allow (ties allowed); the claim's requirements stay within the pool's, its labels
//     include the pool's, and every option is in the pool's catalog and compatible;
//   - NodePool limits hold, counting existing nodes (by karpenter.sh/nodepool), in-flight
//     claims and new claims at capacity; `nodes` counts nodes;
//   - Cost is the sum of the chosen prices (relative tolerance 1e-9); LowerBound is finite,
//     at least 0, and — when every pending pod is placed — at most Cost;
//   - the Result's slices are in their documented order;
//   - DoNotSchedule topology spread (in the final state, and with no carriers that could wait
//     on each other for good), required pod affinity and anti-affinity (both directions),
//     host ports (0.0.0.0 clashes with every IP; DaemonSet ports included), volume zones and
//     existing nodes' attach limits hold.
//
// A new claim's hostname is its own; its zone is its chosen offering's. What it does not do:
// it does not judge cost beyond these rules (see package schedulingtest for oracles), preferred
// (soft) constraints, minValues, or pods on in-flight claims other than through their Resources.
//
// # Usage
//
//	res, err := scheduling.Solve(ctx, in)
//	if err != nil {
//		return err
//	}
//	if err := check.Result(in, res); err != nil {
//		for _, v := range check.Violations(err) {
//			fmt.Println(v.Rule, v.Object, v.Detail)
//		}
//	}
package check
