package controller

import (
	"math"
	"strings"
	"testing"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
	"github.com/nodeplan/nodeplan/scheduling"
)

// A drifted node replaced by a dearer one is a cost increase, said so, never a negative saving
// (an operator reading "savings: $-0.2151/h" cannot tell a bug from a rollout).
func TestPriceChangeNeverReportsNegativeSavings(t *testing.T) {
	for _, tc := range []struct {
		savings float64
		want    string
	}{
		{0.0929, "(savings: $0.0929/h)"},
		{0, "(savings: $0.0000/h)"},
		{-0.2151, "(cost-increase: $0.2151/h)"},
		{-1e-17, "(savings: $0.0000/h)"}, // a like-for-like replacement's rounding
	} {
		cmd := disruption.Command{Reason: nodeplan.ReasonDrifted, NodePools: []string{"default"}, Nodes: []string{"ip-1"}}
		got := commandString(cmd, tc.savings)
		if !strings.HasSuffix(got, tc.want) || strings.Contains(got, "-$") || strings.Contains(got, "$-") {
			t.Errorf("commandString(savings %v) = %q, want it to end %q", tc.savings, got, tc.want)
		}
	}
}

// TestCostOfReplacement: a replacement is reported at the offering the solver chose and costed
// it at, not at the worst case the planner judged it by (Command.ReplacementPrice). The two
// figures operators saw as cost-increase=$0.2151/h: a like-for-like drift replacement
// (c6a.2xlarge spot for the same) and a spot replacement at $0.0929 → $0.0973/h, both judged
// at c6a.2xlarge's on-demand $0.306/h.
func TestCostOfReplacement(t *testing.T) {
	const nodeCost = 0.0022 // both sides carry the pool's node cost
	replacement := func(price float64) scheduling.NewNodeClaim {
		r := scheduling.NewNodeClaim{InstanceType: "c6a.2xlarge",
			Offering: nodeplan.Offering{Zone: "us-east-1a", CapacityType: nodeplan.CapacityTypeSpot, Price: price, Available: true}}
		r.NodePool = "default"
		return r
	}
	for _, tc := range []struct {
		name        string
		old, repl   float64
		wantKey     string
		wantAmount  Dollars
		wantWorstOn bool
	}{
		{"like-for-like drift", 0.0929, 0.0929, "savings", 0, true},
		{"spot replacement", 0.0929, 0.0973, "cost-increase", 0.0044, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			worst := 0.306 + nodeCost
			cmd := disruption.Command{Action: disruption.ActionReplace, Reason: nodeplan.ReasonDrifted, NodePools: []string{"default"},
				Nodes: []string{"ip-1"}, Replacements: []scheduling.NewNodeClaim{replacement(tc.repl)},
				Price: tc.old + nodeCost, ReplacementPrice: worst, Savings: tc.old + nodeCost - worst}
			cc := costOf(cmd, scheduling.NodeCost{PerNode: nodeCost})
			key, amount := PriceChange(cc.Savings)
			if key != tc.wantKey || math.Abs(float64(amount-tc.wantAmount)) > 1e-9 {
				t.Errorf("PriceChange(costOf(%s).Savings) = %s %v, want %s %v", tc.name, key, amount, tc.wantKey, tc.wantAmount)
			}
			if cc.WorstCase != worst || cc.worstCaseDiffers() != tc.wantWorstOn {
				t.Errorf("costOf(%s): worst case %v (differs %v), want %v (differs %v)", tc.name, cc.WorstCase, cc.worstCaseDiffers(), worst, tc.wantWorstOn)
			}
		})
	}
	// A delete command has no replacement: its saving is the nodes' price.
	del := disruption.Command{Action: disruption.ActionDelete, Price: 0.0951, Savings: 0.0951}
	if cc := costOf(del, scheduling.NodeCost{PerNode: nodeCost}); cc.Savings != 0.0951 || cc.worstCaseDiffers() {
		t.Errorf("costOf(delete) = %+v, want savings 0.0951 and no worst case", cc)
	}
}
