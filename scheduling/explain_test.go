package scheduling

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeplan/nodeplan"
)

// The most common pool shape: a list of instance types. A pod no type of the list can hold
// is explained by the resource it asks too much of, naming the pool's own types — not by a
// type the pool excludes and the zones (#13 item 4; the message used to name c5.12xlarge).
func TestExplainsAnInstanceTypeListPool(t *testing.T) {
	catalog := loadCatalog(t)
	np := nodeplan.NodePool{Name: "t3", Template: nodeplan.NodeClaimTemplate{Requirements: nodeplan.NewRequirements(
		nodeplan.In(nodeplan.LabelInstanceType, "t3.medium", "t3.large", "t3.xlarge"))}}
	cpu := pod("cpu", "4", "1Gi")
	eni := pod("eni", "500m", "512Mi")
	eni.Spec.Containers[0].Resources.Requests["vpc.amazonaws.com/pod-eni"] = resource.MustParse("1")
	eni.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"vpc.amazonaws.com/pod-eni": resource.MustParse("1")}
	res, err := Solve(context.Background(), Input{Pods: []*corev1.Pod{cpu, eni}, NodePools: []nodeplan.NodePool{np}, InstanceTypes: catalog})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"default/cpu": "nodepool t3: no instance type of the pool has 4 cpu allocatable (largest: t3.xlarge, 3920m)",
		"default/eni": "nodepool t3: no instance type of the pool has vpc.amazonaws.com/pod-eni; the pod asks for 1 (the pool's types: t3.large, t3.medium, t3.xlarge)",
	}
	got := map[string]Unschedulable{}
	for _, u := range res.Unschedulable {
		got[u.Pod] = u
	}
	for k, msg := range want {
		u := got[k]
		if u.Code != ReasonNoInstanceType || u.Message != msg {
			t.Errorf("Unschedulable[%s] = %s %q, want %s %q", k, u.Code, u.Message, ReasonNoInstanceType, msg)
		}
		if strings.Contains(u.Message, "c5.") {
			t.Errorf("Unschedulable[%s] names a type the pool excludes: %q", k, u.Message)
		}
	}
}
