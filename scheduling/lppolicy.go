package scheduling

import "math"

// The policy of a column generation — how many pricing rounds it runs, how hard each round
// searches, what it proves and when it stops — is decided here and nowhere else: lpPolicy
// works an lpConfig out of what the LP is for (its role) and how large it is, from the tables
// below, and colgen.go, colpool.go and bound.go only read it. Every number is a trade of work
// for precision; none touches validity: the bound is proved at whatever duals the LP stops
// at (Farley, see colgen.go), and the work is a count, not a clock, so the same input gives
// the same plan on any machine.

// lpRole is what a column generation is for, and so what it may leave out; the caller names
// it at the call.
type lpRole int

const (
	// valuesLP is the plan's LP where no bound is proved on its problem (the bound is proved
	// on the relaxed problem, or none is wanted): it values the pods and seeds the packers.
	valuesLP lpRole = iota
	// repricedLP is the plan's LP whose bound lowerBound proves, and proves again with the
	// limits priced (limitLP) wherever its final solution exceeds a limit limitPrices prices.
	repricedLP
	// limitLP is limitedBound's LP on the plan's problem: every node's price raised by its
	// limited resources' prices, started from the repriced LP's columns; its bound and
	// columns are read.
	limitLP
	// shareLP prices one pool's share of the pods for its packers (packNewNodes), started
	// from the plan's columns; only its pod values and basis are read.
	shareLP
	// relaxedLP is every LP of the relaxed problem (topologyFreeBound), its limitedBound LP
	// included: only its bound is read.
	relaxedLP
)

// lpConfig is the policy of one column generation (lpPolicy).
type lpConfig struct {
	// minRounds pricing rounds run whatever the budget; past them the LP stops once budget
	// units of work are spent (the knapsack's Work count). maxRounds is a safety net that the
	// budget reaches first.
	minRounds, maxRounds, budget int
	// columns is how many improving columns a pricing round enters at most, pooled how many
	// of them the column pool may offer, searches how many families a round searches at most
	// once it has found one (0: every family; a round that finds nothing searches every
	// family, so "converged" keeps its meaning).
	columns, pooled, searches int
	// quickNodes is a quick pricing search's budget in search nodes and quickItems how many
	// of a family's groups it considers (the most promising); fullNodes is a full-effort
	// search's budget, over every group (the full-effort round, and θ for the bound).
	quickNodes, quickItems, fullNodes int
	// tight starts the knapsack's searches from greedy fills and bounds them with the
	// Lagrangian surrogate (knapsack.Solver.Tight).
	tight bool
	// fullRound gives a round whose quick searches found nothing a round at full effort
	// before the LP is called converged, unless skip ends the LP there (unconverged).
	fullRound bool
	skip      skipRule
	// prove proves Farley's bound when the LP stops; bothDuals, when it stopped unconverged,
	// proves it at the final and at the averaged duals and keeps the better (else the average
	// alone).
	prove, bothDuals bool
	// tail stops the LP once its bound stops rising (proofTail, bound.go); the zero rule
	// never stops it.
	tail tailRule
	// refineAgain is the LP-relaxation bound over price above which a family is not checked
	// again for a search the column pool may skip (cannotImprove, colpool.go).
	refineAgain float64
	// deferLate defers the pricing searches the column pool may skip only once the budget is
	// spent, which is exact everywhere (colpool.go); the tables leave it off, a test sets it.
	deferLate bool
}

// skipRule says when a round whose quick searches found nothing ends the LP without its
// full-effort round (colGen.skipsFullRound).
type skipRule int

const (
	// neverSkip: the full-effort round always runs.
	neverSkip skipRule = iota
	// skipPastBudgetOrOverLimit: once the budget is spent, or where the LP's solution exceeds
	// a pool's limit (overLimit).
	skipPastBudgetOrOverLimit
	// skipPastBudgetIfRepriced: once the budget is spent, where the solution exceeds a limit
	// limitPrices prices (its bound is then proved again, priced, by limitLP).
	skipPastBudgetIfRepriced
)

// tailRule is a bound-only LP's stopping rule (proofTail): once the LP has spent 1/after of
// its budget, it stops when stalls checks in a row gained less than gain of the best bound,
// or when the best is within gap of the master's objective; a check proves the bound at the
// current duals too (not only at their average) in an LP of at most currentRows rows. The
// zero rule (after 0) never stops an LP.
type tailRule struct {
	after, stalls int
	gain, gap     float64
	currentRows   int
}

// lpRoleRow is the part of an LP's policy its role decides.
type lpRoleRow struct {
	role lpRole
	// minSmall and minLarge are its guaranteed pricing rounds on a small LP and a large one
	// (lpSizeRow).
	minSmall, minLarge int
	prove              bool
	tail               tailRule
	skip               skipRule
}

// lpSizeRow is the part of an LP's policy its number of rows decides.
type lpSizeRow struct {
	maxRows                     int // the most rows of an LP of this size
	columns, pooled, searches   int
	tight, fullRound, bothDuals bool
}

