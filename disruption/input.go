package disruption

import (
	"errors"
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// Input is everything one planning pass looks at. Plan reads it and never modifies it.
type Input struct {
	// Nodes are the cluster's nodes with the pods bound to them. A node with a NodePool is
	// managed: the planner may disrupt it and explains why when it does not. A node without one
	// (a kubeadm control plane, a managed node group) is never disrupted but takes moved pods.
	Nodes []Node
	// Pending are pods not bound to any node. Capacity they would take on existing nodes is
	// reserved before consolidation looks for room, and the nodes they would land on count as
	// nominated, as in Karpenter. Pods that would need new nodes are the provisioner's concern.
	Pending []*corev1.Pod
	// NodePools give each managed node's disruption settings and budgets, and the pools
	// replacements are launched from.
	NodePools []nodeplan.NodePool
	// InstanceTypes is the catalog replacements are drawn from, and where node prices fall back
	// to when a Node has none.
	InstanceTypes []nodeplan.InstanceType
	// PoolInstanceTypes, when it has an entry for a pool, replaces InstanceTypes for that pool.
	PoolInstanceTypes map[string][]nodeplan.InstanceType
	// DaemonSets run a pod on every node that admits them: overhead on replacement nodes.
	DaemonSets []*appsv1.DaemonSet
	// PDBs are the PodDisruptionBudgets (policy/v1). Their allowed disruptions are computed from
	// the spec and the pods in this input (see [PDBAllowed]); Status.DisruptionsAllowed is used
	// only for a PDB whose spec sets neither minAvailable nor maxUnavailable.
	PDBs []*policyv1.PodDisruptionBudget
	// Namespaces give the labels pod-affinity namespaceSelectors match.
	Namespaces []*corev1.Namespace
	// VolumeZones pins pods to zones, keyed "namespace/name" (see scheduling.Input).
	VolumeZones map[string][]string
	// Now is the time budgets, schedules, expiry, consolidateAfter and do-not-disrupt durations
	// are judged at. The planner never reads the clock.
	Now time.Time
	// Options tune the planner; the zero value is the recommended default.
	Options Options
}

// Node is one node, its pods and what the controller knows about it beyond the Node object.
type Node struct {
	// Node is the Kubernetes Node; its name identifies the node in the plan, and its
	// annotations carry karpenter.sh/do-not-disrupt.
	Node *corev1.Node
	// Pods are bound to the node, DaemonSet and mirror pods included.
	Pods []*corev1.Pod
	// NodePool names the pool that owns the node; empty means unmanaged.
	NodePool string
	// InstanceType, Zone and CapacityType describe what the node was launched as.
	InstanceType string
	Zone         string
	CapacityType nodeplan.CapacityType
	// Price is what the node costs in USD per hour. Zero means unknown: the planner then uses
	// the catalog's price for the type, zone and capacity type, and without one will delete the
	// node but never replace it. Options.Scheduling.NodeCost is added to it (to a known price).
	Price float64
	// Created is when the node's claim was created; expireAfter counts from it.
	Created time.Time
	// Initialized is when the node became initialized; zero means it is not yet, and the planner
	// will neither disrupt it gracefully nor move pods onto it.
	Initialized time.Time
	// LastPodEvent is when a pod was last bound to or removed from the node; consolidateAfter
	// counts from the later of it and Initialized.
	LastPodEvent time.Time
	// Drift says why the node no longer matches its NodePool or node class (e.g.
	// "NodePoolDrifted", "AMIDrifted"), as the provider and drift detection report it; empty
	// means not drifted.
	Drift string
	// Nominated is true when the scheduler or provisioner has chosen the node for a pending pod.
	Nominated bool
	// Disrupting is true while the node is already being disrupted (tainted, draining or
	// awaiting its replacements); it counts against its pool's budgets.
	Disrupting bool
	// AttachLimit and VolumeCount are passed to the solver (CSI attach limits).
	AttachLimit, VolumeCount int
	// Interruption, when set, is a notice from the provider that the node will go away.
	Interruption *Interruption
	// TerminationGracePeriod is the node's NodeClaim's spec.terminationGracePeriod, when the
	// caller knows the claim; nil means unknown, and the NodePool's template stands in. With
	// one, drift ignores do-not-disrupt pods and PDBs, which then hold the drain only until it
	// runs out (Karpenter reads the claim's, which keeps the value it launched with).
	TerminationGracePeriod *time.Duration
}

// Name returns the node's name, or "" when Node is nil.
func (n *Node) Name() string {
	if n.Node == nil {
		return ""
	}
	return n.Node.Name
}

// Interruption is a provider's notice that a node's instance is going away.
type Interruption struct {
	// Kind is the provider's event, e.g. "SpotInterruption", "ScheduledChange",
	// "InstanceStopping".
	Kind string
	// Deadline is when the instance goes away; zero when unknown.
	Deadline time.Time
}

// Options tune the planner. Every zero field means its default.
type Options struct {
	// SavingsThreshold is the least a replacement must save, as a fraction of the replaced
	// nodes' price: below it a move is churn. Zero means 0.10 (10%); a negative value accepts
	// any strictly positive saving. Deletes always save 100%.
	SavingsThreshold float64
	// SpotFlexibility is how many instance types strictly cheaper than a spot node a spot→spot
	// replacement must be able to launch as, so the spot allocation strategy cannot pick one
	// that is consolidated again at once; the replacement is cut to that many cheapest types.
	// Zero means 15 (Karpenter's fixed value); negative forbids spot→spot replacement.
	SpotFlexibility int
	// ExpirationHonorsBudgets holds expiration to the NodePools' budgets and their schedules
	// (reason Expired) instead of disrupting expired nodes at once.
	ExpirationHonorsBudgets bool
	// AllowUnownedPods treats pods without a controller owner as reschedulable. By default such
	// a pod, which nothing would recreate, blocks graceful disruption of its node.
	AllowUnownedPods bool
	// MaxSimulations bounds the scheduling simulations one pass runs; candidates left
	// unevaluated are reported with [CodeNotEvaluated] and come up in a later pass. Zero means
	// 24. Deletes whose pods are all plain (no inter-pod terms, host ports or volumes) are proven
	// without the solver and do not count.
	MaxSimulations int
	// MaxCandidates bounds the nodes multi-node consolidation considers at once. Zero means 25
	// (Karpenter takes 100): smaller sets are feasible more often and cheaper to simulate.
	MaxCandidates int
	// Methods are the steps a pass runs; zero means all of them. A node that only a method
	// left out would disrupt stays, with [CodeMethodNotRun].
	Methods Methods
	// Scheduling tunes the solver used to simulate moves.
	Scheduling scheduling.Options
}

func (o Options) savingsThreshold() float64 {
	switch {
	case o.SavingsThreshold == 0:
		return 0.10
	case o.SavingsThreshold < 0:
		return 0
	}
	return o.SavingsThreshold
}

func (o Options) spotFlexibility() int {
	if o.SpotFlexibility == 0 {
		return 15
	}
	return o.SpotFlexibility
}

func (o Options) maxSimulations() int {
	if o.MaxSimulations <= 0 {
		return 24
	}
	return o.MaxSimulations
}

func (o Options) maxCandidates() int {
	if o.MaxCandidates <= 0 {
		return 25
	}
	return o.MaxCandidates
}

// Validate reports every problem with the input at once: nodes without a name or duplicated,
// pods without a name or on two nodes, pools without a name or duplicated, negative prices
// and node costs, budgets that cannot be evaluated. Plan calls it first.
func (in *Input) Validate() error {
	var errs []error
	nodes := map[string]bool{}
	pods := map[string]bool{}
	addPod := func(where string, p *corev1.Pod) {
		if p == nil {
			errs = append(errs, fmt.Errorf("disruption: %s has a nil pod", where))
			return
		}
		if p.Name == "" {
			errs = append(errs, fmt.Errorf("disruption: %s has a pod without a name", where))
			return
		}
		k := nodeplan.PodKey(p)
		if pods[k] {
			errs = append(errs, fmt.Errorf("disruption: pod %s appears twice", k))
		}
		pods[k] = true
	}
	for i := range in.Nodes {
		n := &in.Nodes[i]
		name := n.Name()
		if name == "" {
			errs = append(errs, fmt.Errorf("disruption: Nodes[%d] has no node or no name", i))
			continue
		}
		if nodes[name] {
			errs = append(errs, fmt.Errorf("disruption: node %s appears twice", name))
		}
		nodes[name] = true
		if n.Price < 0 || math.IsNaN(n.Price) || math.IsInf(n.Price, 0) {
			errs = append(errs, fmt.Errorf("disruption: node %s has price %v; want a non-negative $/h", name, n.Price))
		}
		for _, p := range n.Pods {
			addPod("node "+name, p)
		}
	}
	for _, p := range in.Pending {
		addPod("Pending", p)
	}
	pools := map[string]bool{}
	for i, np := range in.NodePools {
		if np.Name == "" {
			errs = append(errs, fmt.Errorf("disruption: NodePools[%d] has no name", i))
			continue
		}
		if pools[np.Name] {
			errs = append(errs, fmt.Errorf("disruption: NodePool %q appears twice", np.Name))
		}
		pools[np.Name] = true
		for j, b := range np.Disruption.Budgets {
			if b.Nodes.Value < 0 || (b.Nodes.Percent && b.Nodes.Value > 100) {
				errs = append(errs, fmt.Errorf("disruption: NodePool %q budgets[%d]: nodes %s is not a count or a percentage 0-100%%", np.Name, j, b.Nodes))
			}
			if b.Schedule != nil && b.Duration <= 0 {
				errs = append(errs, fmt.Errorf("disruption: NodePool %q budgets[%d]: a schedule needs a positive duration", np.Name, j))
			}
		}
	}
	for i, pdb := range in.PDBs {
		if pdb == nil || pdb.Name == "" {
			errs = append(errs, fmt.Errorf("disruption: PDBs[%d] is nil or has no name", i))
		}
	}
	if in.Options.SavingsThreshold >= 1 {
		errs = append(errs, fmt.Errorf("disruption: Options.SavingsThreshold %v leaves nothing to save; want a fraction below 1", in.Options.SavingsThreshold))
	}
	if err := in.Options.Scheduling.NodeCost.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
