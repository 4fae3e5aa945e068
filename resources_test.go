package nodeplan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// rl builds a resource list from name/quantity pairs: rl("cpu", "1", "memory", "1Gi").
func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func container(requests corev1.ResourceList) corev1.Container {
	return corev1.Container{Resources: corev1.ResourceRequirements{Requests: requests}}
}

func sidecar(requests corev1.ResourceList) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	c := container(requests)
	c.RestartPolicy = &always
	return c
}

func TestPodRequests(t *testing.T) {
	tests := []struct {
		name string
		spec corev1.PodSpec
		want corev1.ResourceList
	}{
		{"empty pod takes a pod slot", corev1.PodSpec{}, rl("pods", "1")},
		{"containers add up", corev1.PodSpec{Containers: []corev1.Container{
			container(rl("cpu", "100m", "memory", "128Mi")), container(rl("cpu", "200m", "nvidia.com/gpu", "1")),
		}}, rl("cpu", "300m", "memory", "128Mi", "nvidia.com/gpu", "1", "pods", "1")},
		{"init container larger than the containers", corev1.PodSpec{
			InitContainers: []corev1.Container{container(rl("cpu", "2", "memory", "64Mi"))},
			Containers:     []corev1.Container{container(rl("cpu", "1", "memory", "1Gi"))},
		}, rl("cpu", "2", "memory", "1Gi", "pods", "1")},
		{"init containers run one at a time: max, not sum", corev1.PodSpec{
			InitContainers: []corev1.Container{container(rl("cpu", "2")), container(rl("cpu", "3"))},
			Containers:     []corev1.Container{container(rl("cpu", "1"))},
		}, rl("cpu", "3", "pods", "1")},
		{"sidecars run alongside the containers", corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar(rl("cpu", "500m", "memory", "100Mi"))},
			Containers:     []corev1.Container{container(rl("cpu", "1", "memory", "1Gi"))},
		}, rl("cpu", "1500m", "memory", "1124Mi", "pods", "1")},
		{"an init container after a sidecar runs beside it", corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar(rl("cpu", "500m")), container(rl("cpu", "2"))},
			Containers:     []corev1.Container{container(rl("cpu", "1"))},
		}, rl("cpu", "2500m", "pods", "1")},
		{"an init container before a sidecar runs alone", corev1.PodSpec{
			InitContainers: []corev1.Container{container(rl("cpu", "2")), sidecar(rl("cpu", "500m"))},
			Containers:     []corev1.Container{container(rl("cpu", "1"))},
		}, rl("cpu", "2", "pods", "1")},
		{"two sidecars and a late init container", corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar(rl("memory", "1Gi")), sidecar(rl("memory", "1Gi")), container(rl("memory", "3Gi"))},
			Containers:     []corev1.Container{container(rl("memory", "1Gi"))},
		}, rl("memory", "5Gi", "pods", "1")},
		{"overhead is added", corev1.PodSpec{
			Overhead:   rl("cpu", "250m", "memory", "120Mi"),
			Containers: []corev1.Container{container(rl("cpu", "1", "memory", "1Gi"))},
		}, rl("cpu", "1250m", "memory", "1144Mi", "pods", "1")},
		{"overhead on top of the init peak", corev1.PodSpec{
			Overhead:       rl("cpu", "100m"),
			InitContainers: []corev1.Container{container(rl("cpu", "4"))},
			Containers:     []corev1.Container{container(rl("cpu", "1"))},
		}, rl("cpu", "4100m", "pods", "1")},
		{"limits stand in for missing requests", corev1.PodSpec{Containers: []corev1.Container{{
			Resources: corev1.ResourceRequirements{Limits: rl("cpu", "2", "memory", "2Gi"), Requests: rl("cpu", "500m")},
		}}}, rl("cpu", "500m", "memory", "2Gi", "pods", "1")},
	}
	for _, tt := range tests {
		pod := &corev1.Pod{Spec: tt.spec}
		got := PodRequests(pod)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: PodRequests mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestPodRequestsDoesNotModifyPod(t *testing.T) {
	big := resource.MustParse("1e30") // too big for the int64 fast path
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Overhead:       corev1.ResourceList{"example.com/huge": big.DeepCopy()},
		InitContainers: []corev1.Container{container(corev1.ResourceList{"example.com/huge": big.DeepCopy()})},
		Containers:     []corev1.Container{container(corev1.ResourceList{"example.com/huge": big.DeepCopy()})},
	}}
	before := pod.DeepCopy()
	_ = PodRequests(pod)
	_ = PodRequests(pod)
	if diff := cmp.Diff(before, pod); diff != "" {
		t.Errorf("PodRequests modified the pod (-before +after):\n%s", diff)
	}
}

func TestResourceArithmetic(t *testing.T) {
	a, b := rl("cpu", "2", "memory", "1Gi"), rl("cpu", "500m", "pods", "3")
	if diff := cmp.Diff(rl("cpu", "2500m", "memory", "1Gi", "pods", "3"), AddResources(a, b)); diff != "" {
		t.Errorf("AddResources mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(rl("cpu", "1500m", "memory", "1Gi"), SubtractResources(a, b)); diff != "" {
		t.Errorf("SubtractResources mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(rl("cpu", "0"), SubtractResources(rl("cpu", "1"), rl("cpu", "3"))); diff != "" {
		t.Errorf("SubtractResources below zero mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(rl("cpu", "2", "memory", "1Gi", "pods", "3"), MaxResources(a, b)); diff != "" {
		t.Errorf("MaxResources mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(rl("cpu", "2", "memory", "1Gi"), a); diff != "" {
		t.Errorf("arguments modified (-want +got):\n%s", diff)
	}
	tests := []struct {
		req, avail corev1.ResourceList
		name       corev1.ResourceName
		ok         bool
	}{
		{rl("cpu", "1"), rl("cpu", "1"), "", true},
		{rl("cpu", "1001m"), rl("cpu", "1"), "cpu", false},
		{rl("cpu", "1", "nvidia.com/gpu", "1"), rl("cpu", "4"), "nvidia.com/gpu", false},
		{rl("cpu", "0", "nvidia.com/gpu", "0"), rl(), "", true},
		{rl("memory", "2Gi", "cpu", "8"), rl("cpu", "4", "memory", "1Gi"), "cpu", false},
	}
	for _, tt := range tests {
		name, ok := Fits(tt.req, tt.avail)
		if name != tt.name || ok != tt.ok {
			t.Errorf("Fits(%v, %v) = %q, %v; want %q, %v", tt.req, tt.avail, name, ok, tt.name, tt.ok)
		}
	}
}
