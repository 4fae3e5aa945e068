package disruption

import (
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
)

const (
	annotationDeletionCost = "controller.kubernetes.io/pod-deletion-cost"
)

// active reports whether a pod still runs or will: neither terminal nor being deleted.
func active(p *corev1.Pod) bool { return !terminal(p) && p.DeletionTimestamp == nil }

// daemon reports whether a pod belongs to its node rather than to a workload: a DaemonSet pod or
// a static (mirror) pod. Such pods are not moved; they go with the node.
func daemon(p *corev1.Pod) bool { return nodeplan.PodBelongsToNode(p) }

// movable reports whether disrupting the node evicts the pod and something must find it a new
// home.
func movable(p *corev1.Pod) bool { return active(p) && !daemon(p) }

// owned reports whether a controller would recreate the pod after eviction.
func owned(p *corev1.Pod) bool { return metav1.GetControllerOf(p) != nil }

// evictionCost is Karpenter's cost of evicting one pod: 1, plus pod-deletion-cost/2^27, plus
// priority/2^25, clamped to [-10, 10].
func evictionCost(p *corev1.Pod) float64 {
	c := 1.0
	if v, ok := p.Annotations[annotationDeletionCost]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			c += float64(n) / math.Pow(2, 27)
		}
	}
	if p.Spec.Priority != nil {
		c += float64(*p.Spec.Priority) / math.Pow(2, 25)
	}
	return min(max(c, -10), 10)
}

// disruptionCost is the cost of disrupting a node with these pods: 1 + Σ max(0, evictionCost).
func disruptionCost(pods []*corev1.Pod) float64 {
	c := 1.0
	for _, p := range pods {
		c += max(0, evictionCost(p))
	}
	return c
}

// interPod reports whether a pod's placement depends on where other pods are: pod affinity,
// anti-affinity or topology spread.
func interPod(p *corev1.Pod) bool {
	if len(p.Spec.TopologySpreadConstraints) > 0 {
		return true
	}
	a := p.Spec.Affinity
	return a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil)
}

// hostPorts reports whether a pod claims a host port.
func hostPorts(p *corev1.Pod) bool { return len(nodeplan.PodHostPorts(p)) > 0 }
