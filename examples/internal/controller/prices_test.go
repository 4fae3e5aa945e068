package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/pricing"
	"github.com/nodeplan/nodeplan/scheduling"
)

// The controller's solve sees prices as the cost model and the NodeOverlays make them: each
// changes the instance type chosen for the same pod.
func TestCostModelAndNodeOverlaysChangeTheControllersChoice(t *testing.T) {
	mk := func(name string, cpu int64, price float64) nodeplan.InstanceType {
		return nodeplan.InstanceType{
			Name:      name,
			Labels:    map[string]string{nodeplan.LabelInstanceType: name, nodeplan.LabelArch: "amd64", nodeplan.LabelOS: "linux"},
			Capacity:  corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(cpu, resource.DecimalSI), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Offerings: []nodeplan.Offering{{Zone: "us-east-1a", CapacityType: nodeplan.CapacityTypeOnDemand, Price: price, Available: true}},
		}
	}
	provider := &cloudprovider.Memory{Catalog: []nodeplan.InstanceType{mk("c5.xlarge", 4, 0.20), mk("m5.xlarge", 4, 0.22)}}
	pools := []nodeplan.NodePool{{Name: "default"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}}}
	chosen := func(c *Controller) string {
		t.Helper()
		types, cost := c.instanceTypes(context.Background(), pools)
		res, err := scheduling.Solve(context.Background(), scheduling.Input{
			Pods: []*corev1.Pod{pod}, NodePools: pools, PoolInstanceTypes: types, Options: scheduling.Options{NodeCost: cost},
		})
		if err != nil || len(res.NodeClaims) != 1 {
			t.Fatalf("Solve() = %+v, %v; want one node claim", res, err)
		}
		return res.NodeClaims[0].InstanceType
	}
	if got := chosen(&Controller{Provider: provider}); got != "c5.xlarge" {
		t.Fatalf("list prices: chose %s, want c5.xlarge", got)
	}
	model, err := pricing.ParseCostModel([]byte("prices:\n- instanceType: m5.xlarge\n  price: 0.10\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := chosen(&Controller{Provider: provider, CostModel: model}); got != "m5.xlarge" {
		t.Errorf("with a cost model pricing m5.xlarge at $0.10 (a Reserved Instance): chose %s, want m5.xlarge", got)
	}
	overlays, err := nodeplan.DecodeNodeOverlays([]byte(`apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: avoid-c}
spec:
  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [c5.xlarge]}]
  priceAdjustment: "+50%"
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := chosen(&Controller{Provider: provider, NodeOverlays: overlays}); got != "m5.xlarge" {
		t.Errorf("with a NodeOverlay raising c5.xlarge by 50%%: chose %s, want m5.xlarge", got)
	}
}
