package scheduling_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// Two pods of 3 and 1 vCPU: Karpenter launches one 8-vCPU node for them ($0.40/h);
// nodeplan a 4-vCPU and a 2-vCPU node ($0.30/h).
func ExampleSolve() {
	cpuType := func(vcpu int64, price float64) nodeplan.InstanceType {
		name := fmt.Sprintf("c-%d", vcpu)
		return nodeplan.InstanceType{
			Name:      name,
			Labels:    map[string]string{nodeplan.LabelInstanceType: name, nodeplan.LabelArch: "amd64"},
			Capacity:  corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(vcpu, resource.DecimalSI), corev1.ResourcePods: resource.MustParse("110")},
			Overhead:  nodeplan.Overhead{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
			Offerings: []nodeplan.Offering{{Zone: "us-east-1a", CapacityType: nodeplan.CapacityTypeOnDemand, Price: price, Available: true}},
		}
	}
	pod := func(name, cpu string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
		}
	}

	res, err := scheduling.Solve(context.Background(), scheduling.Input{
		Pods:          []*corev1.Pod{pod("big", "3"), pod("small", "1")},
		NodePools:     []nodeplan.NodePool{{Name: "default"}},
		InstanceTypes: []nodeplan.InstanceType{cpuType(2, 0.10), cpuType(4, 0.20), cpuType(8, 0.40)},
	})
	if err != nil {
		panic(err)
	}
	for _, c := range res.NodeClaims {
		fmt.Printf("launch %s in %s at $%.2f/h for %v\n", c.InstanceType, c.Offering.Zone, c.Offering.Price, c.Pods)
	}
	fmt.Printf("total $%.2f/h, lower bound $%.2f/h\n", res.Cost, res.LowerBound)
	// Output:
	// launch c-2 in us-east-1a at $0.10/h for [default/small]
	// launch c-4 in us-east-1a at $0.20/h for [default/big]
	// total $0.30/h, lower bound $0.30/h
}
