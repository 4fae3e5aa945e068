package nodeplan

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	"pgregory.net/rapid"

	"github.com/nodeplan/nodeplan/internal/apiserverpod"
)

func TestPodRequestsPodLevelAndResize(t *testing.T) {
	podLevel := func(req, lim corev1.ResourceList) *corev1.ResourceRequirements {
		return &corev1.ResourceRequirements{Requests: req, Limits: lim}
	}
	tests := []struct {
		name   string
		spec   corev1.PodSpec
		status corev1.PodStatus
		want   corev1.ResourceList
	}{
		{"pod-level requests replace the containers' sum", corev1.PodSpec{
			Resources:  podLevel(rl("cpu", "6", "memory", "8Gi"), nil),
			Containers: []corev1.Container{container(nil), container(rl("cpu", "1"))},
		}, corev1.PodStatus{}, rl("cpu", "6", "memory", "8Gi", "pods", "1")},
		{"pod-level requests for cpu only keep the containers' memory", corev1.PodSpec{
			Resources:  podLevel(rl("cpu", "4"), nil),
			Containers: []corev1.Container{container(rl("cpu", "1", "memory", "1Gi"))},
		}, corev1.PodStatus{}, rl("cpu", "4", "memory", "1Gi", "pods", "1")},
		{"pod-level limits alone default the requests (containers' first)", corev1.PodSpec{
			Resources:  podLevel(nil, rl("cpu", "4", "memory", "2Gi")),
			Containers: []corev1.Container{container(rl("cpu", "1"))},
		}, corev1.PodStatus{}, rl("cpu", "1", "memory", "2Gi", "pods", "1")},
		{"overhead on top of pod-level requests", corev1.PodSpec{
			Resources: podLevel(rl("cpu", "2"), nil), Overhead: rl("cpu", "250m"),
			Containers: []corev1.Container{container(nil)},
		}, corev1.PodStatus{}, rl("cpu", "2250m", "pods", "1")},
		{"a resize counts at the larger of desired and allocated", corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "1")}}},
		}, corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", AllocatedResources: rl("cpu", "3")}}},
			rl("cpu", "3", "pods", "1")},
		{"an infeasible resize counts at what is allocated", corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: rl("cpu", "8")}}},
		}, corev1.PodStatus{
			Conditions:        []corev1.PodCondition{{Type: corev1.PodResizePending, Reason: corev1.PodReasonInfeasible}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", AllocatedResources: rl("cpu", "2")}},
		}, rl("cpu", "2", "pods", "1")},
	}
	for _, tt := range tests {
		pod := &corev1.Pod{Spec: tt.spec, Status: tt.status}
		if diff := cmp.Diff(tt.want, PodRequests(pod)); diff != "" {
			t.Errorf("%s: PodRequests() (-want +got):\n%s", tt.name, diff)
		}
	}
}

// schedulerRequests is what kube-scheduler v1.37 accounts for a pod, straight from the library,
// plus the pod slot.
func schedulerRequests(pod *corev1.Pod) corev1.ResourceList {
	r := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{UseStatusResources: true, InPlacePodLevelResourcesVerticalScalingEnabled: true})
	q := r[corev1.ResourcePods]
	q.Add(resource.MustParse("1"))
	r[corev1.ResourcePods] = q
	return r
}

var resourceNames = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, "hugepages-2Mi", "nvidia.com/gpu", corev1.ResourceEphemeralStorage}

func drawList(t *rapid.T, label string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range resourceNames {
		if rapid.IntRange(0, 2).Draw(t, label+" has "+string(n)) == 0 {
			out[n] = *resource.NewMilliQuantity(rapid.Int64Range(0, 64000).Draw(t, label+" "+string(n)), resource.DecimalSI)
		}
	}
	if len(out) == 0 && rapid.Bool().Draw(t, label+" nil") {
		return nil
	}
	return out
}

