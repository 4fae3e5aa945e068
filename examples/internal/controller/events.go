package controller

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

// EventKind names what happened, one per step of a node's story the operator follows.
type EventKind string

// The kinds of [Event], in the order of a node's life.
const (
	// EventStarted: the controller is running (Count: claims restored, Pools: pools read).
	EventStarted EventKind = "Started"
	// EventSolved: a provisioning solve (Pods: real pods, BufferPods: buffer slots,
	// NodeClaims: new claims it asked for, Cost: their $/h, NodeCost: the part of Cost that
	// is Controller.NodeCost and the volumes).
	EventSolved EventKind = "Solved"
	// EventPodUnschedulable: the solver could place a pod nowhere (Pod, Reason, Message).
	EventPodUnschedulable EventKind = "PodUnschedulable"
	// EventNodeClaimCreated: a NodeClaim object was created before its launch (Requests,
	// InstanceTypes: its options, cheapest first).
	EventNodeClaimCreated EventKind = "NodeClaimCreated"
	// EventNodeClaimLaunched: the cloud made the instance (InstanceType, Zone, CapacityType,
	// Price, Allocatable, Pods: the pods it was launched for; Reason: why, when not for
	// pending pods; Planned: the offering the solver chose, "type/zone/capacity-type", when
	// the cloud launched another).
	EventNodeClaimLaunched EventKind = "NodeClaimLaunched"
	// EventLaunchFailed: Create failed; the claim is gone (Reason, Message).
	EventLaunchFailed EventKind = "LaunchFailed"
	// EventNodeClaimRegistered: its Node appeared (Node).
	EventNodeClaimRegistered EventKind = "NodeClaimRegistered"
	// EventNodeClaimInitialized: its Node is ready for pods (Node, Allocatable).
	EventNodeClaimInitialized EventKind = "NodeClaimInitialized"
	// EventDrifted: the claim was found drifted (Reason, Message).
	EventDrifted EventKind = "Drifted"
	// EventInterrupted: the cloud warned the instance will go (Reason: the kind).
	EventInterrupted EventKind = "Interrupted"
	// EventDisrupting: a disruption command starts (Reason, Nodes, Replacements, Pods,
	// Savings $/h).
	EventDisrupting EventKind = "Disrupting"
	// EventDisruptionCancelled: a command's drain was called off before it began (Reason,
	// Message: what blocked it).
	EventDisruptionCancelled EventKind = "DisruptionCancelled"
	// EventNodeTainted: the node was tainted karpenter.sh/disrupted:NoSchedule; its drain
	// begins.
	EventNodeTainted EventKind = "NodeTainted"
	// EventNodeDeleted: the Node object was removed.
	EventNodeDeleted EventKind = "NodeDeleted"
	// EventNodeClaimDeleted: the instance is gone and the NodeClaim with it (Reason).
	EventNodeClaimDeleted EventKind = "NodeClaimDeleted"
	// EventStaticScale: a static pool is brought to its replica count (Count: current,
	// Replicas: desired, Delta: claims launched, or removed when negative).
	EventStaticScale EventKind = "StaticScale"
)

// Event is one thing that happened, typed, for programs that follow the controller — the
// simulation's timeline and summary, a test — instead of parsing its log lines. Fields not
// named for a kind are zero.
type Event struct {
	Time time.Time
	Kind EventKind

	NodeClaim, NodePool, Node string
	Pod                       string

	InstanceType  string
	Zone          string
	CapacityType  nodeplan.CapacityType
	Price         float64
	Allocatable   corev1.ResourceList
	Requests      corev1.ResourceList
	InstanceTypes []string

	Reason, Message string
	Planned         string

	Nodes                  []string
	Pods, BufferPods       int
	NodeClaims             int
	Cost, NodeCost         float64
	Replacements           int
	Savings                float64
	Count, Replicas, Delta int
	Pools                  int
}

// emit hands an event to Controller.Events, stamped with the controller's clock.
func (c *Controller) emit(e Event) {
	if c.Events == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = c.now()
	}
	c.Events(e)
}
