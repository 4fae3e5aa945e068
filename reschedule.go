package nodeplan

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeDeleting reports whether a node is on its way out: it has a deletionTimestamp, or the
// karpenter.sh/disrupted:NoSchedule taint Karpenter puts on a node before draining it. No new
// pod lands there, and Karpenter provisions room for its pods (those [PodReschedulable]
// accepts) before they are evicted, so they do not wait pending for a node to come up.
func NodeDeleting(n *corev1.Node) bool {
	if n.DeletionTimestamp != nil {
		return true
	}
	for _, t := range n.Spec.Taints {
		if t.Key == TaintDisrupted && t.Effect == corev1.TaintEffectNoSchedule {
			return true
		}
	}
	return false
}

// PodReschedulable reports whether a pod bound to a node being deleted ([NodeDeleting]) needs
// room elsewhere, as Karpenter picks the pods it provisions for: the pod is active (neither
// terminal nor terminating — except a StatefulSet's terminating pod, whose replacement, of the
// same name, must wait for it to go), it does not go with its node (a DaemonSet's, mirror or
// node-owned pod: [PodBelongsToNode]), and its do-not-disrupt annotation does not protect it at
// now (it will not be evicted). Karpenter also skips a pod every one of whose PDBs allows no
// eviction at all; that is left to the caller, which has the PDBs.
func PodReschedulable(pod *corev1.Pod, now time.Time) bool {
	if PodTerminal(pod) || PodBelongsToNode(pod) || DoNotDisrupt(pod, now) {
		return false
	}
	if pod.DeletionTimestamp != nil {
		c := metav1.GetControllerOf(pod)
		return c != nil && c.Kind == "StatefulSet"
	}
	return true
}
