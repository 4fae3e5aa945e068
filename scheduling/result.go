package scheduling

import "github.com/nodeplan/nodeplan"

// Result is the solver's decision. Every slice is in a stable order (documented per field), so
// equal inputs give results cmp.Diff finds equal.
type Result struct {
	// NodeClaims are the nodes to launch, in launch order (pool weight, then as packed). Each
	// carries its pods and the offering the cost is computed from.
	NodeClaims []NewNodeClaim
	// Existing lists pending pods placed on existing nodes, by node name.
	Existing []Placement
	// InFlight lists pending pods placed on in-flight NodeClaims, by claim name.
	InFlight []Placement
	// Unschedulable lists every pending pod that could not be placed, with why, by pod key.
	Unschedulable []Unschedulable
	// Cost is the $/h of the new NodeClaims (len(NodeClaims) nodes), each at its chosen
	// offering's price plus its pool's Options.NodeCost.
	Cost float64
	// NodeCost is the part of Cost that is Options.NodeCost: Cost-NodeCost is what the
	// instances alone cost.
	NodeCost float64
	// LowerBound is a $/h no plan can beat for placing the same pods on new nodes from this
	// catalog, node costs included (pods placed on existing capacity count as free). Cost/LowerBound tells how far
	// from optimal the plan can be.
	LowerBound float64
}

// NewNodeClaim is a node to launch and the pods it is for.
type NewNodeClaim struct {
	nodeplan.NodeClaim
	// Pods are the keys ("namespace/name") of the pending pods planned onto the node, sorted.
	Pods []string
	// InstanceType and Offering are the cheapest choice among InstanceTypeOptions that fits the
	// claim's requirements: what Cost counts. A provider may fall back to a later option.
	InstanceType string
	Offering     nodeplan.Offering
}

// Placement is pods placed onto a node or claim that already exists.
type Placement struct {
	// Name is the node's or the claim's name.
	Name string
	// Pods are pod keys, sorted.
	Pods []string
}

// Unschedulable is a pod the solver could not place, and why.
type Unschedulable struct {
	// Pod is the pod's key, "namespace/name".
	Pod string
	// Code is the reason a program can branch on: the most telling of the per-pool reasons.
	Code Reason
	// Message is one sentence per NodePool considered, most useful first, joined by "; ".
	Message string
	// Pools holds the reason for each NodePool considered, most useful first.
	Pools []PoolReason
}

// PoolReason is why one NodePool could not take a pod.
type PoolReason struct {
	NodePool string
	Code     Reason
	// Message is a sentence a person can act on, e.g. "nodepool gpu: taint
	// nvidia.com/gpu=true:NoSchedule not tolerated".
	Message string
}

// Reason is a stable code for why a pod could not be placed.
type Reason string

// The reasons, from least to most specific: a reason later in the list means the pod got further.
const (
	// ReasonNoNodePool: there is no NodePool at all.
	ReasonNoNodePool Reason = "NoNodePool"
	// ReasonNodePoolUnavailable: the pool launches no node for pods now — it is static
	// (replicas), being deleted, or its Ready condition is not True
	// ([nodeplan.NodePool.CanLaunch]).
	ReasonNodePoolUnavailable Reason = "NodePoolUnavailable"
	// ReasonTaint: the pool's taints are not tolerated.
	ReasonTaint Reason = "TaintNotTolerated"
	// ReasonRequirements: the pod's node selector or required affinity conflicts with the pool's
	// requirements or labels.
	ReasonRequirements Reason = "IncompatibleRequirements"
	// ReasonNoInstanceType: no instance type of the pool is compatible and large enough.
	ReasonNoInstanceType Reason = "NoInstanceTypeFits"
	// ReasonNoOffering: types fit, but none has an available offering in the zones and
	// capacity types the pod allows.
	ReasonNoOffering Reason = "NoOffering"
	// ReasonMinValues: the pool's minValues cannot be met for the pod.
	ReasonMinValues Reason = "MinValues"
	// ReasonHostPort: the pod's host ports conflict with the pool's DaemonSets.
	ReasonHostPort Reason = "HostPortConflict"
	// ReasonTopologySpread: a DoNotSchedule spread constraint cannot be met.
	ReasonTopologySpread Reason = "TopologySpread"
	// ReasonPodAffinity: a required pod affinity has no domain to go to.
	ReasonPodAffinity Reason = "PodAffinity"
	// ReasonPodAntiAffinity: a required pod anti-affinity leaves no domain.
	ReasonPodAntiAffinity Reason = "PodAntiAffinity"
	// ReasonVolumeZone: the pod's volumes pin it to zones no pool offers.
	ReasonVolumeZone Reason = "VolumeZone"
	// ReasonLimit: the pool's limits are reached.
	ReasonLimit Reason = "LimitReached"
)