// drawPod draws a pod with containers, init containers (some sidecars), maybe pod-level
// resources and overhead. With defaulted set, every limit has a request, as a pod read from an
// API server has.
func drawPod(t *rapid.T, defaulted bool) *corev1.Pod {
	req := func(label string) corev1.ResourceRequirements {
		r := corev1.ResourceRequirements{Requests: drawList(t, label+" requests"), Limits: drawList(t, label+" limits")}
		// Validation holds hugepages requests equal to their limits.
		if q, ok := r.Limits["hugepages-2Mi"]; ok {
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			r.Requests["hugepages-2Mi"] = q
		} else if q, ok := r.Requests["hugepages-2Mi"]; ok {
			if r.Limits == nil {
				r.Limits = corev1.ResourceList{}
			}
			r.Limits["hugepages-2Mi"] = q
		}
		if defaulted {
			for k, v := range r.Limits {
				if _, ok := r.Requests[k]; !ok {
					if r.Requests == nil {
						r.Requests = corev1.ResourceList{}
					}
					r.Requests[k] = v
				}
			}
		}
		return r
	}
	p := &corev1.Pod{}
	p.Name = "p"
	for i := range rapid.IntRange(1, 3).Draw(t, "containers") {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", i), Resources: req(fmt.Sprintf("c%d", i))})
	}
	for i := range rapid.IntRange(0, 3).Draw(t, "init containers") {
		c := corev1.Container{Name: fmt.Sprintf("i%d", i), Resources: req(fmt.Sprintf("i%d", i))}
		if rapid.Bool().Draw(t, c.Name+" sidecar") {
			always := corev1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
	if rapid.Bool().Draw(t, "pod-level") {
		r := corev1.ResourceRequirements{}
		for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if rapid.Bool().Draw(t, "pod-level request "+string(n)) {
				if r.Requests == nil {
					r.Requests = corev1.ResourceList{}
				}
				r.Requests[n] = *resource.NewMilliQuantity(rapid.Int64Range(1, 64000).Draw(t, "pod request "+string(n)), resource.DecimalSI)
			}
			if !defaulted && rapid.Bool().Draw(t, "pod-level limit "+string(n)) {
				if r.Limits == nil {
					r.Limits = corev1.ResourceList{}
				}
				r.Limits[n] = *resource.NewMilliQuantity(rapid.Int64Range(64000, 128000).Draw(t, "pod limit "+string(n)), resource.DecimalSI)
			}
		}
		p.Spec.Resources = &r
	}
	if rapid.Bool().Draw(t, "overhead") {
		p.Spec.Overhead = drawList(t, "overhead")
	}
	return p
}

// TestPropertyPodRequestsMatchesKubeScheduler: on pods as an API server returns them (every
// limit with a request), with random resize status, PodRequests is kube-scheduler's library
// result exactly.
func TestPropertyPodRequestsMatchesKubeScheduler(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pod := drawPod(t, true)
		for _, c := range pod.Spec.Containers {
			if rapid.Bool().Draw(t, c.Name+" status") {
				cs := corev1.ContainerStatus{Name: c.Name, AllocatedResources: c.Resources.Requests.DeepCopy(),
					Resources: &corev1.ResourceRequirements{Requests: c.Resources.Requests.DeepCopy()}}
				if rapid.Bool().Draw(t, c.Name+" resized") {
					cs.AllocatedResources = drawList(t, c.Name+" allocated")
					cs.Resources.Requests = drawList(t, c.Name+" actuated")
				}
				pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, cs)
			}
		}
		if rapid.Bool().Draw(t, "resize pending") {
			reason := rapid.SampledFrom([]string{corev1.PodReasonInfeasible, corev1.PodReasonDeferred}).Draw(t, "reason")
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending, Reason: reason})
		}
		if diff := cmp.Diff(schedulerRequests(pod), PodRequests(pod)); diff != "" {
			t.Fatalf("PodRequests() differs from component-helpers' PodRequests (-library +ours):\n%s", diff)
		}
		if StatusRequestsMatchSpec(pod) {
			specOnly := pod.DeepCopy()
			specOnly.Status = corev1.PodStatus{}
			if diff := cmp.Diff(PodRequests(specOnly), PodRequests(pod)); diff != "" {
				t.Fatalf("StatusRequestsMatchSpec() = true but the status changes PodRequests (-spec only +with status):\n%s", diff)
			}
		}
	})
}

// TestPropertyPodRequestsDefaultsAsTheAPIServer: on hand-built pods (limits without requests,
// pod-level limits alone), PodRequests equals the library's result on the same pod as the API
// server returns it.
func TestPropertyPodRequestsDefaultsAsTheAPIServer(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pod := drawPod(t, false)
		want := schedulerRequests(apiserverpod.Shape(pod))
		if diff := cmp.Diff(want, PodRequests(pod)); diff != "" {
			t.Fatalf("PodRequests(hand-built pod) differs from the library on the API-server-shaped pod (-library +ours):\n%s", diff)
		}
	})
}
