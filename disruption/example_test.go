package disruption_test

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
)

// Three lightly used nodes: two go, their pods move onto the third, and the third says why it
// stays.
func ExamplePlan() {
	data, err := os.ReadFile("testdata/catalog.json")
	if err != nil {
		panic(err)
	}
	catalog, err := nodeplan.DecodeCatalog(data)
	if err != nil {
		panic(err)
	}
	var m5xl nodeplan.InstanceType
	for _, it := range catalog {
		if it.Name == "m5.xlarge" {
			m5xl = it
		}
	}
	now := time.Date(2026, 11, 16, 10, 0, 0, 0, time.UTC)
	yes := true
	var nodes []disruption.Node
	for i := range 3 {
		name := fmt.Sprintf("node-%d", i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			nodeplan.LabelNodePool: "default", nodeplan.LabelInstanceType: "m5.xlarge", nodeplan.LabelArch: "amd64",
			nodeplan.LabelOS: "linux", nodeplan.LabelZone: "us-east-1a", nodeplan.LabelCapacityType: "on-demand",
			nodeplan.LabelHostname: name,
		}}, Status: corev1.NodeStatus{Allocatable: m5xl.Allocatable()}}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Namespace: "default",
				OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", Controller: &yes}}},
			Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "web",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
		nodes = append(nodes, disruption.Node{Node: node, Pods: []*corev1.Pod{pod}, NodePool: "default",
			InstanceType: "m5.xlarge", Zone: "us-east-1a", CapacityType: nodeplan.CapacityTypeOnDemand, Price: 0.192,
			Created: now.Add(-48 * time.Hour), Initialized: now.Add(-48 * time.Hour)})
	}
	pool := nodeplan.NodePool{Name: "default"}
	pool.Disruption.Budgets = []nodeplan.Budget{{Nodes: nodeplan.NodeCount{Value: 100, Percent: true}}}

	res, err := disruption.Plan(context.Background(), disruption.Input{
		Nodes:         nodes,
		NodePools:     []nodeplan.NodePool{pool},
		InstanceTypes: catalog,
		Now:           now,
	})
	if err != nil {
		panic(err)
	}
	for _, c := range res.Commands {
		fmt.Printf("%s %v (%s): %d pods move, saves $%.3f/h\n", c.Action, c.Nodes, c.Reason, len(c.Pods), c.Savings)
	}
	for _, b := range res.Blocked {
		fmt.Printf("keep %s: %s\n", b.Node, b.Code)
	}
	// Output:
	// Delete [node-0 node-1] (Underutilized): 2 pods move, saves $0.384/h
	// keep node-2: ReceivesPods
}
