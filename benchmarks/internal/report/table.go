package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nodeplan/nodeplan/benchmarks/internal/measure"
)

// NodeplanTable writes a markdown table of nodeplan's results, one row per scenario.
func NodeplanTable(w io.Writer, rs []measure.Result) error {
	var b strings.Builder
	b.WriteString("| scenario | pods | $/h | cost/LB | nodes | unplaced | time (median) | cpu | pods/s | allocs | valid |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %d | %.3f | %s | %d | %d | %s | %s | %s | %s | %s |\n",
			r.Scenario, r.Pods, r.Cost, ratio(r.CostOverLB()), r.Nodes, r.Unplaced,
			dur(r.Wall), dur(r.CPU), rate(r.PodsPerSecond()), count(r.Allocs), validity(r))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Pair is one scenario solved by nodeplan and by a peer in the same run.
type Pair struct {
	Nodeplan, Peer measure.Result
}

// CostRatio is nodeplan's cost over the peer's: below 1 means nodeplan is cheaper.
func (p Pair) CostRatio() float64 {
	if p.Peer.Cost <= 0 {
		return 0
	}
	return p.Nodeplan.Cost / p.Peer.Cost
}

// TimeRatio is nodeplan's median wall time over the peer's: below 1 means nodeplan is faster.
func (p Pair) TimeRatio() float64 {
	if p.Peer.Wall <= 0 {
		return 0
	}
	return float64(p.Nodeplan.Wall) / float64(p.Peer.Wall)
}

// CPURatio is like TimeRatio for CPU time.
func (p Pair) CPURatio() float64 {
	if p.Peer.CPU <= 0 {
		return 0
	}
	return float64(p.Nodeplan.CPU) / float64(p.Peer.CPU)
}

// ComparisonTable writes a markdown table with nodeplan and the peer side by side.
func ComparisonTable(w io.Writer, peer string, ps []Pair) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| scenario | pods | $/h nodeplan | $/h %[1]s | cost ratio | cost/LB nodeplan | cost/LB %[1]s | nodes | unplaced | time nodeplan | time %[1]s | time ratio | cpu ratio | valid |\n", peer)
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	incomparable := false
	for _, p := range ps {
		n, k := p.Nodeplan, p.Peer
		costRatio := "**" + ratio(p.CostRatio()) + "**"
		if n.Unplaced != k.Unplaced {
			costRatio = "(" + ratio(p.CostRatio()) + ")†"
			incomparable = true
		}
		fmt.Fprintf(&b, "| %s | %d | %.3f | %.3f | %s | %s | %s | %d / %d | %d / %d | %s | %s | %s | %s | %s |\n",
			n.Scenario, n.Pods, n.Cost, k.Cost, costRatio, ratio(n.CostOverLB()), ratio(k.CostOverLB()),
			n.Nodes, k.Nodes, n.Unplaced, k.Unplaced, dur(n.Wall), dur(k.Wall), ratio(p.TimeRatio()), ratio(p.CPURatio()), validity(n))
	}
	if incomparable {
		b.WriteString("\n† The two solvers placed different numbers of pods, so their costs do not compare.\n")
	}
	var notes []string
	for _, p := range ps {
		for _, r := range []measure.Result{p.Nodeplan, p.Peer} {
			if r.Note != "" {
				notes = append(notes, fmt.Sprintf("- %s, %s: %s\n", r.Scenario, r.Solver, r.Note))
			}
			if r.Violation != "" {
				notes = append(notes, fmt.Sprintf("- %s, %s: %d checker violations, first: %s\n", r.Scenario, r.Solver, r.Violations, r.Violation))
			}
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		b.WriteString(strings.Join(notes, ""))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func validity(r measure.Result) string {
	switch {
	case !r.Checked:
		return "—"
	case r.Violations == 0:
		return "ok"
	}
	return fmt.Sprintf("%d violations", r.Violations)
}

func ratio(x float64) string {
	switch {
	case x == 0:
		return "—"
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	case x < 0.01:
		return fmt.Sprintf("%.4f", x)
	}
	return fmt.Sprintf("%.3f", x)
}

func dur(d time.Duration) string {
	if d == 0 {
		return "—"
	}
	return measure.Round(d).String()
}

func rate(x float64) string {
	switch {
	case x == 0:
		return "—"
	case x >= 1e6:
		return fmt.Sprintf("%.1fM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

func count(n uint64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fG", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
