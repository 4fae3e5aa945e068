package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/cache"
)

func TestBufferReplicas(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	rl := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	slot := rl("cpu", "500m", "memory", "1Gi")
	for _, tc := range []struct {
		name                           string
		replicas, percentage, workload *int32
		limits                         corev1.ResourceList
		want                           int32
	}{
		{name: "replicas", replicas: i32(3), want: 3},
		{name: "percentage rounds up", percentage: i32(10), workload: i32(25), want: 3},
		{name: "percentage at least one", percentage: i32(1), workload: i32(5), want: 1},
		{name: "zero percentage", percentage: i32(0), workload: i32(5), want: 0},
		{name: "the larger of replicas and percentage", replicas: i32(2), percentage: i32(50), workload: i32(10), want: 5},
		{name: "limits cap replicas", replicas: i32(10), limits: rl("cpu", "2"), want: 4},
		{name: "the tightest limit wins", replicas: i32(10), limits: rl("cpu", "4", "memory", "3Gi"), want: 3},
		{name: "limits alone", limits: rl("memory", "5Gi"), want: 5},
		{name: "a limit on a resource the slot does not ask for is ignored", replicas: i32(2), limits: rl("nvidia.com/gpu", "1"), want: 2},
		{name: "nothing set", want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bufferReplicas(tc.replicas, tc.percentage, tc.workload, tc.limits, slot); got != tc.want {
				t.Errorf("bufferReplicas = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestVirtualPod(t *testing.T) {
	var b capacityBuffer
	b.Name, b.Namespace, b.UID = "headroom", "web", "uid-1"
	tmpl := corev1.PodTemplateSpec{}
	tmpl.Labels = map[string]string{"app": "web"}
	tmpl.Spec = corev1.PodSpec{
		PriorityClassName: "high",
		Volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
		},
		Containers: []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "data"}, {Name: "cfg"}}}},
	}
	p := virtualPod(&b, tmpl, 2)
	type view struct {
		Name, Namespace, UID, Scheduler, PriorityClass string
		Priority                                       int32
		Labels, Annotations                            map[string]string
		Volumes, Mounts                                []string
		Unschedulable                                  bool
	}
	got := view{Name: p.Name, Namespace: p.Namespace, UID: string(p.UID), Scheduler: p.Spec.SchedulerName,
		PriorityClass: p.Spec.PriorityClassName, Priority: *p.Spec.Priority, Labels: p.Labels, Annotations: p.Annotations,
		Unschedulable: provisionable(p)}
	for _, v := range p.Spec.Volumes {
		got.Volumes = append(got.Volumes, v.Name)
	}
	for _, m := range p.Spec.Containers[0].VolumeMounts {
		got.Mounts = append(got.Mounts, m.Name)
	}
	want := view{Name: "capacity-buffer-headroom-2", Namespace: "web", UID: "uid-1-2", Scheduler: "default-scheduler",
		Priority: -2147483648, Labels: map[string]string{"app": "web"},
		Annotations: map[string]string{AnnotationBufferPod: "true", AnnotationBufferName: "headroom", AnnotationBufferNamespace: "web"},
		Volumes:     []string{"cfg"}, Mounts: []string{"cfg"}, Unschedulable: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("virtual pod (-want +got):\n%s", diff)
	}
	if len(tmpl.Spec.Volumes) != 2 || len(tmpl.Spec.Containers[0].VolumeMounts) != 2 {
		t.Errorf("the template was modified")
	}
}

// TestReservedReleasesBufferSlots: an in-flight claim launched for a real pod and a buffer slot
// keeps room for the real pod only; the slot (no such pod will ever exist) is placed afresh by
// the next solve — on this claim's room — instead of being launched for again.
func TestReservedReleasesBufferSlots(t *testing.T) {
	c := &Controller{podLister: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})}
	cpu := func(s string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s)}
	}
	real := &corev1.Pod{}
	real.Name, real.Namespace = "real", "ns"
	if err := c.podLister.Add(real); err != nil {
		t.Fatal(err)
	}
	cl := &Claim{Planned: map[string]corev1.ResourceList{"ns/real": cpu("1"), "ns/capacity-buffer-headroom-1": cpu("2")}}
	cl.Resources = cpu("3")
	got := c.reserved(cl, map[string]bool{})
	if q := got[corev1.ResourceCPU]; q.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("reserved cpu = %s, want 1 (the real pod's)", q.String())
	}
}
