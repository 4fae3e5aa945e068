// Package topology is the solver's model of topology spread: each constraint read once, with
// kube-scheduler's defaults filled in; which nodes and domains one pod's constraint counts;
// the counts per domain; and the questions the solver asks before packing — may these pods go
// to this domain, and how many more may.
//
// It follows kube-scheduler's PodTopologySpread plugin (k8s.io/kubernetes,
// pkg/scheduler/framework/plugins/podtopologyspread): a constraint is judged per pod. The
// nodes it counts are those with every topology key of the pod's DoNotSchedule constraints
// that, under nodeAffinityPolicy Honor (the default), the pod's own node selector and required
// node affinity admit and, under nodeTaintsPolicy Honor (Ignore by default), whose taints the
// pod tolerates. Its domains are the key's values on those nodes, and only those: pods carrying
// the same constraint but pinned to other zones do not make those zones domains of this pod. A
// carrier may go to a domain while the domain's count of matching pods, itself included, is
// within maxSkew of the least count over its domains (0 with fewer domains than minDomains,
// which defaults to 1). A DoNotSchedule constraint whose key no counted node has leaves the pod
// no node at all: kube-scheduler's filter refuses every node without the key.
//
// The solver names a constraint's scope — what decides the counted nodes — with [Scope], and
// groups the carriers that share constraint and scope into one [Family]. Each family counts
// the running and the planned pods per domain, surely (the node is counted) or maybe (it
// may not be: the pods' node selection differs from the carriers'), and answers [Family.Admits]
// and [Family.Room]. A [Split] shares the pods of several groups ([Member]) over the domains
// of one key, least filled first, so that every family's final counts hold every carrier
// within maxSkew — the solver then pins each group's share to its domain. It shares them out in
// layers ([Order]): a group a family counts goes before that family's other carriers, because
// kube-scheduler never refuses a pod for a constraint it does not carry — the carriers make
// room for it, not it for them.
//
// The solver (scheduling) and the disruption planner (disruption/together.go, which pods must
// move together) both read constraints through it, which is why it lives at the module's
// internal/ rather than under scheduling.
//
// It does not know shapes, pools or bins: which domains a group can be launched into, and how
// many of its pods existing nodes hold, are the solver's and come in as [Member] fields. It
// keeps no state between calls.
//
// # Adding a spread option
//
// A new field of TopologySpreadConstraint touches three places: this package (parse it in
// [FromConstraint], and use it in [Scope] or the counts), the independent checker
// (scheduling/check, topology.go) and the brute-force oracle
// (scheduling/schedulingtest/optimal_topology.go). The checker and the oracle share no code
// with this package, by design: they are how a change here is judged.
//
// # Usage
//
//	s := topology.FromConstraint(c) // defaults filled
//	f := topology.NewFamily(s, domains, running)
//	f.Reset()
//	if f.Admits("zone-a", 1) {
//		f.Add("zone-a", 1, topology.Sure)
//	}
package topology
