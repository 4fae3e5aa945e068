package disruption_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
)

// TestHugeRequestFitsNowhere (issue 30, N3): a bound pod asking cpu 1e16 or memory 10E fits no
// node, so its node stays. resource.Quantity.MilliValue wraps around above about 9.2e15
// units, which made such a pod look small and its node deletable with no replacement; the
// planner reads amounts saturated, as nodeplan.MilliValue does.
func TestHugeRequestFitsNowhere(t *testing.T) {
	for _, tc := range []struct{ name, cpu, mem string }{
		{"cpu 1e16", "1e16", "1Gi"},
		{"cpu 9.3e15", "9.3e15", "1Gi"},
		{"memory 10E", "100m", "10E"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			roomy := newNode(t, "n0", "m5.2xlarge", "default", withPods(pods("web", 2, "500m", "1Gi")...))
			roomy.Node.Annotations[nodeplan.AnnotationDoNotDisrupt] = "true" // it stays, with room
			huge := newNode(t, "n1", "m5.large", "default", withPods(newPod("huge", tc.cpu, tc.mem)))
			in := disruption.Input{Nodes: []disruption.Node{roomy, huge}, NodePools: []nodeplan.NodePool{pool("default", budget("100%"))},
				InstanceTypes: testCatalog(t), Now: t0}
			r, err := disruption.Plan(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if c, ok := commandFor(r, "n1"); ok {
				t.Fatalf("the node of a pod asking %s cpu, %s memory is disrupted (%s, %d replacements), want it kept:\n%s",
					tc.cpu, tc.mem, c.Action, len(c.Replacements), render(r))
			}
			if b, _ := blockedOf(r, "n1"); b.Code != disruption.CodePodsDoNotFit || b.Object != "default/huge" || !strings.Contains(b.Message, "more than any other node has free or any instance type offers") {
				t.Errorf("n1 stays with %s [%s] %q, want %s naming default/huge as larger than any node or type", b.Code, b.Object, b.Message, disruption.CodePodsDoNotFit)
			}
		})
	}
}
