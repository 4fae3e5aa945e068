package disruption_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
)

// TestFastPathHonoursTaints: plain pods are placed by the planner itself, and a node tainted
// NoSchedule takes only those that tolerate the taint — the root's rule (nodeplan.NodeTaints,
// nodeplan.UntoleratedTaint), which the solver applies too. A PreferNoSchedule taint never
// keeps a pod off.
func TestFastPathHonoursTaints(t *testing.T) {
	taint := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}
	tolerate := func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "db", Effect: corev1.TaintEffectNoSchedule}}
	}
	for _, tc := range []struct {
		name    string
		effect  corev1.TaintEffect
		opts    []podOpt
		deleted bool
	}{
		{"NoSchedule, not tolerated", corev1.TaintEffectNoSchedule, nil, false},
		{"NoSchedule, tolerated", corev1.TaintEffectNoSchedule, []podOpt{tolerate}, true},
		{"PreferNoSchedule", corev1.TaintEffectPreferNoSchedule, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			roomy := newNode(t, "n0", "m5.2xlarge", "default", withPods(pods("db", 1, "500m", "1Gi")...))
			roomy.Node.Annotations[nodeplan.AnnotationDoNotDisrupt] = "true" // it stays, with room
			tt := taint
			tt.Effect = tc.effect
			roomy.Node.Spec.Taints = []corev1.Taint{tt}
			small := newNode(t, "n1", "m5.large", "default", withPods(pods("web", 2, "250m", "256Mi", tc.opts...)...))
			in := disruption.Input{Nodes: []disruption.Node{roomy, small}, NodePools: []nodeplan.NodePool{pool("default", budget("100%"))},
				InstanceTypes: testCatalog(t), Now: t0}
			r, err := disruption.Plan(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, in, r)
			c, ok := commandFor(r, "n1")
			deleted := ok && c.Action == disruption.ActionDelete
			if deleted != tc.deleted {
				t.Errorf("n1 deleted onto n0 (%s taint) = %v, want %v:\n%s", tc.effect, deleted, tc.deleted, render(r))
			}
		})
	}
}
