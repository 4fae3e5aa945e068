package kubesched

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
	"github.com/nodeplan/nodeplan/scheduling"
)

// minimalPod is a pod of a hand-written case.
func minimalPod(name, cpu string, labels map[string]string, mutate func(*corev1.PodSpec)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: labels,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "pause", Resources: requests(cpu, "256Mi")}}}}
	if mutate != nil {
		mutate(&p.Spec)
	}
	return p
}

func requiredAffinity(key string, sel map[string]string) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			{LabelSelector: &metav1.LabelSelector{MatchLabels: sel}, TopologyKey: key}}}}
	}
}

func zoneSpread(sel map[string]string) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: nodeplan.LabelZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: sel}}}
	}
}

// TestMinimalCases are the smallest inputs found for each difference the random cases showed
// (FINDINGS.md); each must bind like the random ones.
func TestMinimalCases(t *testing.T) {
	catalog := sim.Catalog()
	pool := []nodeplan.NodePool{{Name: "general", Template: nodeplan.NodeClaimTemplate{Requirements: nodeplan.NewRequirements(
		nodeplan.In(nodeplan.LabelCapacityType, string(nodeplan.CapacityTypeOnDemand)), nodeplan.In(nodeplan.LabelArch, "amd64"))}}}
	cases := map[string][]*corev1.Pod{
		// Required zone affinity to a label no pod carries, and the pod does not match its own
		// term: kube-scheduler admits such a pod nowhere.
		"affinity-without-target": {
			minimalPod("a", "500m", map[string]string{"my-affinity": "a"}, requiredAffinity(nodeplan.LabelZone, map[string]string{"my-affinity": "b"})),
		},
		// Hostname self-affinity: once one replica runs, every other must join its node.
		"hostname-self-affinity": func() []*corev1.Pod {
			var ps []*corev1.Pod
			for i := range 4 {
				ps = append(ps, minimalPod(fmt.Sprintf("s-%d", i), "3500m", map[string]string{"app": "s"}, requiredAffinity(nodeplan.LabelHostname, map[string]string{"app": "s"})))
			}
			return ps
		}(),
		// Zone spread whose selector matches pods that do not carry the constraint: kube-scheduler
		// counts them all.
		"spread-counts-non-carriers": {
			minimalPod("g-0", "500m", map[string]string{"my-label": "d"}, nil),
			minimalPod("g-1", "500m", map[string]string{"my-label": "d"}, nil),
			minimalPod("g-2", "500m", map[string]string{"my-label": "d"}, nil),
			minimalPod("p", "500m", map[string]string{"my-label": "c"}, zoneSpread(map[string]string{"my-label": "d"})),
		},
	}
	for name, pods := range cases {
		t.Run(name, func(t *testing.T) {
			var sum tally
			runCase(t, Case{Input: scheduling.Input{Pods: pods, NodePools: pool, InstanceTypes: catalog}}, &sum)
			t.Logf("%d pods, %d planned, %d unplaced, %d refused", sum.pods, sum.planned, sum.unplaced, sum.refused)
		})
	}
}
