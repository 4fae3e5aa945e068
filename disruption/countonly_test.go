package disruption_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
)

// Nodes a simulation may not put pods on (here: full ones) still count for topology spread.
// They used to reach the solver as nodes with a made-up NoSchedule taint, which a spread with
// nodeTaintsPolicy Honor leaves out of its counts: the planner saw zone a empty, deleted the
// node in zone b and moved its pod to zone a, a skew of 3 against maxSkew 1 (#13 item 3).
func TestCountOnlyNodesCountUnderNodeTaintsPolicyHonor(t *testing.T) {
	honor := corev1.NodeInclusionPolicyHonor
	web := func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: nodeplan.LabelZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, NodeTaintsPolicy: &honor,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	}
	np := nodeplan.NodePool{Name: "default"}
	np.Template.Requirements = nodeplan.NewRequirements(
		nodeplan.In(nodeplan.LabelCapacityType, "on-demand"),
		nodeplan.In(nodeplan.LabelZone, "us-east-1a", "us-east-1b"))
	in := disruption.Input{
		Nodes: []disruption.Node{
			newNode(t, "full-a", "m5.large", "default", withPods(pods("web-a", 2, "900m", "1Gi", web)...)),
			newNode(t, "roomy-a", "m5.xlarge", "default", withPods(newPod("other-a", "100m", "128Mi", app("other"), doNotDisrupt("true")))),
			newNode(t, "candidate-b", "m5.large", "default", inZone("us-east-1b"), withPods(newPod("web-b", "900m", "1Gi", web))),
			newNode(t, "roomy-b", "m5.xlarge", "default", inZone("us-east-1b"), withPods(newPod("other-b", "100m", "128Mi", app("other"), doNotDisrupt("true")))),
		},
		NodePools:     []nodeplan.NodePool{np},
		InstanceTypes: testCatalog(t),
		Now:           t0,
	}
	r, err := disruption.Plan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, in, r)
	// Apply the commands and count web pods per zone.
	zoneOf := map[string]string{}
	where := map[string]string{} // pod key -> node or claim
	for _, n := range in.Nodes {
		zoneOf[n.Node.Name] = n.Zone
		for _, p := range n.Pods {
			where[nodeplan.PodKey(p)] = n.Node.Name
		}
	}
	for _, c := range r.Commands {
		for _, rc := range c.Replacements {
			zoneOf[rc.Name] = rc.Offering.Zone
			for _, k := range rc.Pods {
				where[k] = rc.Name
			}
		}
		for _, m := range c.Moves {
			for _, k := range m.Pods {
				where[k] = m.Name
			}
		}
	}
	counts := map[string]int{"us-east-1a": 0, "us-east-1b": 0}
	for k, n := range where {
		if k == "default/web-a-0" || k == "default/web-a-1" || k == "default/web-b" {
			counts[zoneOf[n]]++
		}
	}
	if d := counts["us-east-1a"] - counts["us-east-1b"]; d > 1 || d < -1 {
		t.Errorf("after the plan, web pods per zone = %v: skew %d > maxSkew 1\n%s", counts, max(d, -d), render(r))
	}
}
