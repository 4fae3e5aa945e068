package check

import "fmt"

// Rule names one property a Result must have. Programs can branch on it; the set may grow.
type Rule string

// The rules [Result] checks.
const (
	// RuleAccounted: every pending pod appears exactly once — on a new claim, an existing node,
	// an in-flight claim or in Unschedulable — and nothing else appears; an unschedulable pod
	// has a reason.
	RuleAccounted Rule = "pod-accounted"
	// RuleBoundPod: a pod already bound to a node never appears in a Result.
	RuleBoundPod Rule = "bound-pod-moved"
	// RuleTarget: a placement names an existing node or in-flight claim that exists, and may
	// take pods (not cordoned, not being deleted).
	RuleTarget Rule = "target"
	// RuleClaim: a new claim names a known NodePool that may launch nodes (not being deleted,
	// not reported not Ready), has pods, a unique name and options.
	RuleClaim Rule = "claim"
	// RuleResources: requests (plus DaemonSet overhead and bound pods) fit allocatable, on
	// every instance-type option and offering a claim may launch as.
	RuleResources Rule = "resources"
	// RuleNodeAffinity: a pod's nodeSelector and required node affinity match the node's labels.
	RuleNodeAffinity Rule = "node-affinity"
	// RuleTaints: a pod tolerates the node's NoSchedule and NoExecute taints.
	RuleTaints Rule = "taints"
	// RuleRequirements: a claim's requirements include its pool's, its labels its pool's
	// labels, and every option is in the pool's catalog and compatible with the requirements.
	RuleRequirements Rule = "requirements"
	// RuleOffering: a claim's chosen instance type is an option and its offering is available,
	// satisfies the requirements and is the cheapest the options allow.
	RuleOffering Rule = "offering"
	// RuleLimits: a pool's limits hold over its existing nodes, in-flight and new claims.
	RuleLimits Rule = "limits"
	// RuleCost: Cost is the sum of the chosen offerings' prices and what Options.NodeCost adds
	// per new node (Result.NodeCost).
	RuleCost Rule = "cost"
	// RuleLowerBound: LowerBound is a number between 0 and Cost.
	RuleLowerBound Rule = "lower-bound"
	// RuleOrder: the slices of a Result are in their documented order.
	RuleOrder Rule = "order"
	// RuleTopologySpread: DoNotSchedule topology spread constraints hold.
	RuleTopologySpread Rule = "topology-spread"
	// RulePodAffinity: required pod affinity holds.
	RulePodAffinity Rule = "pod-affinity"
	// RulePodAntiAffinity: required pod anti-affinity holds, in both directions.
	RulePodAntiAffinity Rule = "pod-anti-affinity"
	// RuleHostPorts: no two pods on a node (DaemonSet pods included) use the same host port.
	RuleHostPorts Rule = "host-ports"
	// RuleVolumeZone: a pod whose volumes pin it to zones (Input.VolumeZones) runs in one.
	RuleVolumeZone Rule = "volume-zone"
	// RuleAttachLimit: an existing node's volume attach limit holds.
	RuleAttachLimit Rule = "attach-limit"
)

// Violation is one broken rule: which rule, on what (a pod, a claim, a node), and the detail.
type Violation struct {
	Rule Rule
	// Object names what is wrong, e.g. `pod default/web-1`, `new claim 2 "default-x7"`,
	// `node "ip-10-0-0-1"`.
	Object string
	// Detail says how, with the numbers.
	Detail string
}

func (v *Violation) Error() string {
	return fmt.Sprintf("check: %s: %s: %s", v.Rule, v.Object, v.Detail)
}
