package nodeplan

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Never is the duration of something that does not happen: expireAfter: Never,
// consolidateAfter: Never.
const Never = time.Duration(math.MaxInt64)

// NodePool says what nodes may be launched for pods and how they may later be disrupted. It
// mirrors Karpenter's karpenter.sh/v1 NodePool; [DecodeManifests] reads that YAML into it.
//
// The zero value (with a Name) is a usable pool: any instance type, no taints, no limits,
// consolidation when empty or underutilized with no delay, nodes that never expire, and the
// default disruption budget of 10% of nodes.
type NodePool struct {
	// Name identifies the pool; launched nodes carry it in the karpenter.sh/nodepool label.
	Name string
	// Weight orders pools: a pod goes to the highest-weight pool that can take it, as in
	// Karpenter, whatever the prices. Ties break by name.
	Weight int32
	// Template describes every node the pool launches.
	Template NodeClaimTemplate
	// Limits caps the total resources of the pool's nodes — launched, in flight and planned. Any
	// resource may be limited (cpu, memory, nvidia.com/gpu…), and [ResourceNodes] caps the node
	// count. A resource not named is unlimited.
	Limits corev1.ResourceList
	// Disruption says when the pool's nodes may be removed or replaced.
	Disruption Disruption
	// Replicas, when set, makes the pool static (Karpenter v1.14's spec.replicas, alpha there):
	// it keeps this many nodes whatever the pending pods, consolidationPolicy and
	// consolidateAfter are ignored, only Limits[ResourceNodes] may be set, and Weight must be
	// 0. Nil is an ordinary, demand-driven pool. This package decodes, encodes and validates the
	// field; acting on it is the controller's job.
	Replicas *int64
	// DeletionTimestamp, when set, says the pool is being deleted (its metadata.deletionTimestamp).
	// Karpenter launches no node for it; its nodes stay until they are drained.
	DeletionTimestamp *time.Time
	// Ready is the pool's Ready status condition. Karpenter launches nodes only for a pool whose
	// Ready condition is True (its node class found and ready, its spec valid…). The zero value,
	// no condition reported (a pool written by hand), counts as ready.
	Ready Condition
}

// Condition is one status condition of an object, as Kubernetes reports it.
type Condition struct {
	// Status is True, False or Unknown; empty means the condition is not reported.
	Status metav1.ConditionStatus
	// Reason is a CamelCase word for programs; Message says it for people.
	Reason, Message string
}

// CanLaunch reports whether nodes may be launched for the pool's pending pods now. When not,
// why says so in a sentence naming the field: the pool is static (Replicas: Karpenter keeps its
// node count and never provisions into it for pods), it is being deleted, or its Ready
// condition is not True (with the condition's reason and message).
func (p *NodePool) CanLaunch() (ok bool, why string) {
	if p.Replicas != nil {
		return false, fmt.Sprintf("is static (spec.replicas %d): its nodes are kept at that count, never launched for pending pods", *p.Replicas)
	}
	if p.DeletionTimestamp != nil {
		return false, "is being deleted (metadata.deletionTimestamp is set): no node is launched for it"
	}
	if p.Ready.Status != "" && p.Ready.Status != metav1.ConditionTrue {
		why := fmt.Sprintf("is not ready (status.conditions Ready=%s", p.Ready.Status)
		if p.Ready.Reason != "" {
			why += ", " + p.Ready.Reason
		}
		if p.Ready.Message != "" {
			why += ": " + p.Ready.Message
		}
		return false, why + "): no node is launched for it until it is"
	}
	return true, ""
}

// NodeClaimTemplate is the part of a NodePool copied into every NodeClaim it launches.
type NodeClaimTemplate struct {
	// Labels are put on every node; pods may select on them.
	Labels map[string]string
	// Annotations are put on every node.
	Annotations map[string]string
	// Taints are put on every node; only pods that tolerate them land there.
	Taints []corev1.Taint
	// StartupTaints are put on a node at launch and removed by some agent once it is ready
	// (a CNI, a GPU driver). Pods need not tolerate them: they are expected to go.
	StartupTaints []corev1.Taint
	// Requirements constrain the node's labels — instance types, zones, capacity types,
	// architectures, any instance-type label — with minValues for launch flexibility.
	Requirements Requirements
	// NodeClassRef names the cloud-specific node class (e.g. an EC2NodeClass).
	NodeClassRef NodeClassRef
	// ExpireAfter is how long a node lives before it is replaced; 0 or [Never] means never.
	ExpireAfter time.Duration
	// TerminationGracePeriod bounds how long draining a node may take before its remaining pods
	// are deleted without waiting for PDBs or do-not-disrupt; 0 means wait indefinitely.
	TerminationGracePeriod time.Duration
}

// NodeClassRef points at a cloud-specific node class object.
type NodeClassRef struct {
	Group string // e.g. karpenter.k8s.aws
	Kind  string // e.g. EC2NodeClass
	Name  string
}

// ConsolidationPolicy says which nodes consolidation may remove or replace.
type ConsolidationPolicy string

const (
	// ConsolidateWhenEmptyOrUnderutilized removes empty nodes and moves pods off underutilized
	// ones when that lowers cost. It is the default.
	ConsolidateWhenEmptyOrUnderutilized ConsolidationPolicy = "WhenEmptyOrUnderutilized"
	// ConsolidateWhenEmpty removes only nodes without (non-DaemonSet) pods.
	ConsolidateWhenEmpty ConsolidationPolicy = "WhenEmpty"
)

// Disruption holds a NodePool's disruption settings.
type Disruption struct {
	// ConsolidationPolicy; empty means [ConsolidateWhenEmptyOrUnderutilized].
	ConsolidationPolicy ConsolidationPolicy
	// ConsolidateAfter is how long a node must have had no pod scheduled or removed before
	// consolidation considers it; [Never] turns consolidation off.
	ConsolidateAfter time.Duration
	// Budgets cap how many of the pool's nodes may be disrupting at once. nil means the
	// default, one budget of 10%; to lift the cap, give a budget of "100%".
	Budgets []Budget
}

// Policy returns the consolidation policy with the default applied.
func (d Disruption) Policy() ConsolidationPolicy {
	if d.ConsolidationPolicy == "" {
		return ConsolidateWhenEmptyOrUnderutilized
	}
	return d.ConsolidationPolicy
}

// DisruptionReason is why a node is disrupted; budgets may apply to some reasons only.
type DisruptionReason string

// The reasons. Budgets apply to Empty, Underutilized and Drifted. Expired and Interrupted are
// forceful in Karpenter; the disruption planner can optionally hold Expired to budgets too.
const (
	ReasonEmpty         DisruptionReason = "Empty"
	ReasonUnderutilized DisruptionReason = "Underutilized"
	ReasonDrifted       DisruptionReason = "Drifted"
	ReasonExpired       DisruptionReason = "Expired"
	ReasonInterrupted   DisruptionReason = "Interrupted"
)
