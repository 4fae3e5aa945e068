package nodeplan

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ToleratesTaint reports whether one toleration matches a taint, by Kubernetes' rules: an empty
// effect matches every effect; an empty key with Exists matches every key; Exists matches any
// value; Equal (or no operator) needs equal values; Gt and Lt compare integer values (the taint's
// value against the toleration's) and match nothing when either is not an integer.
func ToleratesTaint(t corev1.Toleration, taint corev1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case "", corev1.TolerationOpEqual:
		return t.Key != "" && t.Value == taint.Value
	case corev1.TolerationOpExists:
		return true
	case corev1.TolerationOpGt, corev1.TolerationOpLt:
		tv, ok1 := decimalInteger(t.Value)
		nv, ok2 := decimalInteger(taint.Value)
		if !ok1 || !ok2 || t.Key == "" {
			return false
		}
		if t.Operator == corev1.TolerationOpGt {
			return nv > tv
		}
		return nv < tv
	}
	return false
}

// Tolerates reports whether some toleration in the list matches the taint.
func Tolerates(tolerations []corev1.Toleration, taint corev1.Taint) bool {
	for i := range tolerations {
		if ToleratesTaint(tolerations[i], taint) {
			return true
		}
	}
	return false
}

// UntoleratedTaint returns the first taint that keeps a pod with these tolerations off a node:
// a NoSchedule or NoExecute taint it does not tolerate. PreferNoSchedule taints never block (they
// are preferences). ok is false when the pod tolerates every blocking taint.
func UntoleratedTaint(tolerations []corev1.Toleration, taints []corev1.Taint) (taint corev1.Taint, ok bool) {
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !Tolerates(tolerations, t) {
			return t, true
		}
	}
	return corev1.Taint{}, false
}

// TaintString formats a taint the way kubectl does: key=value:Effect, or key:Effect without a value.
func TaintString(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// decimalInteger parses s as Kubernetes compares taint values: a canonical base-10 integer, with
// no sign but an optional '-', and no leading zeros ("05", "+5" and "-0" are not integers).
func decimalInteger(s string) (int64, bool) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || (digits[0] == '0' && (len(digits) > 1 || len(s) > 1)) || digits[0] == '+' {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// TaintUninitialized is the taint a kubelet started with an external cloud provider carries until
// the cloud controller initializes the node (k8s.io/cloud-provider's TaintExternalCloudProvider).
const TaintUninitialized = "node.cloudprovider.kubernetes.io/uninitialized"

// EphemeralTaint reports whether t is one a node carries while it comes up and loses by itself,
// as Karpenter lists them (matched by key and effect): not-ready (NoSchedule or NoExecute),
// unreachable (NoSchedule), the cloud provider's uninitialized (NoSchedule), karpenter.sh/unregistered
// (NoExecute), and any readiness.k8s.io/ taint (the node readiness controller's).
func EphemeralTaint(t corev1.Taint) bool {
	switch t.Key {
	case corev1.TaintNodeNotReady:
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	case corev1.TaintNodeUnreachable, TaintUninitialized:
		return t.Effect == corev1.TaintEffectNoSchedule
	case TaintUnregistered:
		return t.Effect == corev1.TaintEffectNoExecute
	}
	return strings.HasPrefix(t.Key, "readiness.k8s.io/")
}

// NodeInitialized reports whether a node is past its start-up: a node a NodePool launched (it
// carries [LabelNodePool]) once its [LabelInitialized] label is "true"; any other node always,
// as Karpenter counts nodes it does not manage.
func NodeInitialized(n *corev1.Node) bool {
	if n.Labels[LabelNodePool] == "" {
		return true
	}
	return n.Labels[LabelInitialized] == "true"
}

// NodeTaints returns the taints a pod must tolerate to be planned onto node n, whose NodePool's
// startup taints are startup: all of the node's once it is initialized; before, not its
// ephemeral taints nor its startup taints, which are expected to go (Karpenter counts such a
// node as room for the pods it is launching for). An initialized node whose not-ready or startup
// taint is back keeps pods off: kube-scheduler will not bind there.
func NodeTaints(n *corev1.Node, startup []corev1.Taint) []corev1.Taint {
	if NodeInitialized(n) {
		return n.Spec.Taints
	}
	var out []corev1.Taint
	for _, t := range n.Spec.Taints {
		if EphemeralTaint(t) || slices.ContainsFunc(startup, func(s corev1.Taint) bool { return s.MatchTaint(&t) }) {
			continue
		}
		out = append(out, t)
	}
	return out
}
