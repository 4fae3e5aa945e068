package nodeplan

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Facts about pods that several packages need, each decided once here, as Kubernetes decides it.

// PodTerminal reports whether a pod has finished for good (phase Succeeded or Failed).
// kube-scheduler keeps no terminal pods in its cache: they use no room on their node and count
// for no spread, affinity or host port.
func PodTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// MirrorPod reports whether a pod is the API server's mirror of a static pod (annotation
// kubernetes.io/config.mirror): the kubelet runs it from a file, and deleting it does nothing.
func MirrorPod(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]
	return ok
}

// DaemonSetOf returns the name of the DaemonSet that owns a pod, or "". The DaemonSet controller
// marks its reference as the controller; a DaemonSet owner reference without the mark (as
// hand-built pods often have) counts too.
func DaemonSetOf(pod *corev1.Pod) string {
	if c := metav1.GetControllerOf(pod); c != nil {
		if c.Kind == "DaemonSet" {
			return c.Name
		}
		return ""
	}
	for _, o := range pod.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return o.Name
		}
	}
	return ""
}

// PodBelongsToNode reports whether a pod goes with its node rather than with a workload: a
// DaemonSet's pod, a mirror pod, or a pod its Node controls. Disrupting the node does not move
// such pods anywhere.
func PodBelongsToNode(pod *corev1.Pod) bool {
	if MirrorPod(pod) || DaemonSetOf(pod) != "" {
		return true
	}
	c := metav1.GetControllerOf(pod)
	return c != nil && c.Kind == "Node"
}

// PodStart is when a pod started: its status.startTime (when the kubelet accepted it), or its
// creation time while it has none. A do-not-disrupt duration and a node's last pod event count
// from it.
func PodStart(pod *corev1.Pod) time.Time {
	if pod.Status.StartTime != nil {
		return pod.Status.StartTime.Time
	}
	return pod.CreationTimestamp.Time
}

// HostPort is one (IP, port, protocol) a pod binds on its node.
type HostPort struct {
	IP       string
	Port     int32
	Protocol corev1.Protocol
}

// Conflicts reports whether two bindings collide, as kube-scheduler's NodePorts filter decides:
// same port and protocol, and the same IP or either one the wildcard 0.0.0.0.
func (a HostPort) Conflicts(b HostPort) bool {
	return a.Port == b.Port && a.Protocol == b.Protocol && (a.IP == b.IP || a.IP == "0.0.0.0" || b.IP == "0.0.0.0")
}

// PodHostPorts returns the host ports a pod binds while it runs — its containers' and its
// sidecars' (restartable init containers'), as kube-scheduler's NodePorts filter counts them —
// sorted and without duplicates, with the API server's defaults applied: an empty IP is 0.0.0.0,
// an empty protocol TCP, and under hostNetwork every container port is a host port.
func PodHostPorts(pod *corev1.Pod) []HostPort {
	var out []HostPort
	add := func(c *corev1.Container) {
		for _, cp := range c.Ports {
			port := cp.HostPort
			if port == 0 && pod.Spec.HostNetwork {
				port = cp.ContainerPort
			}
			if port <= 0 {
				continue
			}
			hp := HostPort{IP: cp.HostIP, Port: port, Protocol: cp.Protocol}
			if hp.IP == "" {
				hp.IP = "0.0.0.0"
			}
			if hp.Protocol == "" {
				hp.Protocol = corev1.ProtocolTCP
			}
			out = append(out, hp)
		}
	}
	for i := range pod.Spec.InitContainers {
		// Only sidecars hold their ports while the pod runs; kube-scheduler counts only them.
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	slices.SortFunc(out, func(a, b HostPort) int {
		return cmp.Or(cmp.Compare(a.Port, b.Port), cmp.Compare(a.Protocol, b.Protocol), cmp.Compare(a.IP, b.IP))
	})
	return slices.Compact(out)
}

// PodAffinityTerm is one inter-pod term of a pod with how it applies.
type PodAffinityTerm struct {
	corev1.PodAffinityTerm
	// Anti is set for pod anti-affinity.
	Anti bool
	// Required is set for requiredDuringScheduling terms; Weight is a preferred term's weight.
	Required bool
	Weight   int32
}

// PodAffinityTerms returns every pod affinity and anti-affinity term of a pod, required and
// preferred, in the order: affinity required, affinity preferred, anti-affinity required,
// anti-affinity preferred.
func PodAffinityTerms(pod *corev1.Pod) []PodAffinityTerm {
	a := pod.Spec.Affinity
	if a == nil {
		return nil
	}
	var out []PodAffinityTerm
	add := func(anti bool, req []corev1.PodAffinityTerm, pref []corev1.WeightedPodAffinityTerm) {
		for _, t := range req {
			out = append(out, PodAffinityTerm{PodAffinityTerm: t, Anti: anti, Required: true})
		}
		for _, w := range pref {
			out = append(out, PodAffinityTerm{PodAffinityTerm: w.PodAffinityTerm, Anti: anti, Weight: w.Weight})
		}
	}
	if pa := a.PodAffinity; pa != nil {
		add(false, pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		add(true, pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	return out
}
