package scheduling

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

// TestMinValuesInLaunchRequests: a pool's minValues (Karpenter's launch flexibility, e.g. "at
// least five instance families" for spot) shape every claim's InstanceTypeOptions: each claim
// offers at least that many distinct values of the key, every option is one the claim's
// requirements allow and large enough for its pods, and when no claim can meet the minimum
// the pods are reported with ReasonMinValues naming the key — not dropped, not launched short.
// The launch requests are built once per distinct option list (output.go's launchBuilder);
// nothing else in the suite or the generated inputs sets minValues.
func TestMinValuesInLaunchRequests(t *testing.T) {
	catalog := loadCatalog(t)
	byName := map[string]*nodeplan.InstanceType{}
	for i := range catalog {
		byName[catalog[i].Name] = &catalog[i]
	}
	family := func(min int) nodeplan.Requirement {
		return nodeplan.Requirement{Key: nodeplan.LabelInstanceFamily, MinValues: min}.Intersect(nodeplan.Exists(nodeplan.LabelInstanceFamily))
	}
	category := nodeplan.Requirement{Key: nodeplan.LabelInstanceCategory, MinValues: 2}.Intersect(nodeplan.In(nodeplan.LabelInstanceCategory, "c", "m", "r"))
	mixed := func() []*corev1.Pod {
		return append(append(pods("web", 30, "500m", "1Gi"), pods("api", 6, "3", "6Gi")...), pods("cache", 2, "2", "30Gi")...)
	}
	for _, tc := range []struct {
		name     string
		reqs     []nodeplan.Requirement
		max      int // Options.MaxInstanceTypes
		key      string
		min      int
		unplaced bool // every pod unplaced with ReasonMinValues
	}{
		{name: "five families", reqs: []nodeplan.Requirement{family(5)}, key: nodeplan.LabelInstanceFamily, min: 5},
		{name: "five families, at most three options asked", reqs: []nodeplan.Requirement{family(5)}, max: 3, key: nodeplan.LabelInstanceFamily, min: 5},
		{name: "two categories of c, m, r", reqs: []nodeplan.Requirement{category}, key: nodeplan.LabelInstanceCategory, min: 2},
		{
			name: "three families among two", reqs: []nodeplan.Requirement{family(3), nodeplan.In(nodeplan.LabelInstanceFamily, "c5", "m5")},
			key: nodeplan.LabelInstanceFamily, min: 3, unplaced: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := nodeplan.NodePool{Name: "default", Template: nodeplan.NodeClaimTemplate{Requirements: nodeplan.NewRequirements(tc.reqs...)}}
			in := Input{Pods: mixed(), NodePools: []nodeplan.NodePool{pool}, InstanceTypes: catalog, Options: Options{MaxInstanceTypes: tc.max}}
			res, err := Solve(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if tc.unplaced {
				if len(res.NodeClaims) != 0 || len(res.Unschedulable) != len(in.Pods) {
					t.Fatalf("Solve() = %d claims, %d unplaced; want 0 claims, all %d pods unplaced", len(res.NodeClaims), len(res.Unschedulable), len(in.Pods))
				}
				for _, u := range res.Unschedulable {
					if u.Code != ReasonMinValues || !strings.Contains(u.Message, tc.key+" minValues 3") {
						t.Fatalf("Unschedulable[%s] = %s %q, want %s naming %q", u.Pod, u.Code, u.Message, ReasonMinValues, tc.key+" minValues 3")
					}
				}
				return
			}
			if len(res.Unschedulable) != 0 || len(res.NodeClaims) == 0 {
				t.Fatalf("Solve() = %d claims, unplaced %v; want every pod placed", len(res.NodeClaims), res.Unschedulable)
			}
			for i, c := range res.NodeClaims {
				checkMinValuesClaim(t, i, c, byName, tc.key, tc.min)
			}
		})
	}
}

// checkMinValuesClaim checks one claim of TestMinValuesInLaunchRequests: its options span at
// least min values of key, each is allowed by the claim's requirements and fits its resources,
// the chosen type is among them, and the claim carries the minimum in its requirements.
func checkMinValuesClaim(t *testing.T, i int, c NewNodeClaim, byName map[string]*nodeplan.InstanceType, key string, min int) {
	t.Helper()
	values := map[string]bool{}
	for _, name := range c.InstanceTypeOptions {
		it := byName[name]
		if it == nil {
			t.Fatalf("claim %d: option %q is not in the catalog", i, name)
		}
		values[it.Labels[key]] = true
		if !c.Requirements.Intersects(it.Requirements()) {
			t.Errorf("claim %d: option %s is not allowed by the claim's requirements %v", i, name, c.Requirements)
		}
		alloc := it.Allocatable()
		for r, q := range c.Resources {
			if a := alloc[r]; a.Cmp(q) < 0 {
				t.Errorf("claim %d: option %s has %s %s allocatable, the claim needs %s", i, name, r, a.String(), q.String())
			}
		}
	}
	if len(values) < min {
		t.Errorf("claim %d: options %v span %d values of %s, want at least %d", i, c.InstanceTypeOptions, len(values), key, min)
	}
	if !slices.Contains(c.InstanceTypeOptions, c.InstanceType) {
		t.Errorf("claim %d: chosen type %s is not among its options %v", i, c.InstanceType, c.InstanceTypeOptions)
	}
	if r, ok := c.Requirements.Get(key); !ok || r.MinValues < min {
		t.Errorf("claim %d: requirements %v do not carry %s minValues %d", i, c.Requirements, key, min)
	}
}
