// Package scheduling is nodeplan's provisioning solver: given pending pods, NodePools, an
// instance catalog and the existing nodes, [Solve] decides which nodes to launch, where every pod
// goes, and why any pod cannot be placed — and reports a lower bound on the cost, so a plan can be
// judged against the best possible.
//
// It is pure: no I/O, no clock, no logging, no goroutines left running, no state kept between
// calls. Equal inputs give results that cmp.Diff finds equal. It does not bind pods (kube-scheduler
// does) and does not launch anything (a cloudprovider does).
//
// # How it decides
//
// Pods with the same scheduling-relevant spec are grouped, so 100,000 replicas of 20 deployments
// cost about what 20 pods cost. Pending pods first fill existing nodes and in-flight claims —
// pods that can go nowhere else first, then the most valuable — because that room is paid for.
//
// New nodes come from the configuration LP of the packing problem (Gilmore–Gomory), solved by
// column generation: a column is a whole-node pattern ("3 web and 2 cache pods on an m7g.xlarge,
// spot, in us-east-1a"); the LP's dual values price one pod of each group; and an exact integer
// knapsack per instance type and offering, by branch and bound, finds the pattern worth most at
// those prices. The LP solution, ⌊λ⌋ nodes of each pattern, is nearly integral for bin-packing
// problems, so rounding it and packing the few leftover pods greedily at the same prices gives a
// plan within a few percent of optimal; a local search then re-sizes, merges and empties nodes
// and, on small plans, moves pods between two nodes wherever that lowers the total. Each group
// goes to the highest-weight NodePool that can take it, as in Karpenter; a pool's limits count
// existing, in-flight and planned nodes.
//
// # What a node costs
//
// A node costs more than its instance: a root volume, perhaps a public IPv4 address, per-host
// licences, and load on the control plane. [Options.NodeCost] states it per node and per
// NodePool, and the solver adds it to every offering price it weighs — packing, local search
// and lower bound alike — so where it is large enough fewer, larger nodes win. [Result.Cost]
// includes it and [Result.NodeCost] is that part; each claim's Offering keeps its list price.
//
// # How long it takes
//
// The column generation runs on a work budget that is counted, not timed (about 1,000 units of
// work per pod, between 3 and 20 million, times [Options.Effort]; at least 15 to 25 pricing
// rounds, 6 to 10 on an LP of more than 100 rows: see colgen.go), so a plan does not depend on
// the machine. On those large LPs (about a group per pod, as in Karpenter's benchmark mix drawn
// its way) a round searches at most 8 families once one has an improving pattern; the
// limit-priced LP starts from the columns of the LP over every pool, and a pool's own LP from
// those of both. A pool's own LP, whose pod values only its packers read, proves no bound and,
// once its budget is spent or its solution exceeds the pool's limit, ends at the first round
// its quick searches find nothing in, without the round at full effort; so does the LP over
// every pool past its budget where a binding limit has the limit-priced LP prove the bound.
// Four things keep the rounds cheap: an instance type is dropped when another of the pool is as
// large, no dearer in every zone and capacity type, and takes the same pods (most of a real
// catalog: c5, c6i, c7i… of one size); each family's last pattern is re-priced before any
// search; a family whose LP relaxation shows no pattern beats its node's price is not searched
// (its search is deferred until its pattern could enter, so the rounds enter the same columns);
// and the dual values are updated by every pivot rather than recomputed. Where every group may
// share a node with every other, the LP converges well within the budget. Where per-node caps
// abound (Karpenter's benchmark mix, where hostname spread and anti-affinity allow one pod of a
// deployment per node) the LP is highly degenerate and converges slowly: the budget stops it,
// the pods are valued at the average dual values of the search (which swing less than the last
// ones), and the local search does the rest.
//
// Karpenter instead grows one node while any instance type still fits and only then picks the
// cheapest type for it: it never weighs one big node against two small ones (pods of 3 + 1 vCPU
// get an 8-vCPU node instead of a 4 and a 2, 33% more), orders pods by cpu alone, and its run
// time grows with the square of the pod count. The README has measured comparisons.
//
// # The lower bound
//
// [Result.LowerBound] is a valid bound on any plan placing the same pods, at every stage of the
// column generation (Farley's bound): if no pattern is worth more than θ times its node's price
// at the dual values v, then Σ n·v/θ is no more than any plan costs. The knapsack's exact search,
// its LP relaxation, or a Lagrangian bound supply θ; where pods share a per-node cap, the search's
// bounds are Lagrangian too (a greedy fill is not a bound there). Existing room is free but
// finite: each existing node subtracts the most its free room could hold. A pool's limits
// are not in the LP (a limit spans nodes); where its solution exceeds one, the limited
// resources are priced (Lagrangian relaxation: each node's price raised by its capacity times
// the overflow's extra cost per unit elsewhere, the prices times the room left subtracted) and
// the bound proved again: on a spot pool capped at 200 cpu beside on-demand, cost/bound goes
// from 3.3 to 1.04. The bound stays valid either way.
//
// Where topology split or pinned groups, the bound is proved on a relaxed problem instead
// (topologyFreeBound): the same pods without the zone constraints, which the plan meets one
// particular way, keeping only what every plan obeys — hostname anti-affinity, and a zone
// spread's small per-node caps (fewer than 8 pods of a family per node; a larger cap rarely
// binds where groups share nodes, and it keeps the LP's rows from merging). Nothing reads that
// LP's pod values, so it stops once its bound stops rising (after a quarter of its work
// budget, when three checks in a row gain under 0.1%, or the bound is within 0.5% of the LP's
// objective) and reports the best bound any check proved.
//
// How far each gap is the bound's and how far the plan's, on the benchmark suite: cost/bound at
// the default effort → at Options.Effort 8, which moves whichever side has not converged:
//
//	inflate-100/1000/5000      1.024, 1.002, 1.001   unchanged: both converged; the gap is whole nodes
//	gpu-pools-1064             1.015                 unchanged: converged
//	anti-affinity-320          1.002                 unchanged
//	spot-od-limit-1500         1.037 → 1.026         the bound +1.1% (the limit's LP runs longer),
//	                                                 the plan unchanged: a third of the gap is the
//	                                                 bound's, the rest whole nodes and the limit
//	web-mix-3000               1.019 → 1.015         the bound does not move (its LP has 6 rows),
//	                                                 the plan falls 0.4%: the rest is the plan's
//	deployments-100000         1.110 → 1.111         plan −0.9% (3,641 nodes, not 5,303), bound −1%:
//	                                                 the 16-row LP stops on its budget either way
//	                                                 and its bound (θ at the final duals) depends
//	                                                 on where; both sides share the gap
//	karpenter-mix-1000/5000    1.68, 1.93 → 1.68, 1.85   hostname constraints bind: the bound barely
//	karpenter-mix-drawn-1000   1.71 → 1.74           moves (its best is the first round's, Farley's
//	                                                 θ stays near 2 on a degenerate LP) while the
//	                                                 plan moves −1.7% to +1.3%: mostly the bound's
//	                                                 fault — a fifth of the pods go one per node,
//	                                                 and the LP stops far from converged.
//
// Measured on 2026-11-24 on main at 2afe241 with `cd benchmarks && go run ./cmd/bench -runs 1`
// and the same with -effort 8 (deterministic: the figures do not depend on the machine); the
// web-mix and Karpenter-mix rows again after the relaxed problem's LP changed (above), and the
// spot-od and web-mix rows on 2fbc187, after the plan's LPs got fewer guaranteed rounds, and
// the spot-od row again on ae382a2, after the pool LPs' new start (efc72c9).
//
// # Topology, affinity, ports and volumes
//
// Constraints become things the packer already understands, before packing:
//
//   - a topology spread over zones (or any label but the hostname) splits the groups it covers
//     into subgroups pinned to one domain each, sized so the final counts respect maxSkew and
//     minDomains, counting running pods and every pending pod the selector matches, whether
//     or not it carries the constraint (kube-scheduler counts them all, in whatever order they
//     bind: the plan holds every carrier within maxSkew of the final minimum, see spread.go);
//     domains are the zones the pools can launch into, as well as those with nodes today;
//   - pod affinity pins a group to the domains of the pods it selects — a pod counts when it
//     matches all of the group's required terms, running pods (terminating ones too) first,
//     then a pending group that matches without carrying the same terms; only when no such
//     pod exists do the groups carrying the terms start in one shared domain, the cheapest,
//     as kube-scheduler lets a pod satisfy its own affinity only when nothing else matches;
//     anti-affinity over zones is one pod per domain;
//   - over hostnames, constraints become per-node caps (maxSkew, or 1 for self anti-affinity),
//     caps shared by every group a selector matches (or, when the pods a spread's selector
//     matches without carrying it outnumber its carriers, a conflict keeping them off the
//     carriers' nodes), conflicts between groups, and existing
//     nodes a group must use or avoid — including the anti-affinity of running pods;
//   - host ports conflict per (IP, port, protocol), 0.0.0.0 with every IP, DaemonSets' included;
//   - volume zones from [Input.VolumeZones] narrow a group's zones.
//
// After packing, pods whose spread partners or affinity targets could not be placed are taken
// back rather than planned where kube-scheduler would refuse them, and so is one pod wherever
// spread carriers could wait on each other for good (spreadwait.go). Counts follow kube-scheduler
// (nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore by default). For hostname spread, any
// eligible node without the group's pods makes the minimum 0, so a node takes at most maxSkew
// pods of the group — the same minimum Karpenter assumes — but unlike Karpenter the running pods
// on each existing node are counted.
//
// # Preferences
//
// Preferred node affinity (the heaviest term), preferred pod affinity and anti-affinity,
// ScheduleAnyway spread and PreferNoSchedule taints are honoured when that costs at most
// [Options.PreferenceMargin] (5%) more than ignoring them, and dropped otherwise, one kind at a
// time: anti-affinity first, then spread, pod affinity, node affinity, taints. Node affinity is
// relaxed a term at a time, heaviest first, as Karpenter does: weights 100 (unsatisfiable), 50
// (zone b) and 1 (zone a) land in zone b. A preference never multiplies the node count.
// [PreferencesIgnore] ignores them all.
//
// # Explanations
//
// Every pod left unplaced gets an [Unschedulable] entry: a [Reason] code for programs and, for
// every NodePool considered, a sentence for people — which taint, which requirement, which limit,
// which zone, which spread and its domain counts, and the nearest instance type that missed.
//
// # Inside
//
// solve.go says what Solve does, in order: Validate; solveWithPreferences (preferences.go), which
// runs solveOnce once for each set of preferences it tries; and solveOnce, whose comment lists its
// ten steps, each one function, with what it reads and what it writes.
//
// There are two kinds of state. The model is a problem (problem.go), built once by newProblem
// and read by every step after: the pod groups (group.go), split, pinned and capped for topology;
// the pools and their shapes, one per instance type as a node of the pool (shape.go,
// dominance.go), and what their existing nodes take against their limits; the existing nodes
// and in-flight claims as bins (bin.go), with the room they had before the solve; and which
// group fits which shape, through which offerings. The packing state is a packState
// (problem.go): the pods each group has left, the room left on each bin and the pods placed
// there, the planned claims, each pool's usage against its limits, the pods set aside, the
// one-node groups that have their node, the groups minValues turned away. solveOnce creates it
// once the model is built and
// passes it, as the first argument, to each step that reads or writes it, each starting from
// what the one before left (placeOnBins(st), packNewNodes(st, pool, …), placeWith(st),
// enforceTopology(st), rejectMinValues(st), result(st, requests)); a step that does not take it
// cannot change it. Two things the steps write stay in the model, each said in its step's doc:
// the groups' values (setValues), which order the packers' choices; and, on a group
// enforceTopology takes pods back from, why (g.blocked). What one step needs only while it runs
// is passed from function to function, not stored: applyTopology, for one, hands the running
// pods and their anti-affinity terms to each of its steps; a packer is handed copies of the pods
// it may place and of the pool's usage, and returns its claims (packing.go), so two packers can
// race from the same start.
//
// The steps, by file:
//
//   - newProblem (problem.go) groups the pods and builds pools, shapes and bins; applyTopology
//     (topology.go) reads every group's constraints and rewrites the groups in named steps:
//     anti-affinity over zones, zone spreads (spread.go) and pod affinity (affinity.go), then
//     hostname spreads and anti-affinity as per-node caps and conflicts;
//   - valuePods (solve.go) runs the column generation (colgen.go) over column families
//     (families.go), priced by an integer knapsack (internal/knapsack, through families.go's
//     pricer) on a simplex master (lp.go);
//     its duals value the pods, and it proves the lower bound (bound.go);
//   - placeOnBins and placeWith (place.go) fill existing room and partners' nodes, growing a
//     partner's new node where its followers do not fit (grow.go);
//   - packNewNodes (packing.go) plans each pool's new nodes: rounding the LP's patterns, a
//     greedy packer (pack.go), a local search (improve.go), and on small plain pools a race
//     with first-fit-decreasing (ffd.go), each packer working on a packing value;
//   - enforceTopology (postcheck.go) takes back pods whose spread or affinity partners were
//     not placed, and spread carriers that could wait on each other forever (spreadwait.go);
//     rejectMinValues (output.go) splits claims whose options cannot meet minValues
//     (minvalues.go) and takes back the pods no claim can;
//   - result (output.go) writes the Result, and explain.go the reasons for every pod left.
//
// Leaves, which read none of the solver's working state: lp.go, the revised-simplex master;
// internal/knapsack, the integer knapsack (items, room, shared caps and conflicts in; counts
// out; its own small dense LP for bounds); internal/topology, the spread model (each
// constraint with kube-scheduler's defaults, which nodes it counts for a pod, the counts per
// domain, and the split of groups over domains that spread.go pins); and two packages —
// check, which judges a Result
// against its Input by Kubernetes' rules and shares no code with the solver, and
// schedulingtest, with random inputs, brute-force optimal oracles and a first-fit-decreasing
// baseline for tests and benchmarks. Facts about a single pod — its requests, terminal or not, its host ports, its
// affinity terms, DaemonSet or mirror — come from the root package (nodeplan.PodRequests,
// PodTerminal, PodHostPorts, PodAffinityTerms, DaemonSetOf, PodBelongsToNode), which
// disruption and the example controller use too.
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
