package knapsack

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// drawProblem draws a small knapsack: two or three resources, up to four items with a few
// copies each, maybe a shared cap and a conflicting pair.
func drawProblem(t *rapid.T) *Problem {
	nd := rapid.IntRange(2, 3).Draw(t, "resources")
	p := &Problem{Capacity: make([]int64, nd)}
	for d := range p.Capacity {
		p.Capacity[d] = int64(rapid.IntRange(4, 16).Draw(t, fmt.Sprintf("cap-%d", d)))
	}
	n := rapid.IntRange(1, 4).Draw(t, "items")
	if rapid.Bool().Draw(t, "shared cap") {
		p.CapLimits = []int64{int64(rapid.IntRange(0, 3).Draw(t, "cap limit"))}
	}
	for j := range n {
		it := Item{ID: 10 * (j + 1), Value: rapid.Float64Range(-0.2, 1).Draw(t, fmt.Sprintf("value-%d", j)),
			Req: make([]int64, nd), Max: int64(rapid.IntRange(1, 5).Draw(t, fmt.Sprintf("max-%d", j)))}
		size := 0.0
		for d := range it.Req {
			it.Req[d] = int64(rapid.IntRange(0, 6).Draw(t, fmt.Sprintf("req-%d-%d", j, d)))
			size += float64(it.Req[d]) / float64(p.Capacity[d])
		}
		it.Size = max(size, 1e-12)
		if p.CapLimits != nil && rapid.Bool().Draw(t, fmt.Sprintf("capped-%d", j)) {
			it.Caps = []int{0}
		}
		p.Items = append(p.Items, it)
	}
	if n >= 2 && rapid.Bool().Draw(t, "conflict") {
		a, b := p.Items[0].ID, p.Items[1].ID
		p.Conflict = func(x, y int) bool {
			ix, iy := p.Items[x].ID, p.Items[y].ID
			return (ix == a && iy == b) || (ix == b && iy == a)
		}
	}
	return p
}

// bruteForce is the best value over every count vector within the room, the counts, the
// shared caps and the conflicts.
func bruteForce(p *Problem) float64 {
	best := 0.0
	counts := make([]int64, len(p.Items))
	var rec func(j int)
	rec = func(j int) {
		if j == len(p.Items) {
			if v, ok := worth(p, counts); ok {
				best = max(best, v)
			}
			return
		}
		for c := int64(0); c <= p.Items[j].Max; c++ {
			counts[j] = c
			rec(j + 1)
		}
		counts[j] = 0
	}
	rec(0)
	return best
}

// worth is the value of counts (by item index) and whether they are a valid set.
func worth(p *Problem, counts []int64) (float64, bool) {
	used := make([]int64, len(p.Capacity))
	capUsed := make([]int64, len(p.CapLimits))
	v := 0.0
	for j, c := range counts {
		if c == 0 {
			continue
		}
		if c > p.Items[j].Max || p.Items[j].Value <= 0 {
			return 0, false
		}
		for d, r := range p.Items[j].Req {
			used[d] += c * r
		}
		for _, ci := range p.Items[j].Caps {
			capUsed[ci] += c
		}
		for i, o := range counts {
			if i != j && o > 0 && p.Conflict != nil && p.Conflict(j, i) {
				return 0, false
			}
		}
		v += float64(c) * p.Items[j].Value
	}
	for d := range used {
		if used[d] > p.Capacity[d] {
			return 0, false
		}
	}
	for ci := range capUsed {
		if capUsed[ci] > p.CapLimits[ci] {
			return 0, false
		}
	}
	return v, true
}

// countsOf maps picks back to counts by item index.
func countsOf(t *rapid.T, p *Problem, picks []Pick) []int64 {
	counts := make([]int64, len(p.Items))
	for _, x := range picks {
		found := false
		for j, it := range p.Items {
			if it.ID == x.ID {
				counts[j] += x.N
				found = true
			}
		}
		if !found {
			t.Fatalf("pick of unknown ID %d", x.ID)
		}
	}
	return counts
}

