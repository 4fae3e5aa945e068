package scheduling

import (
	"context"
	"fmt"
	"math"
	"testing"

	nodeplan "github.com/nodeplan/nodeplan"
	corev1 "k8s.io/api/core/v1"
)

// TestLPClassesMergeInterchangeableGroups: pods that differ only in their priority are separate
// groups, but one row of the LP. The merged LP is the LP of the same pods at one priority, so
// the bound is the same and every pod is placed once (the property tests run the checker on
// plans of random inputs, which merge too).
func TestLPClassesMergeInterchangeableGroups(t *testing.T) {
	catalog := []nodeplan.InstanceType{cType(2, 0.10), cType(4, 0.19), cType(8, 0.37), cType(16, 0.80)}
	shapes := []struct{ cpu, mem string }{{"700m", "1Gi"}, {"1500m", "3Gi"}, {"300m", "512Mi"}}
	build := func(apps int) Input {
		var ps []*corev1.Pod
		for i, s := range shapes {
			for a := range apps {
				for _, p := range pods(fmt.Sprintf("s%d-a%d", i, a), 12/apps+a, s.cpu, s.mem) {
					prio := int32(a)
					p.Spec.Priority = &prio
					ps = append(ps, p)
				}
			}
		}
		return Input{Pods: ps, NodePools: []nodeplan.NodePool{{Name: "default"}}, InstanceTypes: catalog}
	}
	solve := func(in Input) Result {
		t.Helper()
		res, err := Solve(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Unschedulable) > 0 {
			t.Fatalf("unplaced: %v", res.Unschedulable)
		}
		seen := map[string]int{}
		for _, c := range res.NodeClaims {
			for _, p := range c.Pods {
				seen[p]++
			}
		}
		if len(seen) != len(in.Pods) {
			t.Fatalf("%d pods placed, want %d", len(seen), len(in.Pods))
		}
		for k, n := range seen {
			if n != 1 {
				t.Fatalf("pod %s placed %d times, want once", k, n)
			}
		}
		return res
	}
	for _, apps := range []int{2, 3, 6} {
		t.Run(fmt.Sprint(apps, " apps a shape"), func(t *testing.T) {
			in := build(apps)
			res := solve(in)
			// The same pods at one priority: one group a shape.
			alike := build(apps)
			for _, p := range alike.Pods {
				p.Spec.Priority = nil
			}
			want := solve(alike)
			if math.Abs(res.LowerBound-want.LowerBound) > 1e-9*want.LowerBound {
				t.Errorf("LowerBound = %v, want %v (the pods labelled alike)", res.LowerBound, want.LowerBound)
			}
			if res.LowerBound > res.Cost+1e-9 {
				t.Errorf("LowerBound %v above the plan's cost %v", res.LowerBound, res.Cost)
			}
			p, err := newProblem(&in, preferences{})
			if err != nil {
				t.Fatal(err)
			}
			cls := p.lpClasses()
			reps := map[int]bool{}
			for _, r := range cls {
				reps[r] = true
			}
			if len(p.groups) != len(shapes)*apps || len(reps) != len(shapes) {
				t.Errorf("%d groups in %d LP classes, want %d in %d", len(p.groups), len(reps), len(shapes)*apps, len(shapes))
			}
		})
	}
}
