package scheduling

import (
	"context"
	"fmt"
	"testing"

	"github.com/nodeplan/nodeplan"
)

// TestMixedWorkloadNearLowerBound holds the solver to the cost target: on a realistic
// mixed workload against the real catalog, with DaemonSets, the plan costs within 5% of the
// lower bound — so within 5% of the best any plan could do.
func TestMixedWorkloadNearLowerBound(t *testing.T) {
	catalog := loadCatalog(t)
	for _, n := range []int{1000, 5000} {
		t.Run(fmt.Sprintf("pods=%d", n), func(t *testing.T) {
			in := Input{Pods: mixedPods(n), NodePools: []nodeplan.NodePool{{Name: "default"}}, InstanceTypes: catalog, DaemonSets: testDaemonSets()}
			res, err := Solve(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Unschedulable) != 0 {
				t.Fatalf("%d pods unschedulable: %s", len(res.Unschedulable), res.Unschedulable[0].Message)
			}
			ratio := res.Cost / res.LowerBound
			t.Logf("cost $%.4f/h, lower bound $%.4f/h, ratio %.4f, %d nodes", res.Cost, res.LowerBound, ratio, len(res.NodeClaims))
			if ratio > 1.05 || ratio < 1 {
				t.Errorf("Cost/LowerBound = %.4f, want within [1, 1.05]", ratio)
			}
		})
	}
}
