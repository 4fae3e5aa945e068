package disruption_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
)

// TestMethodsSelectTheSteps: one cluster with a node for each method — an empty one, a
// drifted one, two half-used ones consolidation would merge — planned with every method and
// with interruption and emptiness only (what the example controller's emptiness planner asks
// for). A node only a left-out method would disrupt stays, saying so.
func TestMethodsSelectTheSteps(t *testing.T) {
	input := func(m disruption.Methods) disruption.Input {
		return disruption.Input{
			Nodes: []disruption.Node{
				newNode(t, "empty", "m5.large", "default"),
				newNode(t, "drifted", "m5.large", "default", drifted, withPods(pods("d", 1, "100m", "128Mi")...)),
				newNode(t, "half-a", "m5.xlarge", "default", withPods(pods("a", 1, "500m", "1Gi")...)),
				newNode(t, "half-b", "m5.xlarge", "default", withPods(pods("b", 1, "500m", "1Gi")...)),
			},
			NodePools:     []nodeplan.NodePool{pool("default", budget("100%"))},
			InstanceTypes: testCatalog(t),
			Now:           t0,
			Options:       disruption.Options{Methods: m},
		}
	}
	reasons := func(r disruption.Result) map[string]string {
		out := map[string]string{}
		for _, c := range r.Commands {
			for _, n := range c.Nodes {
				out[n] = string(c.Reason)
			}
		}
		for _, b := range r.Blocked {
			out[b.Node] = string(b.Code)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		methods disruption.Methods
		want    map[string]string
	}{
		{"zero is every method", 0, map[string]string{
			"empty": "Empty", "drifted": "Drifted", "half-a": string(disruption.CodeReceivesPods), "half-b": "Underutilized"}},
		{"interruption and emptiness", disruption.MethodInterruption | disruption.MethodEmptiness, map[string]string{
			"empty": "Empty", "drifted": string(disruption.CodeMethodNotRun),
			"half-a": string(disruption.CodeMethodNotRun), "half-b": string(disruption.CodeMethodNotRun)}},
		{"drift alone", disruption.MethodDrift, map[string]string{
			"empty": string(disruption.CodeMethodNotRun), "drifted": "Drifted",
			"half-a": string(disruption.CodeMethodNotRun), "half-b": string(disruption.CodeMethodNotRun)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := disruption.Plan(context.Background(), input(tc.methods))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, reasons(r)); diff != "" {
				t.Errorf("what happens to each node (-want +got):\n%s", diff)
			}
			for _, b := range r.Blocked {
				if b.Code == disruption.CodeMethodNotRun && b.Message == "" {
					t.Errorf("node %s: %s without a message", b.Node, b.Code)
				}
			}
		})
	}
	if got, want := (disruption.MethodInterruption | disruption.MethodEmptiness).String(), "interruption+emptiness"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