// TestSolveIsExact: with budget to finish, Solve finds the brute-force optimum, its picks are
// a valid set worth what it says, and its bound (and Bound/Refine's) is no less.
func TestSolveIsExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawProblem(t)
		want := bruteForce(p)
		var s Solver
		picks, got, upper := s.Solve(p, math.MaxInt32, 0)
		if math.Abs(got-want) > 1e-9 {
			t.Fatalf("Solve = %v, brute force %v", got, want)
		}
		if v, ok := worth(p, countsOf(t, p, picks)); !ok || math.Abs(v-got) > 1e-9 {
			t.Fatalf("picks %v: valid %v, worth %v, Solve says %v", picks, ok, v, got)
		}
		if upper < want-1e-9 {
			t.Fatalf("Solve's bound %v below the optimum %v", upper, want)
		}
		if b := s.Bound(p); b < want-1e-9 {
			t.Fatalf("Bound %v below the optimum %v", b, want)
		}
		if r, _ := s.Refine(p); r < want-1e-9 {
			t.Fatalf("Refine %v below the optimum %v", r, want)
		}
	})
}

// TestSolveOutOfBudgetStillBounds: a search cut short returns a valid set and a bound no less
// than the optimum (over every item when all are loaded).
func TestSolveOutOfBudgetStillBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawProblem(t)
		want := bruteForce(p)
		var s Solver
		topK := rapid.IntRange(0, 2).Draw(t, "topK")
		picks, got, upper := s.Solve(p, rapid.IntRange(0, 3).Draw(t, "budget"), topK)
		if v, ok := worth(p, countsOf(t, p, picks)); !ok || math.Abs(v-got) > 1e-9 || got > want+1e-9 {
			t.Fatalf("picks %v: valid %v, worth %v, Solve says %v, optimum %v", picks, ok, v, got, want)
		}
		if topK == 0 && upper < want-1e-9 {
			t.Fatalf("bound %v below the optimum %v", upper, want)
		}
	})
}

// TestSearchFindsWhatBeatsTarget: Search finds the optimum whenever it beats the target, never
// more than the optimum, and proves its answer when it finishes.
func TestSearchFindsWhatBeatsTarget(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawProblem(t)
		want := bruteForce(p)
		target := want * rapid.Float64Range(0.5, 1.5).Draw(t, "target")
		var s Solver
		picks, got, proved := s.Search(p, math.MaxInt32, 0, target)
		if !proved {
			t.Fatalf("Search with an unlimited budget did not prove its answer")
		}
		if v, ok := worth(p, countsOf(t, p, picks)); !ok || math.Abs(v-got) > 1e-9 {
			t.Fatalf("picks %v: valid %v, worth %v, Search says %v", picks, ok, v, got)
		}
		if want > target*(1+1e-9) && math.Abs(got-want) > 1e-9 {
			t.Fatalf("optimum %v beats target %v, Search found %v", want, target, got)
		}
		if got > want+1e-9 {
			t.Fatalf("Search found %v, above the optimum %v", got, want)
		}
	})
}

// BenchmarkSolvePricing is a pricing problem as the LP's small cases pose it: six kinds of
// pod on a 64-cpu node, hundreds of copies fitting, values near the node's price.
func BenchmarkSolvePricing(b *testing.B) {
	const gi = 1 << 30
	p := &Problem{Capacity: []int64{63_770, 250 * gi, 234}}
	for j, r := range [][2]int64{{100, gi / 4}, {250, gi / 2}, {500, gi}, {1000, 2 * gi}, {2000, 8 * gi}, {1500, 3 * gi}} {
		size := float64(r[0])/63_770 + float64(r[1])/(250*gi) + 1.0/234
		p.Items = append(p.Items, Item{ID: j, Value: 0.0034 * size * (1 + 0.07*float64(j%3)), Req: []int64{r[0], r[1], 1}, Max: 234, Size: size})
	}
	var s Solver
	nodes := 0
	b.ReportAllocs()
	for b.Loop() {
		w := s.Work
		s.Solve(p, 1000, 0)
		nodes += s.Work - w
	}
	b.ReportMetric(float64(nodes)/float64(b.N), "work/op")
}

