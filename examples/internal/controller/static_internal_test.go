package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeplan/nodeplan"
)

func TestPlanStatic(t *testing.T) {
	pool := func(replicas int64, limit string) nodeplan.NodePool {
		p := nodeplan.NodePool{Name: "static", Replicas: &replicas}
		if limit != "" {
			p.Limits = corev1.ResourceList{nodeplan.ResourceNodes: resource.MustParse(limit)}
		}
		return p
	}
	cl := func(name string, phase Phase, reason ...string) *Claim {
		c := &Claim{Phase: phase}
		c.Name = name
		if len(reason) > 0 {
			c.Reason = reason[0]
		}
		return c
	}
	for _, tc := range []struct {
		name         string
		pool         nodeplan.NodePool
		claims       []*Claim
		replacing    map[string]string
		drifted      []string
		pods         map[string]int
		dnd          []string
		allowedDrift int
		want         staticPlan
	}{
		{name: "empty pool launches all", pool: pool(3, ""), want: staticPlan{Launch: 3}},
		{name: "terminating ones do not count", pool: pool(2, ""),
			claims: []*Claim{cl("a", PhaseInitialized), cl("b", PhaseTerminating)}, want: staticPlan{Launch: 1}},
		{name: "limits.nodes caps, terminating ones included", pool: pool(3, "2"),
			claims: []*Claim{cl("a", PhaseInitialized), cl("b", PhaseTerminating)}, want: staticPlan{Launch: 0, LimitReached: true}},
		{name: "at the count nothing happens", pool: pool(2, ""),
			claims: []*Claim{cl("a", PhaseInitialized), cl("b", PhaseLaunched)}, want: staticPlan{}},
		{name: "surplus: unregistered, then empty, then fewest pods, do-not-disrupt last", pool: pool(1, ""),
			claims: []*Claim{cl("busy", PhaseInitialized), cl("dnd", PhaseInitialized), cl("empty", PhaseInitialized),
				cl("new", PhaseLaunched), cl("quiet", PhaseInitialized)},
			pods: map[string]int{"busy": 5, "dnd": 0, "quiet": 1}, dnd: []string{"dnd"},
			want: staticPlan{Remove: []string{"new", "empty", "quiet", "busy"}}},
		{name: "drifted nodes replaced within the budget", pool: pool(3, ""),
			claims:  []*Claim{cl("a", PhaseInitialized), cl("b", PhaseInitialized), cl("c", PhaseInitialized)},
			drifted: []string{"a", "b", "c"}, allowedDrift: 2, want: staticPlan{Replace: []string{"a", "b"}}},
		{name: "a replacement in flight takes budget and is not counted", pool: pool(2, ""),
			claims:    []*Claim{cl("a", PhaseInitialized), cl("b", PhaseInitialized), cl("r", PhaseLaunched)},
			replacing: map[string]string{"a": "r"}, drifted: []string{"a", "b"}, allowedDrift: 1, want: staticPlan{}},
		{name: "an initialized replacement retires the drifted node", pool: pool(2, ""),
			claims:    []*Claim{cl("a", PhaseInitialized), cl("b", PhaseInitialized), cl("r", PhaseInitialized)},
			replacing: map[string]string{"a": "r"}, drifted: []string{"a"}, allowedDrift: 1, want: staticPlan{Retire: []string{"a"}}},
		{name: "the pair ends once the drifted node terminates", pool: pool(2, ""),
			claims:    []*Claim{cl("a", PhaseTerminating, "Drifted"), cl("b", PhaseInitialized), cl("r", PhaseInitialized)},
			replacing: map[string]string{"a": "r"}, drifted: []string{"a"}, allowedDrift: 1, want: staticPlan{Forget: []string{"a"}}},
		{name: "a failed replacement ends the pair", pool: pool(1, ""),
			claims: []*Claim{cl("a", PhaseInitialized)}, replacing: map[string]string{"a": "gone"}, drifted: []string{"a"},
			allowedDrift: 1, want: staticPlan{Forget: []string{"a"}}},
		{name: "a drifted node terminating takes budget", pool: pool(2, ""),
			claims:  []*Claim{cl("a", PhaseTerminating, "Drifted"), cl("b", PhaseInitialized), cl("c", PhaseInitialized)},
			drifted: []string{"b"}, allowedDrift: 1, want: staticPlan{}},
		{name: "no drift replacement while short", pool: pool(3, ""),
			claims: []*Claim{cl("a", PhaseInitialized)}, drifted: []string{"a"}, allowedDrift: 5, want: staticPlan{Launch: 2}},
		{name: "no drift replacement of a do-not-disrupt node", pool: pool(1, ""),
			claims: []*Claim{cl("a", PhaseInitialized)}, drifted: []string{"a"}, dnd: []string{"a"}, allowedDrift: 1, want: staticPlan{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drifted, dnd := map[string]bool{}, map[string]bool{}
			for _, n := range tc.drifted {
				drifted[n] = true
			}
			for _, n := range tc.dnd {
				dnd[n] = true
			}
			got := planStatic(tc.pool, tc.claims, tc.replacing, drifted, tc.pods, dnd, tc.allowedDrift)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("planStatic (-want +got):\n%s", diff)
			}
		})
	}
}
