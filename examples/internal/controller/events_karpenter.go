package controller

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/disruption"
)

// EventSource is the component the controller's Kubernetes Events come from: Karpenter's
// ("karpenter"), so `kubectl get events --field-selector source=karpenter` and the alerts
// written on it keep working.
const EventSource = "karpenter"

// Karpenter's event reasons (kubernetes-sigs/karpenter pkg/events, aws/karpenter-provider-aws
// pkg/controllers/interruption/events).
const (
	eventDisruptionBlocked           = "DisruptionBlocked"
	eventUnconsolidatable            = "Unconsolidatable"
	eventDisruptionTerminating       = "DisruptionTerminating"
	eventSpotInterrupted             = "SpotInterrupted"
	eventSpotRebalance               = "SpotRebalanceRecommendation"
	eventInstanceStopping            = "InstanceStopping"
	eventInstanceTerminating         = "InstanceTerminating"
	eventTerminatingOnInterruption   = "TerminatingOnInterruption"
	eventScheduledChange             = "ScheduledChange"
	blockedByDoNotDisruptAnnotation  = `Disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation`
	blockedByPodDoNotDisruptSentence = `Pod has "karpenter.sh/do-not-disrupt" annotation`
)

// blockedEvent is the event Karpenter publishes for a node the planner leaves, with its
// sentence: DisruptionBlocked for what keeps a node from being a candidate at all (not
// initialized, nominated, do-not-disrupt on the node or a pod, a PDB, its NodePool unknown),
// Unconsolidatable for what consolidation alone refuses (consolidation disabled, WhenEmpty, no
// cheaper replacement). Where Karpenter has no event for the planner's code, the planner's own
// sentence goes under DisruptionBlocked.
func blockedEvent(b disruption.Blocked) (reason, message string) {
	switch b.Code {
	case disruption.CodeNoNodePool:
		return eventDisruptionBlocked, fmt.Sprintf("NodePool not found (NodePool=%s)", b.NodePool)
	case disruption.CodeNotInitialized:
		return eventDisruptionBlocked, "Node isn't initialized"
	case disruption.CodeNominated:
		if b.Object == "" {
			return eventDisruptionBlocked, "Node is nominated for a pending pod"
		}
	case disruption.CodeDoNotDisruptNode:
		return eventDisruptionBlocked, blockedByDoNotDisruptAnnotation
	case disruption.CodeDoNotDisruptPod:
		return eventDisruptionBlocked, fmt.Sprintf("%s (Pod=%s)", blockedByPodDoNotDisruptSentence, b.Object)
	case disruption.CodePDB:
		if strings.Contains(b.Message, "more than one PDB") {
			return eventDisruptionBlocked, fmt.Sprintf("Eviction does not support multiple PDBs (PodDisruptionBudget(s)=[%s])", b.Object)
		}
		return eventDisruptionBlocked, fmt.Sprintf("Pdb prevents pod evictions (PodDisruptionBudget=[%s])", b.Object)
	case disruption.CodeConsolidationDisabled:
		return eventUnconsolidatable, fmt.Sprintf("NodePool %q has consolidation disabled", b.NodePool)
	case disruption.CodeWhenEmpty:
		return eventUnconsolidatable, fmt.Sprintf("NodePool %q has consolidation policy WhenEmpty, but node is not empty", b.NodePool)
	case disruption.CodeNotCheaper:
		return eventUnconsolidatable, "Can't replace with a cheaper node"
	}
	return eventDisruptionBlocked, sentence(b.Message)
}

// sentence capitalises the first letter, as Karpenter's pretty.Sentence does.
func sentence(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// interruptionEvent is the AWS provider's event for an interruption message: its type, reason
// and sentence (the same on the Node and the NodeClaim). A scheduled change has no event in
// Karpenter; ours names it.
func interruptionEvent(ev cloudprovider.Interruption) (typ, reason, message string) {
	switch interruptionReason(ev) {
	case "spot_interrupted":
		return corev1.EventTypeWarning, eventSpotInterrupted, "Spot interruption warning was triggered"
	case "rebalance_recommendation":
		return corev1.EventTypeNormal, eventSpotRebalance, "Spot rebalance recommendation was triggered"
	case "instance_stopped":
		return corev1.EventTypeWarning, eventInstanceStopping, "Instance is stopping"
	case "instance_terminated":
		return corev1.EventTypeWarning, eventInstanceTerminating, "Instance is terminating"
	}
	msg := "A scheduled change was announced for the instance"
	if !ev.Deadline.IsZero() {
		msg += ", due " + ev.Deadline.UTC().Format("2006-01-02T15:04:05Z")
	}
	return corev1.EventTypeWarning, eventScheduledChange, msg
}

// eventOnBoth records an event on a claim's Node and on its NodeClaim, as Karpenter records its
// disruption and interruption events on both; nodeMsg and claimMsg may differ ("… for the
// Node" / "… for the NodeClaim").
func (c *Controller) eventOnBoth(claim, node, typ, reason, nodeMsg, claimMsg string) {
	if node != "" {
		c.event(c.node(node), typ, reason, "%s", nodeMsg)
	}
	if claim == "" || c.claimLister == nil {
		return
	}
	if obj := c.claimObject(claim); obj != nil {
		c.event(obj.DeepCopy(), typ, reason, "%s", claimMsg)
	}
}

// terminatingEvent records the event of a node's termination starting for reason:
// TerminatingOnInterruption for an interruption (the AWS provider's), DisruptionTerminating
// with the reason otherwise.
func (c *Controller) terminatingEvent(cl *Claim, reason nodeplan.DisruptionReason) {
	if reason == nodeplan.ReasonInterrupted {
		c.eventOnBoth(cl.Name, cl.Status.NodeName, corev1.EventTypeWarning, eventTerminatingOnInterruption,
			"Interruption triggered termination for the Node", "Interruption triggered termination for the NodeClaim")
		return
	}
	c.eventOnBoth(cl.Name, cl.Status.NodeName, corev1.EventTypeNormal, eventDisruptionTerminating,
		"Disrupting Node: "+string(reason), "Disrupting NodeClaim: "+string(reason))
}
