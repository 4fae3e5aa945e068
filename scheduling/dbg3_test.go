package scheduling

import (
	"context"
	"testing"

	nodeplan "github.com/nodeplan/nodeplan"
)

func TestDbgMixed(t *testing.T) {
	catalog := loadCatalog(t)
	for _, n := range []int{1000, 10000} {
		for _, e := range []float64{1, 3, 10} {
			in := Input{Pods: mixedPods(n), NodePools: []nodeplan.NodePool{{Name: "default"}}, InstanceTypes: catalog, DaemonSets: testDaemonSets(), Options: Options{Effort: e}}
			res, _ := Solve(context.Background(), in)
			t.Logf("n=%d effort=%v cost=%.3f lb=%.3f", n, e, res.Cost, res.LowerBound)
		}
	}
}
