package measure

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nodeplan/nodeplan/benchmarks/suite"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/check"
)

// Result is one solver's outcome on one scenario.
type Result struct {
	Scenario string `json:"scenario"`
	Family   string `json:"family"`
	Pods     int    `json:"pods"`
	Solver   string `json:"solver"`
	// Cost is the $/h of the nodes the solver would launch.
	Cost float64 `json:"cost"`
	// LowerBound is nodeplan's lower bound for the scenario: no plan placing every pod can
	// cost less. It is a property of the problem, so every solver is compared to the same one.
	LowerBound float64 `json:"lowerBound"`
	Nodes      int     `json:"nodes"`
	Unplaced   int     `json:"unplaced"`
	Timing
	// Checked says the result went through the independent checker; Violations is how many
	// rules it broke and Violation the first, as a sentence.
	Checked    bool   `json:"checked"`
	Violations int    `json:"violations"`
	Violation  string `json:"violation,omitempty"`
	// Note says anything else a reader must know (a timeout, a partial result).
	Note string `json:"note,omitempty"`
	// CutOff says the run was stopped at a time limit: Wall is a lower limit on its time, and
	// Cost and Nodes are for the pods placed by then.
	CutOff bool `json:"cutOff,omitempty"`
}

// CostOverLB is Cost/LowerBound, or 0 when there is no bound.
func (r Result) CostOverLB() float64 {
	if r.LowerBound <= 0 {
		return 0
	}
	return r.Cost / r.LowerBound
}

// PodsPerSecond is the pod count over the median wall time.
func (r Result) PodsPerSecond() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.Pods) / r.Wall.Seconds()
}

// Nodeplan solves sc with scheduling.Solve, repeating as o says, and checks the last result
// with the independent checker.
func Nodeplan(ctx context.Context, sc suite.Scenario, o Options) (Result, error) {
	var res scheduling.Result
	t, err := Repeat(ctx, o, func(ctx context.Context) error {
		var err error
		res, err = scheduling.Solve(ctx, sc.Input)
		return err
	})
	if err != nil {
		return Result{}, fmt.Errorf("measure: nodeplan on %s: %w", sc.Name, err)
	}
	r := Result{
		Scenario:   sc.Name,
		Family:     sc.Family,
		Pods:       len(sc.Input.Pods),
		Solver:     "nodeplan",
		Cost:       res.Cost,
		LowerBound: res.LowerBound,
		Nodes:      len(res.NodeClaims),
		Unplaced:   len(res.Unschedulable),
		Timing:     t,
		Checked:    true,
	}
	if err := check.Result(sc.Input, res); err != nil {
		vs := check.Violations(err)
		r.Violations = max(len(vs), 1)
		r.Violation = err.Error()
		if len(vs) > 0 {
			r.Violation = vs[0].Error()
		}
		r.Violation = clip(r.Violation, 300)
	}
	if r.Unplaced > 0 {
		r.Note = fmt.Sprintf("%d unplaced, e.g. %s: %s", r.Unplaced, res.Unschedulable[0].Pod, firstSentence(res.Unschedulable[0].Message))
	}
	return r, nil
}

func firstSentence(s string) string {
	if i := strings.Index(s, "; "); i >= 0 {
		s = s[:i]
	}
	return clip(s, 300)
}

// clip shortens s to at most n bytes (on a rune boundary), marking the cut with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Round keeps a duration's three most significant digits, for tables.
func Round(d time.Duration) time.Duration {
	switch {
	case d >= 100*time.Second:
		return d.Round(time.Second)
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(10 * time.Microsecond)
}
