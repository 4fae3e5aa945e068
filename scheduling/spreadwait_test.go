package scheduling

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"

	"github.com/nodeplan/nodeplan/internal/topology"
)

// drawWaitModel draws a few spread families over a few domains, with groups as carriers and
// counted pods placed in them, and returns the search's model of it. Parts may name a domain
// the family does not count, and the same group may appear in several families (the cases
// where carriers wait on each other).
func drawWaitModel(t *rapid.T) *waitModel {
	groups := make([]*group, rapid.IntRange(1, 6).Draw(t, "groups"))
	st := &packState{remaining: make([]int64, len(groups))}
	for i := range groups {
		groups[i] = &group{id: i, pods: make([]*corev1.Pod, rapid.IntRange(0, 4).Draw(t, "pods"))}
		st.remaining[i] = int64(rapid.IntRange(0, len(groups[i].pods)).Draw(t, "remaining"))
	}
	p := &problem{}
	domains := []string{"a", "b", "c", "d", "e"}
	for range rapid.IntRange(1, 3).Draw(t, "families") {
		s := &spreadC{Spread: topology.Spread{MaxSkew: rapid.IntRange(1, 2).Draw(t, "maxSkew"), MinDomains: max(rapid.IntRange(0, 4).Draw(t, "minDomains"), 1)}}
		base := map[string]int{}
		for _, v := range domains[:rapid.IntRange(0, 4).Draw(t, "counted")] {
			base[v] = rapid.IntRange(0, 2).Draw(t, "base")
		}
		f := &spreadFam{s: s, Family: topology.NewFamily(s.Spread, base)}
		for range rapid.IntRange(0, 8).Draw(t, "parts") {
			f.parts = append(f.parts, spreadPart{
				g:       rapid.SampledFrom(groups).Draw(t, "g"),
				domain:  rapid.SampledFrom(domains).Draw(t, "domain"),
				carrier: rapid.Bool().Draw(t, "carrier"),
				count:   countKind(rapid.IntRange(0, 2).Draw(t, "count")),
			})
		}
		p.spreadFams = append(p.spreadFams, f)
	}
	return p.newWaitModel(st)
}

// The may-wait search is a greatest fixpoint: dropping a pair only lowers what other families
// count as held, which only makes the others' condition harder, so dropping the failing pairs
// one at a time, in any order, ends where the search's rounds end.
func TestMayWaitFixpointIsOrderFree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := drawWaitModel(t)
		want := slices.Repeat([]bool{true}, len(m.pairs))
		m.mayWaitFixpoint(want)
		got := slices.Repeat([]bool{true}, len(m.pairs))
		for failing := m.cannotWait(got); len(failing) > 0; failing = m.cannotWait(got) {
			got[rapid.SampledFrom(failing).Draw(t, "drop")] = false
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("pairs left, dropped one at a time (-rounds +one at a time):\n%s", diff)
		}
	})
}
