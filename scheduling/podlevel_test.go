package scheduling_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/check"
	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
)

// sixCPUPodLevel asks for 6 CPUs and 8Gi at pod level; its containers ask for nothing.
func sixCPUPodLevel() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pod-level"},
		Spec: corev1.PodSpec{
			Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("6"), corev1.ResourceMemory: resource.MustParse("8Gi")}},
			Containers: []corev1.Container{{Name: "app"}, {Name: "proxy"}},
		},
	}
}

func computeType(n int64, price float64) nodeplan.InstanceType {
	name := "c-" + resource.NewQuantity(n, resource.DecimalSI).String()
	return nodeplan.InstanceType{
		Name:   name,
		Labels: map[string]string{nodeplan.LabelInstanceType: name, nodeplan.LabelArch: "amd64", nodeplan.LabelOS: "linux"},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(n, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(n*2<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
		},
		Offerings: []nodeplan.Offering{{Zone: "zone-a", CapacityType: nodeplan.CapacityTypeOnDemand, Price: float64(n) * 0.05, Available: true}},
	}
}

func TestPodLevelResourcesSizeTheNode(t *testing.T) {
	catalog := []nodeplan.InstanceType{computeType(2, 0), computeType(4, 0), computeType(8, 0), computeType(16, 0)}
	for _, shaped := range []bool{false, true} {
		pod := sixCPUPodLevel()
		if shaped {
			pod = schedulingtest.APIServerShaped(pod)
		}
		in := scheduling.Input{Pods: []*corev1.Pod{pod}, NodePools: []nodeplan.NodePool{{Name: "default"}}, InstanceTypes: catalog}
		res, err := scheduling.Solve(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.NodeClaims) != 1 || res.NodeClaims[0].InstanceType != "c-8" {
			var got []string
			for _, c := range res.NodeClaims {
				got = append(got, c.InstanceType)
			}
			t.Errorf("Solve(six-CPU pod-level pod, API-server-shaped %t) launched %v, want one c-8", shaped, got)
		}
		if err := check.Result(in, res); err != nil {
			t.Errorf("check.Result: %v", err)
		}
	}
}

// The independent checker must count pod-level requests too: a plan that puts the six-CPU pod
// on a 2-vCPU node is refused.
func TestCheckRefusesPodLevelPodOnSmallNode(t *testing.T) {
	small := computeType(2, 0)
	in := scheduling.Input{Pods: []*corev1.Pod{sixCPUPodLevel()}, NodePools: []nodeplan.NodePool{{Name: "default"}},
		InstanceTypes: []nodeplan.InstanceType{small}}
	// The plan as the solver made it before pod-level resources were counted.
	bare := sixCPUPodLevel()
	bare.Spec.Resources = nil
	res, err := scheduling.Solve(context.Background(), scheduling.Input{Pods: []*corev1.Pod{bare}, NodePools: in.NodePools, InstanceTypes: in.InstanceTypes})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NodeClaims) != 1 {
		t.Fatalf("setup: want one claim, got %d", len(res.NodeClaims))
	}
	var fits bool
	for _, v := range check.Violations(check.Result(in, res)) {
		fits = fits || v.Rule == check.RuleResources
	}
	if !fits {
		t.Errorf("check.Result(six-CPU pod-level pod on %s) found no %s violation", small.Name, check.RuleResources)
	}
}
