package knapsack

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// recordedCall is one call the scheduling package made of a Solver while solving a suite
// scenario (benchmarks/suite) at commit 350118e, before the search was made faster, with what
// the call answered then: testdata/recorded.json.gz holds the heaviest calls of eight
// scenarios and every fortieth of the others (up to 40 items). The answers, bit for bit, and
// the work counted are what later versions must give too: plans and bounds depend on them,
// and the work budget on the work. The last 18 calls were recorded at 88e8418 (the knapsack
// then answering as at 350118e): the heaviest searches of karpenter-mix-1000 and
// karpenter-mix-drawn-1000 over items that share a cap, where the capped bounds are settled
// from the fill (settle.go) — the calls before them rarely share one.
type recordedCall struct {
	Scenario  string
	Kind      string // solve, search, bound or refine
	Tight     bool
	Capacity  []int64
	Items     []Item
	CapLimits []int64
	Conflicts string // '1' where item a conflicts with b, at a*len(Items)+b; empty when none do
	Budget    int
	TopK      int
	Target    float64
	Picks     []Pick
	Value     float64
	Upper     float64 // Solve's bound
	Proved    bool    // Search's
	Loaded    int     // Refine's item count
	Work      int
}

func loadRecorded(tb testing.TB) []recordedCall {
	f, err := os.Open("testdata/recorded.json.gz")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	dec := json.NewDecoder(z)
	var calls []recordedCall
	for {
		var c recordedCall
		if err := dec.Decode(&c); errors.Is(err, io.EOF) {
			return calls
		} else if err != nil {
			tb.Fatal(err)
		}
		calls = append(calls, c)
	}
}

func (c *recordedCall) problem() *Problem {
	p := &Problem{Capacity: c.Capacity, Items: c.Items, CapLimits: c.CapLimits}
	if c.Conflicts != "" {
		n, conf := len(c.Items), c.Conflicts
		p.Conflict = func(a, b int) bool { return conf[a*n+b] == '1' }
	}
	return p
}

// answer is what a call answers, floats as their bits, with the work it counted.
type answer struct {
	Picks        []Pick
	Value, Upper uint64
	Proved       bool
	Loaded, Work int
}

// want is what the call answered when it was recorded.
func (c *recordedCall) want() answer {
	return answer{Picks: c.Picks, Value: math.Float64bits(c.Value), Upper: math.Float64bits(c.Upper),
		Proved: c.Proved, Loaded: c.Loaded, Work: c.Work}
}

// run makes the call of s, on p (c's problem).
func (c *recordedCall) run(s *Solver, p *Problem) answer {
	s.Tight = c.Tight
	w := s.Work
	var a answer
	switch c.Kind {
	case "solve":
		var v, u float64
		a.Picks, v, u = s.Solve(p, c.Budget, c.TopK)
		a.Value, a.Upper = math.Float64bits(v), math.Float64bits(u)
	case "search":
		var v float64
		a.Picks, v, a.Proved = s.Search(p, c.Budget, c.TopK, c.Target)
		a.Value = math.Float64bits(v)
	case "bound":
		a.Value = math.Float64bits(s.Bound(p))
	case "refine":
		var v float64
		v, a.Loaded = s.Refine(p)
		a.Value = math.Float64bits(v)
	}
	a.Work = s.Work - w
	return a
}

// TestRecordedCalls: every recorded call answers today what it answered at 350118e, bit for
// bit, and counts the same work — one Solver for all of them, as the scheduling package keeps
// one per pricer, so scratch left by one call must not change the next.
func TestRecordedCalls(t *testing.T) {
	calls := loadRecorded(t)
	if len(calls) < 100 {
		t.Fatalf("%d recorded calls, want the file's hundreds", len(calls))
	}
	var s Solver
	for i := range calls {
		c := &calls[i]
		if diff := cmp.Diff(c.want(), c.run(&s, c.problem())); diff != "" {
			t.Errorf("call %d (%s, %s, %d items) (-recorded +now):\n%s", i, c.Scenario, c.Kind, len(c.Items), diff)
		}
	}
}

// BenchmarkRecorded makes the recorded calls: the knapsack's share of solving real scenarios.
func BenchmarkRecorded(b *testing.B) {
	calls := loadRecorded(b)
	probs := make([]*Problem, len(calls))
	for i := range calls {
		probs[i] = calls[i].problem()
	}
	var s Solver
	b.ReportAllocs()
	for b.Loop() {
		for i := range calls {
			calls[i].run(&s, probs[i])
		}
	}
	work := 0
	for _, c := range calls {
		work += c.Work
	}
	b.ReportMetric(float64(work), "work/op")
}
