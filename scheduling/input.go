package scheduling

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

// Input is everything one solve looks at. The solver reads it and never modifies it.
type Input struct {
	// Pods are the pending pods to place. Pods with spec.nodeName set are ignored here (bound
	// pods belong in Nodes). Each needs a unique namespace/name.
	Pods []*corev1.Pod
	// NodePools may launch new nodes, highest Weight first (ties by name).
	NodePools []nodeplan.NodePool
	// InstanceTypes is the catalog every NodePool draws from.
	InstanceTypes []nodeplan.InstanceType
	// PoolInstanceTypes, when it has an entry for a pool's name, replaces InstanceTypes for that
	// pool — e.g. the per-node-class list a cloudprovider returns.
	PoolInstanceTypes map[string][]nodeplan.InstanceType
	// DaemonSets run a pod on every node whose labels and taints admit it; those pods' requests
	// and host ports are overhead on exactly those nodes.
	DaemonSets []*appsv1.DaemonSet
	// Nodes are the existing nodes with the pods bound to them. Pending pods go onto their
	// free capacity first; bound pods never move.
	Nodes []Node
	// NodeClaims are claims launched or about to be, whose nodes have not registered yet. Pending
	// pods use their spare room before new claims are made. Status.Allocatable (or, before
	// launch, the smallest instance-type option) gives their size. A claim being deleted
	// (DeletionTimestamp) takes no pod but counts for its pool's limits.
	NodeClaims []nodeplan.NodeClaim
	// Namespaces give the labels that pod-affinity namespaceSelectors match.
	Namespaces []*corev1.Namespace
	// VolumeZones restricts pods to zones, keyed by "namespace/name": the zones where their
	// bound PersistentVolumes live or their StorageClass's allowedTopologies permit. The solver
	// does no I/O; the caller resolves volumes.
	VolumeZones map[string][]string
	// Pins restricts pods to one existing node each, keyed by "namespace/name": the pod may
	// go only to that node of Nodes, while its topology spread still counts the nodes its own
	// node selection admits. For a caller re-checking a placement it made before (the
	// disruption planner: a pod moved by an earlier command of the same pass); a pod's node
	// affinity on the node's name would narrow the counted nodes too.
	Pins map[string]string
	// Options tune the solver; the zero value is the recommended default.
	Options Options
}

// Node is an existing node and the pods bound to it.
type Node struct {
	Node *corev1.Node
	// Pods are bound to the node, DaemonSet pods included.
	Pods []*corev1.Pod
	// AttachLimit, when positive, caps the volumes attachable to the node (CSI attach limit);
	// VolumeCount is how many are attached now.
	AttachLimit, VolumeCount int
	// NoNewPods says the solve may place no pending pod on the node, while its pods still
	// count for topology spread and pod affinity and anti-affinity exactly as kube-scheduler
	// counts them — by the node's own labels and taints. For a caller simulating a change (the
	// disruption planner: a node being disrupted, not initialized, full, or a stand-in for
	// nodes elsewhere) rather than describing a node kube-scheduler would refuse pods on.
	NoNewPods bool
}

// DeletingNodePods moves off nodes being deleted ([nodeplan.NodeDeleting]: a deletionTimestamp,
// or the karpenter.sh/disrupted:NoSchedule taint) the pods Karpenter provisions room for ahead of
// their eviction ([nodeplan.PodReschedulable]), so a plan gives them capacity rather than leaving
// them to go pending when the node drains. It returns them as pending pods — copies without
// spec.nodeName, sorted by key, to add to Input.Pods — and nodes like the given ones but with
// those pods taken off: they no longer count for spread or affinity there, as Karpenter counts
// them only where it places them. The solver places no pod on a node being deleted; the pods it
// keeps (DaemonSet, mirror, do-not-disrupt) stay bound there. now is when do-not-disrupt
// durations are read.
func DeletingNodePods(nodes []Node, now time.Time) (pods []*corev1.Pod, rest []Node) {
	rest = slices.Clone(nodes)
	for i := range rest {
		n := &rest[i]
		if n.Node == nil || !nodeplan.NodeDeleting(n.Node) {
			continue
		}
		var kept []*corev1.Pod
		for _, p := range n.Pods {
			if !nodeplan.PodReschedulable(p, now) {
				kept = append(kept, p)
				continue
			}
			// The copy stands for the pod to come: unbound, and not terminating (a StatefulSet's
			// terminating pod is replaced by one of the same name).
			c := p.DeepCopy()
			c.Spec.NodeName = ""
			c.DeletionTimestamp, c.DeletionGracePeriodSeconds = nil, nil
			pods = append(pods, c)
		}
		n.Pods = kept
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(nodeplan.PodKey(a), nodeplan.PodKey(b)) })
	return pods, rest
}

// PreferencePolicy says how soft constraints (preferred node and pod affinity, ScheduleAnyway
// spread, PreferNoSchedule taints) are treated.
type PreferencePolicy string

const (
	// PreferencesCostAware honours preferences where that costs at most Options.PreferenceMargin
	// more than ignoring them, and relaxes them otherwise. It is the default.
	PreferencesCostAware PreferencePolicy = "CostAware"
	// PreferencesIgnore ignores every preference: Karpenter's PREFERENCE_POLICY=Ignore.
	PreferencesIgnore PreferencePolicy = "Ignore"
	// PreferencesRespect honours preferences whatever they cost, relaxing them (in the
	// CostAware order) only where honouring them would leave a pod unplaced: Karpenter's
	// PREFERENCE_POLICY=Respect, its default. PreferenceMargin does not apply.
	PreferencesRespect PreferencePolicy = "Respect"
)

