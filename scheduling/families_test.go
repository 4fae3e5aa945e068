package scheduling

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// dropDominatedPairs is dropDominated as the definition reads: a family goes when any other
// family dominates it (every pair compared). The oracle for TestDropDominatedIsPairwise.
func dropDominatedPairs(fams []colFamily, rows int) []colFamily {
	words := (rows + 63) / 64
	sets := famRowSets(fams, words)
	dominates := func(j, i int) bool {
		a, b := &fams[j], &fams[i]
		if a.price > b.price || (a.price == b.price && j > i) {
			return false
		}
		if a.s != b.s && (a.s.pool != b.s.pool || len(a.s.narrowKeys) > 0 || len(b.s.narrowKeys) > 0 || !b.s.alloc.fitsIn(a.s.alloc)) {
			return false
		}
		for w := 0; w < words; w++ {
			if sets[i*words+w]&^sets[j*words+w] != 0 {
				return false
			}
		}
		return true
	}
	var out []colFamily
	for i := range fams {
		kept := true
		for j := range fams {
			if i != j && dominates(j, i) {
				kept = false
				break
			}
		}
		if kept {
			out = append(out, fams[i])
		}
	}
	return out
}

// TestDropDominatedIsPairwise: walking in price order against the kept families only keeps the
// same families, in the same order, as comparing every pair — over pools, shapes with and
// without narrow keys, nested and crossing sizes, tied prices and overlapping row sets.
func TestDropDominatedIsPairwise(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		pools := []*pool{{idx: 0}, {idx: 1}, {idx: 2}}
		var shapes []*shape
		for i := range rapid.IntRange(1, 8).Draw(rt, "shapes") {
			s := &shape{idx: i, pool: rapid.SampledFrom(pools).Draw(rt, fmt.Sprintf("pool-%d", i)), shapeFacts: &shapeFacts{
				alloc: vec{rapid.Int64Range(1, 4).Draw(rt, fmt.Sprintf("cpu-%d", i)), rapid.Int64Range(1, 4).Draw(rt, fmt.Sprintf("mem-%d", i))},
			}}
			if rapid.IntRange(0, 3).Draw(rt, fmt.Sprintf("narrow-%d", i)) == 0 {
				s.narrowKeys = []string{"k"}
			}
			shapes = append(shapes, s)
		}
		rows := rapid.IntRange(1, 70).Draw(rt, "rows")
		var fams []colFamily
		for i := range rapid.IntRange(0, 40).Draw(rt, "families") {
			f := colFamily{s: rapid.SampledFrom(shapes).Draw(rt, fmt.Sprintf("shape-%d", i)),
				o:     rapid.IntRange(0, 2).Draw(rt, fmt.Sprintf("o-%d", i)),
				price: float64(rapid.IntRange(1, 5).Draw(rt, fmt.Sprintf("price-%d", i)))}
			for k := range rapid.IntRange(0, 6).Draw(rt, fmt.Sprintf("items-%d", i)) {
				f.all = append(f.all, famCand{row: int32(rapid.IntRange(0, rows-1).Draw(rt, fmt.Sprintf("row-%d-%d", i, k))),
					mask: rapid.Uint64Range(0, 7).Draw(rt, fmt.Sprintf("mask-%d-%d", i, k))})
			}
			fams = append(fams, f)
		}
		want := dropDominatedPairs(fams, rows)
		got := dropDominated(append([]colFamily(nil), fams...), rows)
		id := func(fs []colFamily) (out []string) {
			for _, f := range fs {
				out = append(out, fmt.Sprintf("%p/%d/%g/%v", f.s, f.o, f.price, f.all))
			}
			return out
		}
		if diff := cmp.Diff(id(want), id(got)); diff != "" {
			rt.Fatalf("kept families (-want +got):\n%s", diff)
		}
	})
}
