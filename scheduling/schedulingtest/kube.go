package schedulingtest

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// matchNode reports whether a pod's nodeSelector and required node affinity admit a node with
// these labels (Kubernetes semantics: terms ORed, expressions ANDed, an empty term matches
// nothing). It is kept apart from package check's copy so the oracles stand on their own.
func matchNode(pod *corev1.Pod, nodeName string, lbls map[string]string) bool {
	for k, v := range pod.Spec.NodeSelector {
		if got, ok := lbls[k]; !ok || got != v {
			return false
		}
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
			continue
		}
		ok := true
		for _, e := range t.MatchExpressions {
			v, present := lbls[e.Key]
			ok = ok && matchExpr(e, v, present)
		}
		for _, e := range t.MatchFields {
			ok = ok && e.Key == "metadata.name" && matchExpr(e, nodeName, nodeName != "")
		}
		if ok {
			return true
		}
	}
	return false
}

func matchExpr(e corev1.NodeSelectorRequirement, v string, present bool) bool {
	switch e.Operator {
	case corev1.NodeSelectorOpIn:
		return present && slices.Contains(e.Values, v)
	case corev1.NodeSelectorOpNotIn:
		return !present || !slices.Contains(e.Values, v)
	case corev1.NodeSelectorOpExists:
		return present
	case corev1.NodeSelectorOpDoesNotExist:
		return !present
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !present || len(e.Values) != 1 {
			return false
		}
		n, err1 := strconv.ParseInt(v, 10, 64)
		want, err2 := strconv.ParseInt(e.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if e.Operator == corev1.NodeSelectorOpGt {
			return n > want
		}
		return n < want
	}
	return false
}

func ownedByDaemonSet(pod *corev1.Pod, ns, name string) bool {
	if pod.Namespace != ns {
		return false
	}
	for _, o := range pod.OwnerReferences {
		if o.Kind == "DaemonSet" && o.Name == name {
			return true
		}
	}
	return false
}

func daemonTolerations(tols []corev1.Toleration) []corev1.Toleration {
	out := slices.Clone(tols)
	for _, k := range []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"} {
		out = append(out, corev1.Toleration{Key: k, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
	}
	for _, k := range []string{"node.kubernetes.io/disk-pressure", "node.kubernetes.io/memory-pressure",
		"node.kubernetes.io/pid-pressure", "node.kubernetes.io/unschedulable"} {
		out = append(out, corev1.Toleration{Key: k, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	return out
}
