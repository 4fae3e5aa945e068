package scheduling

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeplan/nodeplan"
)

// Amounts beyond what milli-units in an int64 hold saturate: a pod asking more than any node has
// is unschedulable, a pool limit beyond any total is no limit — never a wrapped, negative number.
func TestHugeQuantitiesSaturate(t *testing.T) {
	catalog := loadCatalog(t)
	tests := []struct {
		name          string
		pod           *corev1.Pod
		limits        corev1.ResourceList
		wantPlaced    bool
		wantNoClaims  bool
		wantReasonHas string
	}{
		{name: "memory 9E asks more than any node", pod: pod("huge", "1", "9E"), wantPlaced: false, wantNoClaims: true},
		{name: "cpu 1e16 is more than any node", pod: pod("huge", "1e16", ""), wantPlaced: false, wantNoClaims: true},
		{name: "pool limit cpu 1e16 does not block", pod: pod("small", "1", "1Gi"), limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1e16")}, wantPlaced: true},
		{name: "pool limit memory 10Pi does not block", pod: pod("small", "1", "1Gi"), limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("10Pi")}, wantPlaced: true},
		{name: "pool limit nodes 1e30 does not block", pod: pod("small", "1", "1Gi"), limits: corev1.ResourceList{nodeplan.ResourceNodes: resource.MustParse("1e30")}, wantPlaced: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Pods: []*corev1.Pod{tt.pod}, NodePools: []nodeplan.NodePool{{Name: "default", Limits: tt.limits}}, InstanceTypes: catalog}
			res, err := Solve(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			placed := len(res.Unschedulable) == 0
			if placed != tt.wantPlaced {
				var why string
				if len(res.Unschedulable) > 0 {
					why = res.Unschedulable[0].Message
				}
				t.Errorf("Solve(%s): placed = %v, want %v (%d claims; %s)", tt.name, placed, tt.wantPlaced, len(res.NodeClaims), why)
			}
			if tt.wantNoClaims && len(res.NodeClaims) > 0 {
				t.Errorf("Solve(%s) launched %s for a pod no node can hold", tt.name, res.NodeClaims[0].InstanceType)
			}
		})
	}
}
