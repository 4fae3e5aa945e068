package scheduling

import (
	"context"
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

func TestNodeCostValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cost NodeCost
		want string // substring of the error; empty for none
	}{
		{"zero", NodeCost{}, ""},
		{"per node and pool", NodeCost{PerNode: 0.01, Pools: map[string]float64{"default": 0.002}}, ""},
		{"negative", NodeCost{PerNode: -1}, "Options.NodeCost.PerNode is -1"},
		{"NaN pool", NodeCost{Pools: map[string]float64{"gpu": math.NaN()}}, `Options.NodeCost.Pools["gpu"] is NaN`},
		{"infinite pool", NodeCost{Pools: map[string]float64{"gpu": math.Inf(1)}}, `Options.NodeCost.Pools["gpu"] is +Inf`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{NodePools: []nodeplan.NodePool{{Name: "default"}}, Options: Options{NodeCost: tc.cost}}
			err := in.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestNodeCostInResult: claims keep their offering's list price, Cost adds the node cost of
// every claim's pool, NodeCost reports that part, and the bound (which includes it) stays
// below the cost.
func TestNodeCostInResult(t *testing.T) {
	catalog := loadCatalog(t)
	pools := []nodeplan.NodePool{{Name: "a", Weight: 10, Template: nodeplan.NodeClaimTemplate{Taints: []corev1.Taint{{Key: "team", Value: "a", Effect: corev1.TaintEffectNoSchedule}}}}, {Name: "b"}}
	podsA := pods("a", 20, "1", "2Gi")
	for _, p := range podsA {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "team", Operator: corev1.TolerationOpEqual, Value: "a", Effect: corev1.TaintEffectNoSchedule}}
	}
	cost := NodeCost{PerNode: 0.01, Pools: map[string]float64{"a": 0.02}}
	in := Input{Pods: append(podsA, pods("b", 30, "500m", "1Gi")...), NodePools: pools, InstanceTypes: catalog, Options: Options{NodeCost: cost}}
	res, err := Solve(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	prices := map[string]map[float64]bool{}
	for _, it := range catalog {
		prices[it.Name] = map[float64]bool{}
		for _, o := range it.Offerings {
			prices[it.Name][o.Price] = true
		}
	}
	list, node := 0.0, 0.0
	for _, c := range res.NodeClaims {
		if !prices[c.InstanceType][c.Offering.Price] {
			t.Errorf("claim %s: Offering.Price %v is not a list price of %s", c.Name, c.Offering.Price, c.InstanceType)
		}
		list += c.Offering.Price
		node += cost.For(c.NodePool)
	}
	if math.Abs(res.NodeCost-node) > 1e-9 || math.Abs(res.Cost-list-node) > 1e-9 {
		t.Errorf("Cost, NodeCost = %v, %v; want %v, %v (list %v plus node costs)", res.Cost, res.NodeCost, list+node, node, list)
	}
	if len(res.Unschedulable) > 0 || res.LowerBound > res.Cost+1e-9 || res.LowerBound <= 0 {
		t.Errorf("unschedulable %d, LowerBound %v, Cost %v; want all placed and 0 < bound ≤ cost", len(res.Unschedulable), res.LowerBound, res.Cost)
	}
}
