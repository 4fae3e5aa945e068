package nodeplan

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
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

// PodRequests returns what a pod asks of a node, by kube-scheduler v1.37's rule: exactly
// k8s.io/component-helpers/resource.PodRequests with the options kube-scheduler uses to account
// pods on nodes — pod-level spec.resources (cpu, memory, hugepages) override the containers'
// sum; restartable init containers (sidecars) run alongside the containers; each ordinary init
// container needs its own request plus the sidecars before it, and the pod the largest of those;
// the RuntimeClass overhead is added; and an in-place resize counts at the larger of the desired,
// allocated and actuated amounts (only the allocated and actuated ones while the resize is
// infeasible). One "pods" is added for the slot the pod occupies.
//
// A pod that did not pass through an API server is first given the API server's defaults:
// requests missing where a limit is set default to the limit (per container, and at pod level,
// where the containers' requests come first), as kube-apiserver writes them on creation.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	// Reading the status is three aggregations instead of one; skip it when it cannot matter
	// (every pending pod, most bound ones).
	status := !StatusRequestsMatchSpec(pod)
	reqs := resourcehelper.PodRequests(withDefaultRequests(pod), resourcehelper.PodResourcesOptions{
		UseStatusResources: status, InPlacePodLevelResourcesVerticalScalingEnabled: status,
	})
	q := reqs[corev1.ResourcePods]
	q.Add(*resource.NewQuantity(1, resource.DecimalSI))
	reqs[corev1.ResourcePods] = q
	return reqs
}

// StatusRequestsMatchSpec reports whether a pod's status says nothing that changes its requests:
// no resize is pending or in progress, and every container status's allocated and actuated
// requests equal the container's spec. Then the spec alone gives [PodRequests] — a fast path
// for callers that sum requests of many bound pods.
func StatusRequestsMatchSpec(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress {
			return false
		}
	}
	if pod.Status.Resources != nil || pod.Status.AllocatedResources != nil {
		return false
	}
	for _, st := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range st {
			cs := &st[i]
			if cs.AllocatedResources == nil && (cs.Resources == nil || cs.Resources.Requests == nil) {
				continue
			}
			spec := containerByName(pod, cs.Name)
			if spec == nil || !sameList(cs.AllocatedResources, spec.Resources.Requests, true) ||
				cs.Resources != nil && !sameList(cs.Resources.Requests, spec.Resources.Requests, true) {
				return false
			}
		}
	}
	return true
}

func containerByName(pod *corev1.Pod, name string) *corev1.Container {
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	return nil
}

// sameList reports whether a and b hold equal amounts; with nilOK, a nil a counts as equal.
func sameList(a, b corev1.ResourceList, nilOK bool) bool {
	if a == nil && nilOK {
		return true
	}
	if len(a) != len(b) {
		return false
	}
	for k, q := range a {
		if r, ok := b[k]; !ok || q.Cmp(r) != 0 {
			return false
		}
	}
	return true
}

// withDefaultRequests returns the pod with the requests the API server would default from
// limits, or the pod itself when there are none to add (every pod read from an API server).
func withDefaultRequests(pod *corev1.Pod) *corev1.Pod {
	podLevel := pod.Spec.Resources != nil && missingFromRequests(*pod.Spec.Resources, resourcehelper.IsSupportedPodLevelResource)
	containers := slices.ContainsFunc(pod.Spec.Containers, containerMissingRequests) ||
		slices.ContainsFunc(pod.Spec.InitContainers, containerMissingRequests)
	if !podLevel && !containers {
		return pod
	}
	out := *pod
	out.Spec.Containers = defaultContainerRequests(pod.Spec.Containers)
	out.Spec.InitContainers = defaultContainerRequests(pod.Spec.InitContainers)
	if podLevel {
		r := pod.Spec.Resources.DeepCopy()
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		// The containers' aggregate for cpu and memory, then the pod-level limit.
		for k, v := range resourcehelper.AggregateContainerRequests(&out, resourcehelper.PodResourcesOptions{}) {
			if _, ok := r.Requests[k]; !ok && (k == corev1.ResourceCPU || k == corev1.ResourceMemory) {
				r.Requests[k] = v
			}
		}
		for k, v := range r.Limits {
			if _, ok := r.Requests[k]; !ok && resourcehelper.IsSupportedPodLevelResource(k) {
				r.Requests[k] = v.DeepCopy()
			}
		}
		out.Spec.Resources = r
	}
	return &out
}

func containerMissingRequests(c corev1.Container) bool {
	return missingFromRequests(c.Resources, func(corev1.ResourceName) bool { return true })
}

func missingFromRequests(r corev1.ResourceRequirements, applies func(corev1.ResourceName) bool) bool {
	for k := range r.Limits {
		if _, ok := r.Requests[k]; !ok && applies(k) {
			return true
		}
	}
	return false
}

func defaultContainerRequests(cs []corev1.Container) []corev1.Container {
	if !slices.ContainsFunc(cs, containerMissingRequests) {
		return cs
	}
	out := slices.Clone(cs)
	for i := range out {
		if !containerMissingRequests(out[i]) {
			continue
		}
		reqs := maps.Clone(out[i].Resources.Requests)
		if reqs == nil {
			reqs = corev1.ResourceList{}
		}
		for k, v := range out[i].Resources.Limits {
			if _, ok := reqs[k]; !ok {
				reqs[k] = v
			}
		}
		out[i].Resources.Requests = reqs
	}
	return out
}

// MaxMilliValue is the largest amount, in milli-units, that code summing resources works with:
// 256Ti (2^48 units: 256 TiB of memory, 281 trillion CPUs) — far beyond any node, small enough
// that 32 such amounts add up without overflowing an int64, and printed readably ("256Ti") when
// an explanation names it.
const MaxMilliValue int64 = 256 << 40 * 1000

// MilliValue returns q in milli-units (rounded up, as resource.Quantity.MilliValue rounds),
// saturated at ±[MaxMilliValue]. resource.Quantity.MilliValue wraps around instead for amounts
// above about 9.2e15 units (a pod asking `memory: 9E`, a pool limit `cpu: 1e16`), turning them
// into small or negative numbers. Saturating keeps their meaning: a request that large fits no
// node, and a limit that large limits nothing.
func MilliValue(q resource.Quantity) int64 {
	const maxUnits = MaxMilliValue / 1000
	if v, ok := q.AsInt64(); ok && v <= maxUnits && v >= -maxUnits {
		// A whole number of units (most amounts: "2", "29", "3788Mi"): the comparisons below,
		// each a scaling, are then a third of the cost of a solve's catalog reading.
		return v * 1000
	}
	return saturatedMilli(q)
}

// saturatedMilli is MilliValue without its whole-units shortcut: q's comparisons with the
// limits, then its milli-units.
func saturatedMilli(q resource.Quantity) int64 {
	const maxUnits = MaxMilliValue / 1000
	switch {
	case q.CmpInt64(maxUnits) > 0:
		return MaxMilliValue
	case q.CmpInt64(-maxUnits) < 0:
		return -MaxMilliValue
	}
	return q.MilliValue()
}

// Value returns q in whole units (rounded up), saturated at ±[MaxMilliValue]/1000 as
// [MilliValue] is, e.g. for a node-count limit such as `nodes: 1e30`.
func Value(q resource.Quantity) int64 {
	return MilliValue(q) / 1000
}
