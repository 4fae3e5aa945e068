package scheduling

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
)

// TestPlaceWithKeepsZoneAntiAffinity: two pods that must share a node with another pod
// (hostname affinity) and repel each other over zones, with one zone: one is placed, the
// other stays pending — placeWith must not place the part of the split no zone takes (found
// by TestSolveIsValid/topology, seed 6900807253333532270).
func TestPlaceWithKeepsZoneAntiAffinity(t *testing.T) {
	sel := func(app string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	}
	anchor := pod("anchor", "100m", "128Mi")
	var followers []*corev1.Pod
	for _, name := range []string{"f-0", "f-1"} {
		p := pod(name, "100m", "128Mi")
		p.Labels["app"] = "f"
		p.Spec.Affinity = &corev1.Affinity{
			PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				{TopologyKey: nodeplan.LabelHostname, LabelSelector: sel("anchor")}}},
			PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				{TopologyKey: nodeplan.LabelZone, LabelSelector: sel("f")}}},
		}
		followers = append(followers, p)
	}
	in := Input{Pods: append([]*corev1.Pod{anchor}, followers...), NodePools: []nodeplan.NodePool{{Name: "default"}},
		InstanceTypes: []nodeplan.InstanceType{cType(2, 0.1)}}
	res, err := Solve(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	placed := 0
	for _, c := range res.NodeClaims {
		for _, k := range c.Pods {
			if k == "default/f-0" || k == "default/f-1" {
				placed++
			}
		}
	}
	if placed != 1 || len(res.Unschedulable) != 1 {
		t.Errorf("followers placed = %d, unschedulable = %d; want 1 and 1 (one zone, anti-affinity over zones)", placed, len(res.Unschedulable))
	}
}
