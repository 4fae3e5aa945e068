package check

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// podRequests is what kube-scheduler v1.37 accounts for a pod — component-helpers'
// PodRequests with the scheduler's options (pod-level resources, sidecars, init containers,
// overhead, in-place resize status) — plus its pod slot. It is written here, not borrowed from
// the root package, so a mistake in the solver's copy of the rule is not repeated.
//
// A pod that did not pass through an API server is defaulted first as kube-apiserver does:
// a container limit without a request stands for the request, and pod-level limits without
// pod-level requests give the requests (the containers' requests for cpu and memory first).
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	p := pod.DeepCopy()
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			for k, v := range r.Limits {
				if _, ok := r.Requests[k]; !ok {
					if r.Requests == nil {
						r.Requests = corev1.ResourceList{}
					}
					r.Requests[k] = v
				}
			}
		}
	}
	if r := p.Spec.Resources; r != nil && len(r.Limits) > 0 {
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		containers := resourcehelper.AggregateContainerRequests(p, resourcehelper.PodResourcesOptions{})
		for k, lim := range r.Limits {
			if _, ok := r.Requests[k]; ok || !resourcehelper.IsSupportedPodLevelResource(k) {
				continue
			}
			if q, ok := containers[k]; ok && (k == corev1.ResourceCPU || k == corev1.ResourceMemory) {
				r.Requests[k] = q
			} else {
				r.Requests[k] = lim
			}
		}
	}
	reqs := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{UseStatusResources: true, InPlacePodLevelResourcesVerticalScalingEnabled: true})
	n := reqs[corev1.ResourcePods]
	n.Add(*resource.NewQuantity(1, resource.DecimalSI))
	reqs[corev1.ResourcePods] = n
	return reqs
}
