package scheduling

import (
	"context"
	"testing"

	nodeplan "github.com/nodeplan/nodeplan"
)

func TestDbgMix(t *testing.T) {
	catalog := loadCatalog(t)
	for _, n := range []int{1000, 5000, 20000} {
		in := Input{Pods: karpenterMix(n), NodePools: []nodeplan.NodePool{{Name: "default"}}, InstanceTypes: catalog, DaemonSets: testDaemonSets()}
		res, _ := Solve(context.Background(), in)
		t.Logf("n=%d cost=%.2f lb=%.2f nodes=%d", n, res.Cost, res.LowerBound, len(res.NodeClaims))
	}
}
