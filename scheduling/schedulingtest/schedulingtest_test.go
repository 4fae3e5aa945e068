package schedulingtest_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
)

func pod(name, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
}

// cType is the reference note's catalog: c-N has N vCPU at $0.05 per vCPU, 100m overhead.
func cType(vcpu int64, price float64) nodeplan.InstanceType {
	name := fmt.Sprintf("c-%d", vcpu)
	return nodeplan.InstanceType{
		Name:   name,
		Labels: map[string]string{nodeplan.LabelInstanceType: name},
		Capacity: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(vcpu, resource.DecimalSI),
			corev1.ResourcePods: resource.MustParse("110")},
		Overhead:  nodeplan.Overhead{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		Offerings: []nodeplan.Offering{{Zone: "z", CapacityType: nodeplan.CapacityTypeOnDemand, Price: price, Available: true}},
	}
}

func catalog() []nodeplan.InstanceType {
	return []nodeplan.InstanceType{cType(2, 0.10), cType(4, 0.20), cType(8, 0.40), cType(16, 0.80)}
}

func TestBaselines(t *testing.T) {
	pool := []nodeplan.NodePool{{Name: "default"}}
	tests := []struct {
		name     string
		in       scheduling.Input
		ffd, opt float64
		unplaced []string
	}{
		{
			// Reference case A (#2457): Karpenter grows one node to c-8; c-4 + c-2 is cheaper.
			name: "3+1 vCPU",
			in:   scheduling.Input{Pods: []*corev1.Pod{pod("a", "3"), pod("b", "1")}, NodePools: pool, InstanceTypes: catalog()},
			ffd:  0.40, opt: 0.30,
		},
		{
			// Reference case B: c-16 priced above two c-8s.
			name: "2×5 vCPU, expensive c-16",
			in: scheduling.Input{Pods: []*corev1.Pod{pod("a", "5"), pod("b", "5")}, NodePools: pool,
				InstanceTypes: []nodeplan.InstanceType{cType(2, 0.10), cType(4, 0.20), cType(8, 0.40), cType(16, 0.90)}},
			ffd: 0.90, opt: 0.80,
		},
		{
			name: "existing node is free",
			in: scheduling.Input{Pods: []*corev1.Pod{pod("a", "1"), pod("b", "1")}, NodePools: pool, InstanceTypes: catalog(),
				Nodes: []scheduling.Node{{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{
					Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourcePods: resource.MustParse("10")}}}}}},
			ffd: 0.10, opt: 0.10,
		},
		{
			name: "too big for any type",
			in:   scheduling.Input{Pods: []*corev1.Pod{pod("a", "1"), pod("huge", "20")}, NodePools: pool, InstanceTypes: catalog()},
			ffd:  0.10, opt: 0.10,
			unplaced: []string{"default/huge"},
		},
		{
			name: "a tainted pool takes no pods",
			in: scheduling.Input{Pods: []*corev1.Pod{pod("a", "1")}, InstanceTypes: catalog(), NodePools: []nodeplan.NodePool{{Name: "gpu", Weight: 10,
				Template: nodeplan.NodeClaimTemplate{Taints: []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}}}}},
			unplaced: []string{"default/a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cost, unplaced := schedulingtest.FirstFitDecreasing(tt.in)
			if math.Abs(cost-tt.ffd) > 1e-9 || !slices.Equal(unplaced, tt.unplaced) {
				t.Errorf("FirstFitDecreasing(%s) = %v, %v, want %v, %v", tt.name, cost, unplaced, tt.ffd, tt.unplaced)
			}
			cost, unplaced, ok := schedulingtest.Optimal(tt.in)
			if !ok || math.Abs(cost-tt.opt) > 1e-9 || !slices.Equal(unplaced, tt.unplaced) {
				t.Errorf("Optimal(%s) = %v, %v, %v, want %v, %v, true", tt.name, cost, unplaced, ok, tt.opt, tt.unplaced)
			}
		})
	}
}

func TestOptimalPoolWeights(t *testing.T) {
	// The heavier pool wins even when pricier: the pod may not use the cheap pool.
	cheap := catalog()
	dear := catalog()
	for i := range dear {
		dear[i].Offerings[0].Price *= 3
	}
	in := scheduling.Input{
		Pods:              []*corev1.Pod{pod("a", "1")},
		NodePools:         []nodeplan.NodePool{{Name: "cheap"}, {Name: "dear", Weight: 10}},
		PoolInstanceTypes: map[string][]nodeplan.InstanceType{"cheap": cheap, "dear": dear},
	}
	if cost, _, ok := schedulingtest.Optimal(in); !ok || math.Abs(cost-0.30) > 1e-9 {
		t.Errorf("Optimal(weighted pools) = %v, %v, want 0.3, true", cost, ok)
	}
}

func TestOptimalOutOfScope(t *testing.T) {
	in := scheduling.Input{Pods: []*corev1.Pod{pod("a", "1")}, NodePools: []nodeplan.NodePool{{Name: "p",
		Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}}}, InstanceTypes: catalog()}
	if _, _, ok := schedulingtest.Optimal(in); ok {
		t.Errorf("Optimal(pool with limits) ok = true, want false")
	}
}

func TestInputsAreValid(t *testing.T) {
	for _, cfg := range []schedulingtest.Config{{}, {Topology: true}, {Exact: true}} {
		t.Run(fmt.Sprintf("%+v", cfg), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				in := schedulingtest.Inputs(cfg).Draw(rt, "input")
				if err := in.Validate(); err != nil {
					rt.Fatalf("Validate() = %v, want nil", err)
				}
				if cfg.Exact {
					if _, _, ok := schedulingtest.Optimal(in); !ok {
						rt.Fatalf("Optimal(exact input) ok = false, want true")
					}
				}
			})
		})
	}
}

// The optimum is never worse than first-fit when both place the same pods.
func TestOptimalBeatsFirstFit(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		in := schedulingtest.Inputs(schedulingtest.Config{Exact: true}).Draw(rt, "input")
		opt, optOut, ok := schedulingtest.Optimal(in)
		if !ok {
			rt.Fatal("out of scope")
		}
		ffd, ffdOut := schedulingtest.FirstFitDecreasing(in)
		if len(optOut) > len(ffdOut) {
			rt.Fatalf("Optimal leaves %v out, first-fit only %v", optOut, ffdOut)
		}
		if len(optOut) == len(ffdOut) && opt > ffd+1e-9 {
			rt.Fatalf("Optimal = %v > FirstFitDecreasing = %v", opt, ffd)
		}
	})
}
