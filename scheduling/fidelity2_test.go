package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
)

// Where the solver left pending, or placed elsewhere, a pod Karpenter and kube-scheduler would
// place (issue 27, items 4–9), one case each, every pod shaped as the API server returns it.
// Every case failed before the fix it names; each plan must also pass package check.

func preferZone(weight int32, zone string) corev1.PreferredSchedulingTerm {
	return corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: nodeplan.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}
}

func preferring(terms ...corev1.PreferredSchedulingTerm) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: terms}}
	}
}

func apiServerShaped(pods []*corev1.Pod) []*corev1.Pod {
	return schedulingtest.APIServerShapedPods(pods)
}

// Karpenter relaxes a pod's preferred node affinity by removing its heaviest term and treating
// the next heaviest as required; kube-scheduler's NodeAffinity score also favours zone b here
// (50 > 1). Before, an unsatisfiable heaviest term dropped every preferred term at once and
// the pod went to the cheapest zone, a.
func TestPreferredNodeAffinityRelaxesHeaviestFirst(t *testing.T) {
	for _, tc := range []struct {
		name  string
		terms []corev1.PreferredSchedulingTerm
	}{
		{"unsatisfiable heaviest", []corev1.PreferredSchedulingTerm{preferZone(1, "zone-a"), preferZone(100, "zone-z"), preferZone(50, "zone-b")}},
		{"satisfiable heaviest", []corev1.PreferredSchedulingTerm{preferZone(1, "zone-a"), preferZone(50, "zone-b")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := onePool(zonedType("m", "4", map[string]float64{"zone-a": 0.200, "zone-b": 0.205, "zone-c": 0.205}))
			in.Pods = apiServerShaped(replicas("web", 2, "1", preferring(tc.terms...)))
			res := solveAndCheck(t, in)
			zones := placedZones(in, res)
			if len(zones) != 2 {
				t.Fatalf("placed %v, want both pods (unschedulable: %s)", zones, unplacedKeys(res))
			}
			for k, z := range zones {
				if z != "zone-b" {
					t.Errorf("pod %s placed in %s, want zone-b (the heaviest satisfiable term)", k, z)
				}
			}
		})
	}
}