// TestLevelsChangeNothing: a surrogate's fill kept per search level (few items) and the one
// list every node skips through (many items) give bit-identical answers and the same work.
func TestLevelsChangeNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawProblem(t)
		budget := rapid.IntRange(0, 50).Draw(t, "budget")
		target := rapid.Float64Range(0, 2).Draw(t, "target")
		tight := rapid.Bool().Draw(t, "tight")
		type answer struct {
			Solve, Search []Pick
			V, U, SV      float64
			Proved        bool
			Bound         float64
			Work          int
		}
		run := func(off Shortcuts) answer {
			s := Solver{Tight: tight, Shortcuts: off}
			var a answer
			a.Solve, a.V, a.U = s.Solve(p, budget, 0)
			a.Search, a.SV, a.Proved = s.Search(p, budget, 0, target)
			a.Bound, a.Work = s.Bound(p), s.Work
			return a
		}
		levels := run(Shortcuts{})
		if diff := cmp.Diff(levels, run(Shortcuts{NoLevels: true})); diff != "" {
			t.Fatalf("kept per level vs not (-want +got):\n%s", diff)
		}
	})
}

// drawPricing draws a knapsack like the LP's pricing problems on a big node: a few resources
// with room for hundreds of copies, several items of many copies each, no shared caps; values
// are often round, so bounds tie with the best value and the target.
func drawPricing(t *rapid.T) *Problem {
	nd := rapid.IntRange(1, 4).Draw(t, "resources")
	p := &Problem{Capacity: make([]int64, nd)}
	for d := range p.Capacity {
		p.Capacity[d] = int64(rapid.IntRange(0, 5000).Draw(t, fmt.Sprintf("cap-%d", d)))
	}
	n := rapid.IntRange(1, 8).Draw(t, "items")
	for j := range n {
		it := Item{ID: j + 1, Req: make([]int64, nd), Max: int64(rapid.IntRange(0, 300).Draw(t, fmt.Sprintf("max-%d", j)))}
		size := 0.0
		for d := range it.Req {
			it.Req[d] = int64(rapid.IntRange(0, 400).Draw(t, fmt.Sprintf("req-%d-%d", j, d)))
			size += float64(it.Req[d]) / float64(max(p.Capacity[d], 1))
		}
		it.Value = size * rapid.Float64Range(0.5, 1.5).Draw(t, fmt.Sprintf("value-%d", j))
		if rapid.Bool().Draw(t, fmt.Sprintf("round-%d", j)) {
			it.Value = float64(rapid.IntRange(1, 8).Draw(t, fmt.Sprintf("whole-%d", j))) / 8
		}
		it.Size = max(size, 1e-12)
		p.Items = append(p.Items, it)
	}
	return p
}

// TestCountingPrunedChangesNothing: counting the children surelyPruned shows pruned instead of
// visiting them gives bit-identical answers and the same work, budgets cut short included.
func TestCountingPrunedChangesNothing(t *testing.T) {
	checkShortcutChangesNothing(t, drawPricing, Shortcuts{NoCountPruned: true})
}

