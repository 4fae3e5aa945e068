package scheduling_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
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

// One running pod in each of zone-a and zone-b on full nodes, a pool launching into zone-c only,
// maxSkew 5: zone-c may take 6 (6 - 1 ≤ 5). Before, the split gave zone-a and zone-b shares no
// node could take, placed 4 in zone-c, and explained the rest as "require zone In [zone-a]".
func TestSpreadFillsTheOnlyLaunchableDomainToItsHeadroom(t *testing.T) {
	in := onePool(all3())
	in.NodePools[0].Template.Requirements = nodeplan.NewRequirements(nodeplan.In(nodeplan.LabelZone, "zone-c"))
	for _, z := range []string{"a", "b"} {
		name := "full-" + z
		in.Nodes = append(in.Nodes, zonalNode(name, "zone-"+z, "1", replicas("web", 1, "1", runningOn(name), func(p *corev1.Pod) { p.Name += "-" + z })))
	}
	in.Pods = shaped(replicas("web", 10, "1", spreadOver(nodeplan.LabelZone, 5)))
	res := solveAndCheck(t, in)
	zones := placedZones(in, res)
	if len(zones) != 6 {
		t.Errorf("Solve() placed %d pods, want 6 in zone-c (unschedulable: %s)", len(zones), unplacedKeys(res))
	}
	for k, z := range zones {
		if z != "zone-c" {
			t.Errorf("pod %s placed in %s, want zone-c", k, z)
		}
	}
	for _, u := range res.Unschedulable {
		if u.Code != scheduling.ReasonTopologySpread {
			t.Errorf("pod %s unschedulable with %s (%s), want %s", u.Pod, u.Code, u.Message, scheduling.ReasonTopologySpread)
		}
		if !strings.Contains(u.Message, "zone-a=1, zone-b=1, zone-c=6") {
			t.Errorf("pod %s: %q, want the real counts zone-a=1, zone-b=1, zone-c=6", u.Pod, u.Message)
		}
	}
}

// 19 pods spread over zone and over capacity type (maxSkew 1 each), zone-c offering only
// on-demand: 7/6/6 over the zones and 10/9 over capacity types both hold (spot in zone-a and
// zone-b only). Before, the zone split ignored that zone-c has no spot, and 2 pods were placed.
func TestSpreadOverTwoKeysWithAZoneOfferingOneCapacityType(t *testing.T) {
	it := schedulingtest.ZonalType("zone-a", "zone-b", "zone-c")
	for _, z := range []string{"zone-a", "zone-b"} {
		it.Offerings = append(it.Offerings, nodeplan.Offering{Zone: z, CapacityType: nodeplan.CapacityTypeSpot, Price: 0.08, Available: true})
	}
	in := onePool(it)
	in.Pods = shaped(replicas("web", 19, "1", spreadOver(nodeplan.LabelZone, 1), spreadOver(nodeplan.LabelCapacityType, 1)))
	res := solveAndCheck(t, in)
	if len(res.Unschedulable) > 0 {
		t.Errorf("Solve() unschedulable: %s, want none: 7/6/6 over zones and 10/9 over capacity types hold", unplacedKeys(res))
	}
}

// A DoNotSchedule spread over a key no node has: kube-scheduler's filter refuses every node
// without the key, so the pod never binds. Before, the solver launched a node and placed it.
func TestSpreadOverAKeyNoNodeHasPlacesNothing(t *testing.T) {
	const rack = "example.com/rack"
	in := onePool(all3())
	in.Nodes = []scheduling.Node{zonalNode("roomy-a", "zone-a", "4", nil)}
	in.Pods = shaped(replicas("web", 1, "1", spreadOver(rack, 1)))
	res := solveAndCheck(t, in)
	if len(res.NodeClaims) > 0 || len(placedZones(in, res)) > 0 {
		t.Errorf("Solve() placed the pod (%d claims), want it unschedulable: no node has %s", len(res.NodeClaims), rack)
	}
	if len(res.Unschedulable) != 1 {
		t.Fatalf("unschedulable: %s, want default/web-0", unplacedKeys(res))
	}
	u := res.Unschedulable[0]
	if u.Code != scheduling.ReasonTopologySpread || !strings.Contains(u.Message, rack) {
		t.Errorf("default/web-0 unschedulable with %s (%q), want %s naming %s", u.Code, u.Message, scheduling.ReasonTopologySpread, rack)
	}
}
