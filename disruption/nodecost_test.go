package disruption_test

import (
	"context"
	"math"
	"testing"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
	"github.com/nodeplan/nodeplan/scheduling"
)

// TestNodeCostChangesTheDecision: two nodes at $0.08/h whose pods need one larger node
// (c6a.xlarge, $0.153/h). At list prices that saves 4%, below the 10% threshold; with $0.05/h
// per node (a root volume, an IPv4 address, a monitoring agent) one node instead of two saves
// 22%, and the command's prices include the node cost.
func TestNodeCostChangesTheDecision(t *testing.T) {
	input := func(nodeCost float64) disruption.Input {
		return disruption.Input{
			Nodes: []disruption.Node{
				newNode(t, "a", "m5.large", "default", withPrice(0.08), withPods(pods("a", 1, "1200m", "1Gi")...)),
				newNode(t, "b", "m5.large", "default", withPrice(0.08), withPods(pods("b", 1, "1200m", "1Gi")...)),
			},
			NodePools:     []nodeplan.NodePool{pool("default", budget("100%"))},
			InstanceTypes: testCatalog(t),
			Now:           t0,
			Options:       disruption.Options{Scheduling: scheduling.Options{NodeCost: scheduling.NodeCost{PerNode: nodeCost}}},
		}
	}
	r, err := disruption.Plan(context.Background(), input(0))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := commandFor(r, "a"); ok {
		t.Errorf("without a node cost: %s of %v for $%.4f/h saving $%.4f/h, want no command", c.Action, c.Nodes, c.Price, c.Savings)
	}
	if b, ok := blockedOf(r, "a"); !ok || b.Code != disruption.CodeBelowThreshold {
		t.Errorf("without a node cost: node a blocked = %+v, %v; want %s", b, ok, disruption.CodeBelowThreshold)
	}
	r, err = disruption.Plan(context.Background(), input(0.05))
	if err != nil {
		t.Fatal(err)
	}
	c, ok := commandFor(r, "a")
	if !ok || c.Action != disruption.ActionReplace || len(c.Nodes) != 2 || len(c.Replacements) != 1 {
		t.Fatalf("with $0.05/h per node: command for a = %+v, %v; want both nodes replaced by one", c, ok)
	}
	if math.Abs(c.Price-0.26) > 1e-9 {
		t.Errorf("with $0.05/h per node: Price = %v, want 0.26 (two nodes at $0.08 + $0.05)", c.Price)
	}
	if got := c.Replacements[0].Offering.Price; math.Abs(c.ReplacementPrice-got-0.05) > 0.02 || c.ReplacementPrice < got+0.05-1e-9 {
		t.Errorf("with $0.05/h per node: ReplacementPrice = %v for a $%v/h offering, want the offering's worst price plus 0.05", c.ReplacementPrice, got)
	}
}