// MinValuesPolicy says what a claim whose instance types cannot meet its pool's minValues
// does: Karpenter's MIN_VALUES_POLICY.
type MinValuesPolicy string

const (
	// MinValuesStrict never launches a claim short of minValues: it is split until each part
	// meets them, and pods none can meet them for stay pending (ReasonMinValues). The default.
	MinValuesStrict MinValuesPolicy = "Strict"
	// MinValuesBestEffort launches such a claim with the types there are, its minValues
	// lowered, and annotates it karpenter.sh/nodeclaim-min-values-relaxed=true, as Karpenter
	// does.
	MinValuesBestEffort MinValuesPolicy = "BestEffort"
)

// Options tune the solver. Every zero field means its default.
type Options struct {
	// Preferences; empty means PreferencesCostAware.
	Preferences PreferencePolicy
	// MinValues; empty means MinValuesStrict.
	MinValues MinValuesPolicy
	// PreferenceMargin is the extra cost, as a fraction of the plan's cost, that honouring
	// preferences may add. Zero means 0.05 (5%); negative means honour only free preferences.
	PreferenceMargin float64
	// MaxInstanceTypes caps each NodeClaim's InstanceTypeOptions; zero means 60 (what EC2
	// CreateFleet takes). MinValues may raise it for a claim.
	MaxInstanceTypes int
	// ImprovementRounds bounds the local search that improves the first packing; zero means
	// the default (enough for the benchmarks to converge), negative turns it off.
	ImprovementRounds int
	// SkipLowerBound leaves Result.LowerBound at 0 and skips the work of proving it (about
	// half of a solve): for callers that only need the plan, such as the disruption planner's
	// simulations. The plan is the same.
	SkipLowerBound bool
	// Effort scales the work the solver spends on its linear program (see colgen.go):
	// zero means 1; 4 spends up to four times as much for a tighter bound and, on workloads
	// full of per-node caps (hostname spread, anti-affinity), a cheaper plan. The work is
	// counted, not timed, so plans stay deterministic.
	Effort float64
	// NodeCost is what a node costs beyond its instance's price; the zero value adds nothing.
	NodeCost NodeCost
}

// Validate reports every problem with the input at once: pods without a name, duplicate pods,
// pools without a name or with duplicate names, instance types without a name, offerings with a
// non-positive price. Solve calls it first.
func (in *Input) Validate() error {
	errs := validatePods(in.Pods)
	pools := map[string]bool{}
	for i, np := range in.NodePools {
		if np.Name == "" {
			errs = append(errs, fmt.Errorf("scheduling: NodePools[%d] has no name", i))
		} else if pools[np.Name] {
			errs = append(errs, fmt.Errorf("scheduling: NodePool %q appears twice", np.Name))
		}
		pools[np.Name] = true
	}
	checkTypes := func(where string, its []nodeplan.InstanceType) {
		for i, it := range its {
			if it.Name == "" {
				errs = append(errs, fmt.Errorf("scheduling: %s[%d] has no name", where, i))
			}
			for j, o := range it.Offerings {
				if o.Available && !(o.Price > 0) {
					errs = append(errs, fmt.Errorf("scheduling: instance type %s offering %d (%s %s) has price %v; an available offering needs a positive price", it.Name, j, o.Zone, o.CapacityType, o.Price))
				}
			}
		}
	}
	checkTypes("InstanceTypes", in.InstanceTypes)
	for name, its := range in.PoolInstanceTypes {
		checkTypes("PoolInstanceTypes["+name+"]", its)
	}
	for i, n := range in.Nodes {
		if n.Node == nil || n.Node.Name == "" {
			errs = append(errs, fmt.Errorf("scheduling: Nodes[%d] has no node or no name", i))
		}
	}
	switch in.Options.Preferences {
	case "", PreferencesCostAware, PreferencesIgnore, PreferencesRespect:
	default:
		errs = append(errs, fmt.Errorf("scheduling: Options.Preferences %q is not CostAware, Respect or Ignore", in.Options.Preferences))
	}
	switch in.Options.MinValues {
	case "", MinValuesStrict, MinValuesBestEffort:
	default:
		errs = append(errs, fmt.Errorf("scheduling: Options.MinValues %q is not Strict or BestEffort", in.Options.MinValues))
	}
	errs = append(errs, in.Options.NodeCost.validate()...)
	return errors.Join(errs...)
}

// validatePods reports, in the pods' order, nil and unnamed pods and pods whose key
// (nodeplan.PodKey, by which results, pins and volume zones name pods) an earlier pod has. The keys
// are cut from one string (nodeplan.PodKeys) and the set of them is sized up front, so the check
// allocates a few times a solve, not once or more a pod.
func validatePods(pods []*corev1.Pod) []error {
	unnamed := func(p *corev1.Pod) bool { return p == nil || p.Name == "" }
	named := pods
	if slices.ContainsFunc(pods, unnamed) {
		named = slices.DeleteFunc(slices.Clone(pods), unnamed)
	}
	keys := nodeplan.PodKeys(named)
	seen := make(map[string]bool, len(keys))
	var errs []error
	for i, p := range pods {
		switch {
		case p == nil:
			errs = append(errs, fmt.Errorf("scheduling: Pods[%d] is nil", i))
		case p.Name == "":
			errs = append(errs, fmt.Errorf("scheduling: Pods[%d] has no name", i))
		default:
			k := keys[0]
			if seen[k] {
				errs = append(errs, fmt.Errorf("scheduling: pod %s appears twice in Pods", k))
			}
			seen[k], keys = true, keys[1:]
		}
	}
	return errs
}