// checkShortcutChangesNothing checks that turning off shortcuts (off: the solver's option,
// all on in production) leaves Solve's and Search's answers and work bit-identical on
// problems draw makes, budgets cut short included.
func checkShortcutChangesNothing(t *testing.T, draw func(*rapid.T) *Problem, off Shortcuts) {
	rapid.Check(t, func(t *rapid.T) {
		p := draw(t)
		budget := rapid.IntRange(0, 5000).Draw(t, "budget")
		target := float64(rapid.IntRange(0, 40).Draw(t, "target")) / 8
		tight := rapid.Bool().Draw(t, "tight")
		topK := rapid.IntRange(0, 3).Draw(t, "topK")
		type answer struct {
			Solve, Search []Pick
			V, U, SV      float64
			Proved        bool
			Work          int
		}
		run := func(off Shortcuts) answer {
			s := Solver{Tight: tight, Shortcuts: off}
			var a answer
			a.Solve, a.V, a.U = s.Solve(p, budget, topK)
			a.Search, a.SV, a.Proved = s.Search(p, budget, topK, target)
			a.Work = s.Work
			return a
		}
		with := run(Shortcuts{})
		if diff := cmp.Diff(run(off), with); diff != "" {
			t.Fatalf("with the shortcut vs without (-want +got):\n%s", diff)
		}
	})
}

// drawCapped draws a pricing knapsack whose items have shared caps, as hostname spreads and
// anti-affinity give them: most items alone under a cap of their own, which may or may not
// bind (its limit below or above the item's count), some pairs under one cap, some items
// under two.
func drawCapped(t *rapid.T) *Problem {
	p := drawPricing(t)
	for j := range p.Items {
		it := &p.Items[j]
		switch rapid.IntRange(0, 4).Draw(t, fmt.Sprintf("caps-%d", j)) {
		case 0: // none
		case 1, 2: // its own
			it.Caps = []int{len(p.CapLimits)}
			p.CapLimits = append(p.CapLimits, it.Max+int64(rapid.IntRange(-3, 3).Draw(t, fmt.Sprintf("limit-%d", j))))
		case 3: // the previous item's cap, when it has one
			if j > 0 && len(p.Items[j-1].Caps) > 0 {
				it.Caps = []int{p.Items[j-1].Caps[0]}
			}
		case 4: // its own, then the first item's
			it.Caps = []int{len(p.CapLimits)}
			p.CapLimits = append(p.CapLimits, int64(rapid.IntRange(0, 300).Draw(t, fmt.Sprintf("limit-%d", j))))
			if len(p.Items[0].Caps) > 0 && j > 0 {
				it.Caps = append(it.Caps, p.Items[0].Caps[0])
			}
		}
	}
	return p
}

// TestSettlingChangesNothing: settling capped bounds from the greedy fill (settle.go) instead
// of computing them gives bit-identical answers and the same work, budgets cut short included.
func TestSettlingChangesNothing(t *testing.T) {
	checkShortcutChangesNothing(t, drawCapped, Shortcuts{NoSettle: true})
}

// selectBySort is selectItems as it was written first: every item sorted, then the caps' best
// members and the items in order taken — the reference selectItems must agree with.
func selectBySort(p *Problem, items []kItem, topK int) []kItem {
	items = slices.Clone(items)
	slices.SortFunc(items, byKey)
	type seen struct {
		c    int
		n    int64
		best int
	}
	var caps []seen
	index := func(c int) int {
		for i := range caps {
			if caps[i].c == c {
				return i
			}
		}
		caps = append(caps, seen{c: c, best: -1})
		return len(caps) - 1
	}
	for j, it := range items {
		for _, c := range p.Items[it.src].Caps {
			cc := &caps[index(c)]
			if cc.best < 0 || it.v > items[cc.best].v {
				cc.best = j
			}
		}
	}
	picked := make([]bool, len(items))
	var top []kItem
	take := func(j int) {
		picked[j] = true
		top = append(top, items[j])
		for _, c := range p.Items[items[j].src].Caps {
			caps[index(c)].n++
		}
	}
	for i := range caps {
		if j := caps[i].best; len(top) < topK && !picked[j] {
			take(j)
		}
	}
	for j, it := range items {
		if len(top) >= topK {
			break
		}
		full := picked[j]
		for _, c := range p.Items[it.src].Caps {
			full = full || caps[index(c)].n > p.CapLimits[c]
		}
		if !full {
			take(j)
		}
	}
	return top
}

