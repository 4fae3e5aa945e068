package scheduling_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/check"
	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
)

// The brute-force oracle judges minValues on each node's own options (schedulingtest.Optimal):
// on small random pools asking for two or three instance types per claim, Solve must place
// every pod the optimum places, never below its cost, and pass package check. Before the split
// of claims (splitForMinValues), pods that fit apart but not together on enough types were
// refused — issue 27, item 5.
func TestOracleMinValues(t *testing.T) {
	const cases = 300
	rng := rand.New(rand.NewPCG(27, 5))
	sizes := []string{"1", "2", "4", "8"}
	cpus := []string{"300m", "500m", "900m", "1500m", "3"}
	worse := 0
	for seed := range cases {
		var types []nodeplan.InstanceType
		for i, size := range sizes {
			if i > 0 && rng.IntN(4) == 0 {
				continue
			}
			types = append(types, zonedType(fmt.Sprintf("t%d", i), size, map[string]float64{"zone-a": (0.04 + 0.02*rng.Float64()) * float64(int(1)<<i)}))
		}
		mv, _ := nodeplan.NewRequirement(nodeplan.LabelInstanceType, corev1.NodeSelectorOpExists)
		mv.MinValues = 2 + rng.IntN(2)
		in := scheduling.Input{InstanceTypes: types, NodePools: []nodeplan.NodePool{{Name: "default",
			Template: nodeplan.NodeClaimTemplate{Requirements: nodeplan.NewRequirements(mv)}}}}
		for range 1 + rng.IntN(5) {
			in.Pods = append(in.Pods, replicas(fmt.Sprintf("app%d", len(in.Pods)), 1, cpus[rng.IntN(len(cpus))])...)
		}
		in.Pods = apiServerShaped(in.Pods)
		res, err := scheduling.Solve(context.Background(), in)
		if err != nil {
			t.Fatalf("seed %d: Solve() error = %v", seed, err)
		}
		if err := check.Result(in, res); err != nil {
			t.Errorf("seed %d: check.Result() = %v", seed, err)
		}
		opt, optOut, ok := schedulingtest.Optimal(in)
		if !ok {
			t.Fatalf("seed %d: Optimal() ok = false", seed)
		}
		switch {
		case len(res.Unschedulable) > len(optOut):
			t.Errorf("seed %d: Solve leaves %s out, the optimum %v (minValues %d, %d types)", seed, unplacedKeys(res), optOut, mv.MinValues, len(types))
		case len(res.Unschedulable) < len(optOut):
			t.Fatalf("seed %d: Solve places more pods than Optimal (%s vs %v): the oracle is wrong", seed, unplacedKeys(res), optOut)
		case res.Cost < opt-1e-9:
			t.Fatalf("seed %d: Solve costs %v, below the optimum %v: the oracle is wrong", seed, res.Cost, opt)
		case res.Cost > opt+1e-9:
			worse++
		}
	}
	t.Logf("%d cases: every pod the optimum places placed; %d dearer than the optimum", cases, worse)
}
