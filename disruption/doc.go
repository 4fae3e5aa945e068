// Package disruption is nodeplan's disruption planner: given the cluster's nodes and pods, the
// NodePools with their budgets, the catalog and the PodDisruptionBudgets, [Plan] decides which
// nodes to delete or replace in this pass — and, for every managed node it leaves alone, says
// why, with a [Code] a program can branch on and a sentence a person can act on.
//
// It is pure: no I/O, no clock (Input.Now is the time), no logging, nothing kept between calls.
// Equal inputs give results cmp.Diff finds equal. It simulates moves with [scheduling.Solve];
// it does not carry them out — that is the controller's job, under the contract below.
//
// # Methods
//
// In one pass, in this order, each seeing what the ones before it took:
//
//   - Interruption: nodes with a provider notice (spot interruption, scheduled change) are
//     replaced at once, outside budgets, with replacements for their pods in the same command.
//   - Expiration: nodes older than their pool's expireAfter are replaced at once, like
//     Karpenter's, or within budgets and their schedules when Options.ExpirationHonorsBudgets is
//     set (what Karpenter's users ask for). Unlike Karpenter, replacements are pre-launched.
//   - Emptiness: nodes with no pods but DaemonSet and mirror pods, under every policy, once
//     consolidateAfter has passed.
//   - Drift: drifted nodes are replaced, as many per pass as budgets allow (Karpenter replaces
//     one per pass, so rollouts on thousands of nodes take days), simulated in groups.
//   - Consolidation (WhenEmptyOrUnderutilized): deletes where the pods fit elsewhere and
//     replacements where new nodes cost less — from one node or many, and by one node or many
//     (M→N; Karpenter only does M→1).
//
// Each method is one file — interruption.go, expiration.go, emptiness.go, drift.go,
// consolidation.go (its searches in consolidation_multi.go and consolidation_single.go) — with
// its type, its Options.Methods bit, the reason and [Mode] of its commands, which nodes it
// takes and how it plans them; method.go registers them in pass order and holds the checks
// they share. Adding a method is one file plus its line in registered.
//
// A pass emits several disjoint commands — Karpenter acts once per pass — chosen so that they fit
// every budget and every PDB together, and so that every moved pod fits on the nodes that remain
// plus the replacements, all at once. Carried out together, every moved pod is pending at the
// same time, so a command simulated after another re-checks the other's moved pods whose
// DoNotSchedule spread or required pod affinity counts its own pods (pinned to their
// destinations); when one would no longer bind, its nodes wait for a later pass
// (CodeDependsOnPass). While the moved pods bind, the nodes the pass removes still count as
// topology domains — tainted and empty — as kube-scheduler sees them.
//
// # How consolidation chooses
//
// Candidates are ranked by price per unit of disruption (Karpenter's eviction cost: pods,
// priority, pod-deletion-cost). A cheap screen — do the pods fit in all other nodes' free room
// together, could any new nodes for them cost less — drops hopeless candidates without a
// simulation. Then multi-node sets (prefixes of the ranking, up to Options.MaxCandidates, sized
// by bisection as in Karpenter, keeping the best feasible set rather than the last) and single
// nodes are simulated, up to Options.MaxSimulations solver runs. The feasible moves are taken
// best first — most $/h saved per unit of disruption — while budgets and PDBs allow; a move
// whose destinations an earlier one changed is simulated again.
//
// Simulations are kept small so large clusters plan fast. When every pod of a set is plain (no
// inter-pod terms, host ports or volumes, only cpu and memory), the planner places them itself,
// best fit onto the nodes that stay, checking resources, node selectors, node affinity and
// taints: an exact proof that a delete is feasible, with no solver run. Otherwise the solver
// places the pods that inter-pod terms concern and the plain ones go best fit around them. It is
// offered the 128 roomiest nodes that fit some pod of the set, and every other node whose pods
// matter to the moving pods' inter-pod terms for counting only — merged into one stand-in per
// label set when no term is per hostname. Plans stay valid on the whole cluster; they may miss a
// tighter packing.
//
// A replacement is judged at the worst price it could launch at: for each instance-type option,
// the dearest available offering the claim's requirements allow, since the cloud picks the zone
// and, when both are allowed, spot or on-demand. A claim open to both is pinned to spot. The
// options are trimmed to those within 10% of the cheapest (and never past the saving), and the
// set is judged at its dearest kept option, so the saving holds whichever the cloud launches.
// Moves are refused when they save less than Options.SavingsThreshold (10% by default), when a
// 1→1 replacement would be the same instance type and capacity type (like-for-like churn), and
// when a spot→spot replacement has fewer than Options.SpotFlexibility (15) cheaper types.
//
// # Safety
//
// A node is a candidate only when initialized, not nominated for a pending pod (nor the place
// pending pods would go), without karpenter.sh/do-not-disrupt: "true", and past its pool's
// consolidateAfter. A pod with an active do-not-disrupt ("true", or a duration from its start),
// a pod no controller would recreate (unless Options.AllowUnownedPods), or a PDB that cannot take
// the evictions keeps graceful methods (emptiness, consolidation, drift on pools without a
// terminationGracePeriod) away from its node. PDBs are computed from their spec and the pods in
// the input ([PDBAllowed]). As in Karpenter, a node is a candidate when every PDB covering its
// pods allows at least one eviction: its drain takes one eviction of each at a time, however
// many of the PDB's pods the node has (Command.OneAtATime names the PDBs this serialises). The
// nodes of all commands in a pass that drain a PDB's pods at once must fit its allowance
// together, one eviction per node. Budgets are per pool and reason, with cron schedules in UTC,
// percentages rounded up, the minimum of the active ones, nodes already disrupting counted.
// Interruption and expiration (unless budgeted) are forceful: they ignore budgets and pod
// blockers, but count against both, so graceful commands get only what is left.
//
// # Execution contract
//
// The controller carries out each [Command] in this order:
//
//  1. Launch the Replacements and wait until every one is initialized. If one fails, abandon
//     the command: nothing has been touched yet.
//  2. Taint the Nodes with karpenter.sh/disrupted:NoSchedule so nothing new lands on them.
//  3. Drain them through the Eviction API, which enforces PDBs; a 429 means retry later. A
//     PDB allowing one eviction lets the drain evict its pods one at a time, each once the
//     pod evicted before it has a Ready replacement (Command.OneAtATime).
//  4. Only when the NodePool's terminationGracePeriod runs out may the remaining pods be
//     deleted without eviction; with no terminationGracePeriod the drain waits.
//  5. Delete the instances.
//
// Command.Mode says how: a graceful command is held by do-not-disrupt pods and PDBs throughout
// and cancelled when one blocks it; a forceful one only until step 4; an immediate one
// (interruption: the instance will not wait) also skips waiting in step 1, but still launches
// its replacements first. Commands are independent: moved pods only count on
// nodes no command removes, never on another command's replacements.
//
// # What it does not do
//
// It does not detect drift (Node.Drift carries the provider's verdict), watch the cluster,
// remember earlier passes, or rate-limit: budgets cap nodes disrupting at once, and a pass
// counts the nodes already disrupting.
//
// # Usage
//
//	res, err := disruption.Plan(ctx, disruption.Input{
//		Nodes:         nodes, // with their pods, pool, type, price, times, drift
//		Pending:       pending,
//		NodePools:     pools,
//		InstanceTypes: catalog,
//		PDBs:          pdbs,
//		Now:           now,
//	})
//	for _, c := range res.Commands {
//		// launch c.Replacements, wait, taint and drain c.Nodes, delete them
//	}
//	for _, b := range res.Blocked {
//		// b.Node stays: b.Code, b.Message
//	}
package disruption
