package scheduling

import (
	"math"
	"testing"
)

// TestLPTablesAreWellFormed: each row of the role table names the role it is indexed by, and
// the size table's rows go from small to every size, so lpPolicy reads the row it means.
func TestLPTablesAreWellFormed(t *testing.T) {
	for i, r := range lpRoles() {
		if r.role != lpRole(i) {
			t.Errorf("lpRoles()[%d].role = %d, want %d", i, r.role, i)
		}
		if r.minSmall <= 0 || r.minLarge <= 0 {
			t.Errorf("lpRoles()[%d] guarantees no round: %+v", i, r)
		}
	}
	sizes := lpSizes()
	if sizes[0].maxRows >= sizes[1].maxRows || sizes[1].maxRows != math.MaxInt {
		t.Errorf("lpSizes() rows %d, %d: want small first, then every size", sizes[0].maxRows, sizes[1].maxRows)
	}
}

// TestLPPolicy: the policy a few LPs get, read off the tables — the size's row at its
// boundary, the role's rounds and proof, and the budget between its floor and its cap.
func TestLPPolicy(t *testing.T) {
	for _, tc := range []struct {
		role                      lpRole
		rows                      int
		pods                      int64
		effort                    float64
		valuesOnly                bool
		minRounds, budget, cols   int
		prove, tail, full, bothDu bool
		skip                      skipRule
	}{
		{valuesLP, 100, 10, 0, true, 20, 1_500_000, 8, false, false, true, true, neverSkip},
		{valuesLP, 101, 10, 0, false, 6, 3_000_000, 4, false, false, false, false, neverSkip},
		{repricedLP, 10, 5000, 1, false, 20, 5_000_000, 8, true, false, true, true, skipPastBudgetIfRepriced},
		{limitLP, 10, 50_000, 1, false, 15, 20_000_000, 8, true, false, true, true, neverSkip},
		{limitLP, 500, 50_000, 2, false, 6, 40_000_000, 4, true, false, false, false, neverSkip},
		{shareLP, 10, 10, 0.5, false, 20, 1_500_000, 8, false, false, true, true, skipPastBudgetOrOverLimit},
		{relaxedLP, 10, 10, 1, false, 25, 3_000_000, 8, true, true, true, true, neverSkip},
		{relaxedLP, 1000, 10, 1, false, 10, 3_000_000, 4, true, true, false, false, neverSkip},
	} {
		c := lpPolicy(tc.role, tc.rows, tc.pods, tc.effort, tc.valuesOnly)
		got := [...]any{c.minRounds, c.budget, c.columns, c.prove, c.tail.after > 0, c.fullRound, c.bothDuals, c.skip}
		want := [...]any{tc.minRounds, tc.budget, tc.cols, tc.prove, tc.tail, tc.full, tc.bothDu, tc.skip}
		if got != want {
			t.Errorf("lpPolicy(%d, %d rows, %d pods, effort %v, valuesOnly %v) = %v, want %v",
				tc.role, tc.rows, tc.pods, tc.effort, tc.valuesOnly, got, want)
		}
	}
}