// lpPolicy returns the policy of a column generation of role with rows rows placing pods
// pods, at the input's effort (Options.Effort; 0 or less counts as 1); valuesOnly says the
// problem's bound is proved elsewhere (problem.noProof), so its LPs only value pods.
func lpPolicy(role lpRole, rows int, pods int64, effort float64, valuesOnly bool) lpConfig {
	r := lpRoles()[role]
	sizes := lpSizes()
	s := sizes[0]
	large := rows > s.maxRows
	if large {
		s = sizes[1]
	}
	c := lpConfig{
		minRounds: r.minSmall, prove: r.prove, tail: r.tail, skip: r.skip,
		columns: s.columns, pooled: s.pooled, searches: s.searches,
		tight: s.tight, fullRound: s.fullRound, bothDuals: s.bothDuals,
		// Every LP: quick searches of 1,000 nodes over a family's 16 most promising groups,
		// full ones of 4,000 over all — a quick search that cannot prune stops early and
		// proves nothing, a full one settles what the quick ones left open.
		quickNodes: 1000, quickItems: 16, fullNodes: 4000,
		maxRounds: 5000,
		// A family whose LP relaxation is 5% above its price is not checked again: the duals
		// move little from round to round, so such a check rarely spares a search, and costs
		// a Refine every round.
		refineAgain: 1.05,
	}
	if large {
		c.minRounds = r.minLarge
	}
	// The work budget: 1,000 units (about one item looked at by a bound or a search, a few
	// nanoseconds) per pod at stake, between 3 M and 20 M, times Effort. Where the LP decides
	// little (every group may share a node with every other) it converges long before;
	// where per-node caps abound it converges slowly and the budget decides, the local search
	// making up much of the rest. A problem whose LPs only value pods gets half the floor:
	// it buys time on small problems, and costs their values a little precision.
	floor := 3_000_000.0
	if valuesOnly {
		floor = 1_500_000
	}
	if effort <= 0 {
		effort = 1
	}
	c.budget = int(min(max(float64(pods)*1000, floor), 20_000_000) * effort)
	return c
}

// lpRoles is the table of what each role decides, indexed by role. Each row says what its
// choices buy and what they cost.
func lpRoles() [relaxedLP + 1]lpRoleRow {
	return [...]lpRoleRow{
		// valuesLP — values the pods and proves nothing. The plan's LPs' last rounds are
		// mostly searches that find nothing (the knapsack's integrality gap: a fractional
		// pattern above the price, no whole one), so they get fewer guaranteed rounds than the
		// relaxed problem's bound LP: that buys time, and costs pod values a little short of
		// converged, which moves the packers' plans both ways.
		{role: valuesLP, minSmall: 20, minLarge: 6, skip: neverSkip},
		// repricedLP — proves the plan's bound, as valuesLP rounds. Where a priced limit binds
		// and its budget is spent, its quick rounds that find nothing end it: the full-effort
		// rounds they skip would only tighten a bound the priced one (limitLP) replaces, at
		// the cost of a looser unpriced bound where the priced one is not higher.
		{role: repricedLP, minSmall: 20, minLarge: 6, prove: true, skip: skipPastBudgetIfRepriced},
		// limitLP — proves the priced bound from the repriced LP's columns, so it starts near
		// its optimum: fewer guaranteed rounds buy time, and cost a priced bound a little
		// lower than one that ran longer.
		{role: limitLP, minSmall: 15, minLarge: 6, prove: true, skip: neverSkip},
		// shareLP — values one pool's pods from the plan's columns. Past its budget, or over a
		// pool's limit (whose packers take only the part of its solution the limit allows),
		// the full-effort round would only call it converged: skipping it buys most of its
		// work back, and costs values from an LP stopped a round short.
		{role: shareLP, minSmall: 20, minLarge: 6, skip: skipPastBudgetOrOverLimit},
		// relaxedLP — the bound alone. More guaranteed rounds buy a higher bound on the
		// degenerate LPs that need them, at their cost in work. The tail rule then stops it
		// once the bound stops rising — three checks in a row gaining less than 0.1%, or the
		// bound within 0.5% of the LP's objective, never before a quarter of the budget —
		// which spares the late rounds of degenerate LPs (their bound barely moves) and costs
		// the little a stalled bound would still gain; a small LP, converging before a
		// quarter of its budget, runs as it would without the rule. The current duals are
		// proved beside the average only up to 16 rows: on larger LPs they swing from round
		// to round, and proving them costs more than it gains.
		{role: relaxedLP, minSmall: 25, minLarge: 10, prove: true, skip: neverSkip,
			tail: tailRule{after: 4, stalls: 3, gain: 1e-3, gap: 5e-3, currentRows: 16}},
	}
}

// lpSizes is the table of what an LP's size decides: small LPs, then large ones.
func lpSizes() [2]lpSizeRow {
	return [...]lpSizeRow{
		// Small LPs — cheap pivots, and searches pruned at the node's price: 8 columns a
		// round, every family searched, the Lagrangian searches and a full-effort round before
		// "converged", the bound proved at both sets of duals. That buys convergence within
		// the guaranteed rounds (with fewer columns or plain searches big nodes with many
		// copies per group stopped far from converged); it costs more work per round.
		{maxRows: 100, columns: 8, pooled: 4, searches: 0, tight: true, fullRound: true, bothDuals: true},
		// Large LPs — every pivot changes a dense basis of rows² numbers, and the LP is
		// degenerate (a group per pod when every pod differs) and far from converged within
		// any budget: 4 columns a round, at most 8 families searched once one improves,
		// plain searches, no full-effort round, the bound proved at the averaged duals (which
		// swing less than the final ones). That buys more rounds within the budget; it costs
		// columns a broader round would have found.
		{maxRows: math.MaxInt, columns: 4, pooled: 4, searches: 8},
	}
}
