package scheduling_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
)

// Completeness classes the kube-scheduler differential found (issue 27, "the proof"): pods the
// plan left pending that kube-scheduler binds once the plan's own pods are bound. Each case
// failed before the fix it names, and each plan must pass package check.

// kube-scheduler never refuses a pod for a spread it does not carry. Here two zone-c siblings
// carry their own zone spread (one domain under nodeAffinityPolicy Honor) and are counted by a
// probe's spread (nodeAffinityPolicy Ignore: every zone a domain) that selects their tier; a
// third spread counts the probe, so it is shared out with them. Before, the probe took zone c
// between the siblings' turns, and the second sibling was refused for pushing the probe's zone
// over maxSkew ("… cannot take more pods: zone-c=1"), the shape of seed 4's per-zone
// deployments among Karpenter's diverse pods. The siblings must be placed; the probe, which
// kube-scheduler refuses once they are bound, makes way (topology.Order).
func TestPodsCountedBySpreadTheyDoNotCarryArePlaced(t *testing.T) {
	ignore := corev1.NodeInclusionPolicyIgnore
	inZoneC := func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{nodeplan.LabelZone: "zone-c"} }
	tier := func(p *corev1.Pod) { p.Labels["tier"] = "c" }
	probeSpread := func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: nodeplan.LabelZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, NodeAffinityPolicy: &ignore,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "c"}}}}
	}
	in := onePool(zonedType("m", "4", map[string]float64{"zone-a": 0.2, "zone-b": 0.2, "zone-c": 0.19}))
	in.Pods = apiServerShaped(slices.Concat(
		replicas("web", 2, "1", inZoneC, tier, spreadOver(nodeplan.LabelZone, 1)),
		replicas("probe", 1, "1", inZoneC, probeSpread, func(p *corev1.Pod) { p.Labels["x"] = "1" }),
		// Its spread counts the probe and the filler, which makes the probe a member of the split.
		replicas("filler", 1, "1", func(p *corev1.Pod) { p.Labels["x"] = "1" }),
		replicas("third", 1, "1", spreadSelecting(nodeplan.LabelZone, &metav1.LabelSelector{MatchLabels: map[string]string{"x": "1"}}))))
	res := solveAndCheck(t, in)
	zones := placedZones(in, res)
	for _, p := range in.Pods {
		if k := nodeplan.PodKey(p); p.Labels["app"] == "web" && zones[k] != "zone-c" {
			t.Errorf("pod %s placed in %q, want zone-c: it carries only its own spread, which zone c holds (unschedulable: %s)",
				k, zones[k], unplacedKeys(res))
		}
	}
}
