package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
)

// Which domains a spread counts, as kube-scheduler's PodTopologySpread decides it: for each pod,
// only the nodes its own node affinity admits (nodeAffinityPolicy Honor), only nodes with every
// topology key of its DoNotSchedule spreads, and then only the domains of those nodes (issue 27,
// items 1–3). Pods are shaped as the API server returns them.

func shaped(pods []*corev1.Pod) []*corev1.Pod { return schedulingtest.APIServerShapedPods(pods) }

func inZone(z string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{nodeplan.LabelZone: z} }
}

// Per-zone Deployments sharing one app label and one zone spread: kube-scheduler counts, for a
// pod pinned to zone-a, zone-a's pods only, so 5 in zone-a and 10 in zone-b is within maxSkew 1
// for every pod. Before, the zone-a pods' domains were taken for all, and every zone-b pod was
// refused ("cannot take more pods: zone-a=1").
func TestSpreadCountsEachPodsOwnNodeAffinityDomains(t *testing.T) {
	for _, n := range [][2]int{{1, 2}, {5, 10}} {
		in := onePool(all3())
		a := replicas("web", n[0], "1", inZone("zone-a"), spreadOver(nodeplan.LabelZone, 1))
		b := replicas("web", n[1], "1", inZone("zone-b"), spreadOver(nodeplan.LabelZone, 1))
		in.Pods = shaped(append(a, b...))
		res := solveAndCheck(t, in)
		if len(res.Unschedulable) > 0 {
			t.Errorf("Solve(%d pods in zone-a, %d in zone-b) unschedulable: %s, want none: each pod's own zone is its only domain",
				n[0], n[1], unplacedKeys(res))
		}
		zones := placedZones(in, res)
		for _, p := range in.Pods {
			k, want := nodeplan.PodKey(p), p.Spec.NodeSelector[nodeplan.LabelZone]
			if z := zones[k]; z != want {
				t.Errorf("pod %s placed in %q, want %s", k, z, want)
			}
		}
	}
}
