package controller

import (
	"strings"
	"testing"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
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
	} {
		cmd := disruption.Command{Reason: nodeplan.ReasonDrifted, NodePools: []string{"default"}, Nodes: []string{"ip-1"}, Savings: tc.savings}
		got := commandString(cmd)
		if !strings.HasSuffix(got, tc.want) || strings.Contains(got, "-$") || strings.Contains(got, "$-") {
			t.Errorf("commandString(savings %v) = %q, want it to end %q", tc.savings, got, tc.want)
		}
	}
}
