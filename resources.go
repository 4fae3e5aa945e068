package nodeplan

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ResourceNodes is the key of a node-count limit in [NodePool.Limits]: `limits: {nodes: 10}`.
const ResourceNodes corev1.ResourceName = "nodes"

// AddResources returns a + b, key by key. Neither argument is modified.
func AddResources(a, b corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, max(len(a), len(b)))
	for k, v := range a {
		out[k] = v.DeepCopy()
	}
	for k, v := range b {
		q := out[k]
		q.Add(v)
		out[k] = q
	}
	return out
}

// SubtractResources returns a − b, key by key, floored at zero: allocatable never goes negative.
func SubtractResources(a, b corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(a))
	for k, v := range a {
		q := v.DeepCopy()
		if s, ok := b[k]; ok {
			q.Sub(s)
			if q.Sign() < 0 {
				q = *resource.NewQuantity(0, q.Format)
			}
		}
		out[k] = q
	}
	return out
}

// MaxResources returns the key-by-key maximum of a and b.
func MaxResources(a, b corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, max(len(a), len(b)))
	for k, v := range a {
		out[k] = v.DeepCopy()
	}
	for k, v := range b {
		if q, ok := out[k]; !ok || v.Cmp(q) > 0 {
			out[k] = v.DeepCopy()
		}
	}
	return out
}

// Fits reports whether every requested amount is at most what is available; a resource missing
// from available counts as zero. It returns the first resource (in name order) that does not fit.
func Fits(requests, available corev1.ResourceList) (corev1.ResourceName, bool) {
	names := make([]corev1.ResourceName, 0, len(requests))
	for k := range requests {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		req := requests[k]
		if req.Sign() <= 0 {
			continue
		}
		avail := available[k]
		if req.Cmp(avail) > 0 {
			return k, false
		}
	}
	return "", true
}

// PodRequests returns what a pod asks of a node, by Kubernetes' rules (the ones kube-scheduler
// uses, KEP-753 sidecars included):
//
//   - the sum of the regular containers, plus every restartable init container (sidecar), which
//     runs alongside them;
//   - at least, for each ordinary init container, its own request plus the sidecars started
//     before it — init containers run one at a time, so the pod needs their maximum, not sum;
//   - plus the pod's Overhead (RuntimeClass);
//   - plus one "pods", the slot it occupies.
//
// Limits stand in for missing requests, as the API server defaults them.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	reqs := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		addInto(reqs, containerRequests(&pod.Spec.Containers[i]))
	}
	sidecars := corev1.ResourceList{}
	initPeak := corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		r := containerRequests(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addInto(reqs, r)
			addInto(sidecars, r)
			// A sidecar's own start-up also needs the sidecars before it.
			maxInto(initPeak, sidecars)
			continue
		}
		step := AddResources(sidecars, r)
		maxInto(initPeak, step)
	}
	maxInto(reqs, initPeak)
	addInto(reqs, pod.Spec.Overhead)
	q := reqs[corev1.ResourcePods]
	q.Add(*resource.NewQuantity(1, resource.DecimalSI))
	reqs[corev1.ResourcePods] = q
	return reqs
}

func containerRequests(c *corev1.Container) corev1.ResourceList {
	if len(c.Resources.Limits) == 0 {
		return c.Resources.Requests
	}
	out := corev1.ResourceList{}
	for k, v := range c.Resources.Limits {
		out[k] = v
	}
	for k, v := range c.Resources.Requests {
		out[k] = v
	}
	return out
}

func addInto(dst, src corev1.ResourceList) {
	for k, v := range src {
		q := dst[k]
		q.Add(v)
		dst[k] = q
	}
}

func maxInto(dst, src corev1.ResourceList) {
	for k, v := range src {
		if q, ok := dst[k]; !ok || v.Cmp(q) > 0 {
			dst[k] = v.DeepCopy()
		}
	}
}
