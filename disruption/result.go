package disruption

import (
	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// Result is one pass's decision: the commands to carry out and, for every managed node not in a
// command, why not. Slices are in a stable order (documented per field), so equal inputs give
// results cmp.Diff finds equal.
type Result struct {
	// Commands are disjoint and may all be carried out at once: together they fit every budget
	// and every PDB, and every moved pod fits on the nodes that remain plus the replacements.
	// Interruption and expiration commands come first, then emptiness, drift and
	// consolidation, in the order they were chosen; each budget holds for every prefix.
	Commands []Command
	// Blocked explains every managed node that is in no command, by node name.
	Blocked []Blocked
	// Savings is the $/h the commands save together (negative when drift or expiry replaces
	// nodes with dearer ones).
	Savings float64
	// Simulations is how many scheduling simulations the pass ran.
	Simulations int
}

// Action is what a command does to its nodes.
type Action string

const (
	// ActionDelete removes the nodes; their pods fit on nodes that stay.
	ActionDelete Action = "Delete"
	// ActionReplace launches Replacements first, then removes the nodes.
	ActionReplace Action = "Replace"
)

// Command disrupts a set of nodes for one reason.
type Command struct {
	Action Action
	Reason nodeplan.DisruptionReason
	// Nodes are the names of the nodes to remove, sorted.
	Nodes []string
	// NodePools are the pools of Nodes, sorted and unique.
	NodePools []string
	// Replacements are the NodeClaims to launch, and see initialized, before Nodes are tainted
	// and drained. Their pods are the keys of moved pods planned onto them; their
	// InstanceTypeOptions are trimmed so any option the cloud picks keeps the saving.
	Replacements []scheduling.NewNodeClaim
	// Moves lists moved pods planned onto existing nodes, by node name.
	Moves []scheduling.Placement
	// Pods are the keys of every pod the command evicts (DaemonSet and mirror pods excluded),
	// sorted.
	Pods []string
	// OneAtATime names, sorted ("namespace/name"), the PDBs that cover more than one of a
	// node's Pods. The pass counts one eviction of each PDB per node, as Karpenter does (every
	// PDB must allow one), so the drain evicts those pods one at a time: the Eviction API
	// answers 429 until the PDB allows the next, once the pod evicted before it has a Ready
	// replacement.
	OneAtATime []string
	// Unplaced are evicted pods the simulation found no room for; only forceful commands have
	// any. They go pending and the provisioner takes them.
	Unplaced []string
	// Price is the $/h of Nodes now; ReplacementPrice the $/h of Replacements judged at the
	// worst price any of their options could launch at; Savings the difference. Every node's
	// price includes its pool's Options.Scheduling.NodeCost.
	Price, ReplacementPrice, Savings float64
	// Disruption is the eviction cost of Pods (Karpenter's: 1 per node plus each pod's cost
	// from priority and pod-deletion-cost).
	Disruption float64
	// Mode is how the command is carried out: whether do-not-disrupt pods and PDBs hold its
	// drain throughout or only until the terminationGracePeriod, and whether the drain waits
	// for the Replacements. The method that made the command decides it.
	Mode Mode
}

// Mode is how a command's drain treats what would hold it back (see the execution contract in
// the package doc).
type Mode string

const (
	// ModeGraceful: the Replacements are launched and initialized first; do-not-disrupt pods
	// and PDBs hold the drain throughout, and one found when the drain starts or at a pod's
	// eviction cancels the command (the nodes are untainted and stay). Emptiness,
	// consolidation, and drift of nodes without a terminationGracePeriod.
	ModeGraceful Mode = "Graceful"
	// ModeForceful: the Replacements are launched and initialized first; do-not-disrupt pods
	// and PDBs hold the drain only until the node's terminationGracePeriod, and never cancel
	// it. Expiration, and drift of nodes with a terminationGracePeriod (Karpenter's eventual
	// class).
	ModeForceful Mode = "Forceful"
	// ModeImmediate: forceful, and the drain starts at once, without waiting for the
	// Replacements to initialize: the instance is going away. Interruption.
	ModeImmediate Mode = "Immediate"
)

// PlannedReplacementPrice is the $/h of Replacements at the offerings the solver chose and
// costed them at (NewNodeClaim.Offering.Price), each with its pool's per-node cost from
// nodeCost, which must be the planner's (Options.Scheduling.NodeCost) so that it compares with
// Price. It is the figure to report for what the new nodes cost; ReplacementPrice is the worst
// case the planner decided by.
func (c *Command) PlannedReplacementPrice(nodeCost scheduling.NodeCost) float64 {
	total := 0.0
	for _, r := range c.Replacements {
		total += r.Offering.Price + nodeCost.For(r.NodePool)
	}
	return total
}

// Forceful reports whether the command's drain ignores do-not-disrupt pods and PDBs once the
// terminationGracePeriod runs out, rather than being held and cancelled by them. A Command
// whose Mode is unset (one a caller built) is graceful, the safe reading.
func (c *Command) Forceful() bool { return c.Mode == ModeForceful || c.Mode == ModeImmediate }

// Blocked says why a managed node is in no command.
type Blocked struct {
	Node     string
	NodePool string
	Code     Code
	// Object names what blocked it: a pod ("namespace/name"), a PDB ("namespace/name"), a
	// budget ("pool/budgets[i]"), an instance type; empty when nothing more specific applies.
	Object string
	// Message is a sentence a person can act on.
	Message string
}

// Code is a stable reason a node was not disrupted.
type Code string

// The codes, roughly in the order the planner checks them.
const (
	// CodeNoNodePool: the node names a NodePool that is not in the input.
	CodeNoNodePool Code = "NoNodePool"
	// CodeDisrupting: the node is already being disrupted.
	CodeDisrupting Code = "Disrupting"
	// CodeNotInitialized: the node has not finished initializing.
	CodeNotInitialized Code = "NotInitialized"
	// CodeNominated: a pending pod is headed for the node.
	CodeNominated Code = "Nominated"
	// CodeDoNotDisruptNode: the node carries karpenter.sh/do-not-disrupt: "true".
	CodeDoNotDisruptNode Code = "DoNotDisruptNode"
	// CodeDoNotDisruptPod: a pod on the node carries an active karpenter.sh/do-not-disrupt.
	CodeDoNotDisruptPod Code = "DoNotDisruptPod"
	// CodePDB: evicting the node's pods would exceed a PodDisruptionBudget.
	CodePDB Code = "PDB"
	// CodeUnreschedulable: a pod on the node has no controller that would recreate it.
	CodeUnreschedulable Code = "Unreschedulable"
	// CodeBudget: the NodePool's disruption budget allows no more nodes now.
	CodeBudget Code = "Budget"
	// CodeConsolidationDisabled: the pool's consolidateAfter is Never.
	CodeConsolidationDisabled Code = "ConsolidationDisabled"
	// CodeConsolidateAfter: a pod arrived or left too recently.
	CodeConsolidateAfter Code = "ConsolidateAfter"
	// CodeWhenEmpty: the pool consolidates only empty nodes and this one has pods.
	CodeWhenEmpty Code = "WhenEmpty"
	// CodeUnknownPrice: the node's price is unknown, so no replacement can be judged cheaper.
	CodeUnknownPrice Code = "UnknownPrice"
	// CodePodsDoNotFit: a pod has nowhere to go, not even on a new node.
	CodePodsDoNotFit Code = "PodsDoNotFit"
	// CodeNotCheaper: the pods do not fit elsewhere and no replacement costs less.
	CodeNotCheaper Code = "NotCheaper"
	// CodeBelowThreshold: a replacement is cheaper, but by less than Options.SavingsThreshold.
	CodeBelowThreshold Code = "BelowThreshold"
	// CodeLikeForLike: the only cheaper replacement is the same instance type and capacity type.
	CodeLikeForLike Code = "LikeForLike"
	// CodeSpotFlexibility: a spot→spot replacement has too few cheaper instance types.
	CodeSpotFlexibility Code = "SpotFlexibility"
	// CodeNotEvaluated: the pass reached Options.MaxSimulations before simulating this node.
	CodeNotEvaluated Code = "NotEvaluated"
	// CodeReceivesPods: pods of a node disrupted in this pass move onto this one, so it stays.
	CodeReceivesPods Code = "ReceivesPods"
	// CodeOutranked: a feasible move exists but a better one took the room, the budget or the
	// PDB allowance it needed; a later pass reconsiders it.
	CodeOutranked Code = "Outranked"
	// CodeDependsOnPass: the node's pods are counted by the topology spread or required pod
	// affinity of a pod another command of this pass moves, and evicting them would leave that
	// pod nowhere to bind; a later pass reconsiders the node.
	CodeDependsOnPass Code = "DependsOnPass"
	// CodeMethodNotRun: the method that would consider the node (drift, consolidation, …) is
	// not among Options.Methods.
	CodeMethodNotRun Code = "MethodNotRun"
)