// TestSelectItemsIsSelectBySort: selectItems, which sorts only as far as it reads, keeps the
// same items in the same order as sorting them all first; keys and values tie often, items
// name several caps, some twice.
func TestSelectItemsIsSelectBySort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ncaps := rapid.IntRange(0, 4).Draw(t, "caps")
		p := &Problem{}
		for c := range ncaps {
			p.CapLimits = append(p.CapLimits, int64(rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("limit-%d", c))))
		}
		n := rapid.IntRange(1, 120).Draw(t, "items")
		var items []kItem
		for j := range n {
			it := Item{ID: rapid.IntRange(0, 1000).Draw(t, fmt.Sprintf("id-%d", j))*200 + j,
				Value: float64(rapid.IntRange(1, 4).Draw(t, fmt.Sprintf("v-%d", j))),
				Size:  float64(rapid.IntRange(1, 4).Draw(t, fmt.Sprintf("size-%d", j))), Max: 1}
			if ncaps > 0 {
				for range rapid.IntRange(0, 3).Draw(t, fmt.Sprintf("ncaps-%d", j)) {
					it.Caps = append(it.Caps, rapid.IntRange(0, ncaps-1).Draw(t, fmt.Sprintf("cap-%d", j)))
				}
			}
			p.Items = append(p.Items, it)
			items = append(items, kItem{g: it.ID, src: j, v: it.Value, maxk: it.Max, key: it.Value / it.Size})
		}
		topK := rapid.IntRange(1, n).Draw(t, "topK")
		want := selectBySort(p, items, topK)
		k := loaded{prob: p}
		got := k.selectItems(slices.Clone(items), topK)
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(kItem{})); diff != "" {
			t.Fatalf("(-by sorting all +selectItems):\n%s", diff)
		}
	})
}

// TestUnusedResourcesChangeNothing: resources no item requests (inserted anywhere, of any
// capacity not below 0) change no answer — the search lays out only the resources some item
// requests — nor the work but for the Lagrangian's set-up (Tight), counted per resource.
func TestUnusedResourcesChangeNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawCapped(t)
		q := &Problem{CapLimits: p.CapLimits, Capacity: slices.Clone(p.Capacity)}
		for j := range p.Items {
			it := p.Items[j]
			it.Req = slices.Clone(it.Req)
			q.Items = append(q.Items, it)
		}
		for x := range rapid.IntRange(1, 3).Draw(t, "unused") {
			at := rapid.IntRange(0, len(q.Capacity)).Draw(t, fmt.Sprintf("at-%d", x))
			c := int64(rapid.IntRange(0, 1<<20).Draw(t, fmt.Sprintf("capacity-%d", x)))
			q.Capacity = slices.Insert(q.Capacity, at, c)
			for j := range q.Items {
				q.Items[j].Req = slices.Insert(q.Items[j].Req, at, 0)
			}
		}
		budget := rapid.IntRange(0, 3000).Draw(t, "budget")
		target := float64(rapid.IntRange(0, 40).Draw(t, "target")) / 8
		tight := rapid.Bool().Draw(t, "tight")
		topK := rapid.IntRange(0, 3).Draw(t, "topK")
		type answer struct {
			Solve, Search        []Pick
			V, U, SV, Bound, Ref float64
			Proved               bool
			Work                 int
		}
		run := func(p *Problem) answer {
			s := Solver{Tight: tight}
			var a answer
			a.Solve, a.V, a.U = s.Solve(p, budget, topK)
			a.Search, a.SV, a.Proved = s.Search(p, budget, topK, target)
			a.Bound = s.Bound(p)
			a.Ref, _ = s.Refine(p)
			if !tight {
				a.Work = s.Work
			}
			return a
		}
		if diff := cmp.Diff(run(p), run(q)); diff != "" {
			t.Fatalf("with unused resources (-without +with):\n%s", diff)
		}
	})
}
