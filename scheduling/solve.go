package scheduling

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
)

// defaultImprovementRounds bounds the local search: each round re-sizes every node and tries
// merges among the least efficient ones; in practice it converges in two or three.
const defaultImprovementRounds = 8

// Solve places the pending pods of in: onto existing nodes and in-flight claims where they fit,
// then onto new NodeClaims chosen for cost, and explains every pod it cannot place.
//
// It returns an error only for invalid input (see [Input.Validate]) or when ctx is cancelled
// (ctx.Err(), wrapped); an unplaceable pod is a result, not an error. Solve is safe for
// concurrent use: it shares nothing between calls and does not modify in.
//
// In order: Validate checks in; solveWithPreferences (preferences.go) decides which soft
// constraints to honour, by running solveOnce below with them ignored (the baseline, and on
// small inputs with existing room once more, filling that room largest pods first), then with
// them as requirements, dropping one kind at a time, until a plan places as many pods at a
// cost within Options.PreferenceMargin of the baseline's; it returns that plan or the baseline.
// Where pods are left for reasons of their own beside pods left for a spread or an affinity,
// withoutUnbindable (unbindable.go) solves once more without the first, which never bind.
func Solve(ctx context.Context, in Input) (Result, error) {
	if err := in.Validate(); err != nil {
		return Result{}, err
	}
	res, err := solveWithPreferences(ctx, &in)
	if err != nil {
		return res, err
	}
	return withoutUnbindable(ctx, &in, res)
}

// solveOnce runs one solve with the given preferences treated as requirements. These are its
// steps, in order, each one function: what it reads → what it writes. The model p (problem) is
// built by step 1 and read by the rest. The packing state st (packState: the pods each group has
// left, the room left on and pods placed on existing nodes and in-flight claims, the planned
// claims, each pool's usage against its limits, the pods set aside) is created after it and
// handed to each step that reads or writes it, as its first argument.
//
//  1. newProblem: in, prefs → the model p: pod groups (split, pinned and capped for topology),
//     pools, shapes, existing room (bins), which group fits which shape.
//  2. startRelaxedBound: in, prefs, p.base → relaxed, the bound on the problem without
//     topology (topologyFreeBound), proved on the other core when topology split or pinned
//     groups.
//  3. valuePods: the model, counts (each group's pending pods) → lb, the bound where it holds
//     on this problem; global, the column generation's patterns; each group's value (the LP's
//     duals), which orders every later choice.
//  4. newPackState: the model → st, every pending pod remaining, every bin with its room,
//     every pool's usage that of its existing nodes and in-flight claims; then
//     placeOnBins(st): values, p.bins, st.remaining → pods on existing nodes and in-flight
//     claims (st.bins, st.remaining, st.singlePlaced).
//  5. packNewNodes(st, …), pool by pool in weight order: global, counts, st.remaining,
//     st.singlePlaced, the pool's st.usage → st.claims, st.remaining, st.dropped,
//     st.singlePlaced, the pool's st.usage. It rounds the LP's patterns, packs the rest greedily
//     and improves by local search (racing a first-fit-decreasing packing on small plain pools).
//  6. placeWith(st): st.claims, st.bins → the groups that must share a node with another
//     group's pods placed on those nodes (st.claims, st.bins, st.remaining);
//     returnDropped(st): st.dropped → st.remaining.
//  7. enforceTopology(st): st's placements, p.spreadFams → pods taken back (st.remaining,
//     st.claims, st.bins, st.usage; the reason in g.blocked)
//     whose spread or affinity partners could not be placed, or whose spreads could wait on
//     each other forever (spreadwait.go).
//  8. rejectMinValues(st): st.claims, st.usage → requests, each claim's launch
//     request; a claim whose options cannot meet its pool's minValues split into claims that
//     can (minvalues.go), the pods none can taken back (st.claims, st.remaining,
//     st.minValuesHit).
//  9. result(st, requests): st (read only) → the Result, with every pod left explained.
//  10. finalBound: relaxed, lb, counts, st.remaining, the unplaced pods → the lower bound for
//     the pods the plan places.
func solveOnce(ctx context.Context, in *Input, prefs preferences) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("scheduling: %w", err)
	}
	p, err := newProblem(in, prefs)
	if err != nil {
		return Result{}, err
	}
	relaxed := p.startRelaxedBound(ctx, in, prefs)
	// Every return waits for it: Solve leaves no goroutine behind.
	defer relaxed.wait()
	counts := p.pendingCounts()
	lb, global := p.valuePods(counts)
	st := p.newPackState()
	p.placeOnBins(st)
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("scheduling: %w", err)
	}
	for _, pl := range p.pools {
		p.packNewNodes(st, pl, global, counts)
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("scheduling: %w", err)
		}
	}
	p.placeWith(st)
	returnDropped(st)
	p.enforceTopology(st)
	requests := p.rejectMinValues(st)
	res := p.result(st, requests)
	if res.LowerBound, err = p.finalBound(ctx, relaxed, lb, counts, st.remaining, res.Unschedulable); err != nil {
		return Result{}, err
	}
	return res, nil
}

// pendingCounts returns how many pending pods each group has.
func (p *problem) pendingCounts() []int64 {
	counts := make([]int64, len(p.groups))
	for _, g := range p.groups {
		counts[g.id] = int64(len(g.pods))
	}
	return counts
}

// valuePods values one pod of each group for the packers, and proves the lower bound on this
// problem unless no proof is wanted or it is proved on the relaxed problem instead.
func (p *problem) valuePods(counts []int64) (float64, cgResult) {
	var lb float64
	var global cgResult
	if p.in.Options.SkipLowerBound {
		// No proof wanted: value pods cheaply for filling existing room, and run the column
		// generation only for what is left for new nodes (in disruption simulations, usually
		// nothing).
		global = cgResult{values: p.pureValues()}
	} else {
		lb, global = p.lowerBound(counts)
	}
	p.setValues(global.values)
	return lb, global
}

// returnDropped gives back the pods packers took out of packing for good (see drop): they
// stay pending.
func returnDropped(st *packState) {
	for g, n := range st.dropped {
		st.remaining[g] += n
	}
}

// relaxedBound is the lower bound proved on the relaxed problem (topologyFreeBound), started
// while the plan is packed, in an errgroup tied to the solve's context: cancelling the solve
// stops the proof at its next check, and every return of solveOnce waits for it, so Solve
// leaves no goroutine behind. Its zero value stands for no such proof.
type relaxedBound struct {
	g      *errgroup.Group // nil: no proof started
	result boundResult
	waited bool
}

type boundResult struct {
	lb  float64
	err error
}

// startRelaxedBound starts the proof on the relaxed problem where this one is relaxable
// (applyTopology split, pinned or capped groups), and spares this problem its own proof. The
// proof needs only the pods and which of them the plan places; usually it places all, so it
// starts now, on the other core, and is redone only if the plan leaves pods out. The two
// problems share nothing they write: the relaxed one reads this one's build facts, which
// nothing writes once this build has returned.
func (p *problem) startRelaxedBound(ctx context.Context, in *Input, prefs preferences) *relaxedBound {
	p.noProof = p.relaxable
	r := &relaxedBound{}
	if !p.relaxable || in.Options.SkipLowerBound {
		return r
	}
	base, facts := p.base, p.facts
	r.g, ctx = errgroup.WithContext(ctx)
	r.g.Go(func() error {
		lb, err := topologyFreeBound(ctx, in, prefs, base, facts, nil)
		r.result = boundResult{lb, err}
		return err
	})
	return r
}

// wait returns the proof's result, waiting for it once; it may be called any number of times.
func (r *relaxedBound) wait() boundResult {
	if !r.waited && r.g != nil {
		_ = r.g.Wait() // the error is in r.result
	}
	r.waited = true
	return r.result
}

// finalBound is the lower bound reported for the plan: it covers the pods the plan places, so
// where some could not be placed (left, per group; unplaced, per pod) it is proved again for
// the placed ones alone. counts is the pending pods per group; it is spent.
func (p *problem) finalBound(ctx context.Context, relaxed *relaxedBound, lb float64, counts, left []int64, unplaced []Unschedulable) (float64, error) {
	switch {
	case p.in.Options.SkipLowerBound:
		return lb, nil
	case p.relaxable:
		r := relaxed.wait()
		if r.err == nil && len(unplaced) > 0 {
			return topologyFreeBound(ctx, p.in, p.prefs, p.base, p.facts, unplaced)
		}
		return r.lb, r.err
	}
	some := false
	for _, g := range p.groups {
		if left[g.id] > 0 {
			some = true
			counts[g.id] -= left[g.id]
		}
	}
	if some {
		lb, _ = p.lowerBound(counts)
	}
	return lb, nil
}

// topologyFreeBound proves the lower bound for the pods not in unplaced on the problem without the
// constraints the solver meets by splitting groups over zones, pinning them to domains or
// capping them per node by a hostname spread. Proved on the split problem, the bound would
// hold only for plans that spread the pods the same way (three pods with maxSkew 2 over three
// zones need two zones, not three), and it would report a plan optimal that is not. Left out,
// those constraints can only lower the bound: it is valid for every plan.
//
// facts are the plan's build's (problem.facts): the relaxed problem takes what depends on the
// input alone from there rather than working it out again.
func topologyFreeBound(ctx context.Context, in *Input, prefs preferences, base []*group, facts *buildFacts, unplaced []Unschedulable) (float64, error) {
	prefs.relaxTopology = true
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("scheduling: %w", err)
	}
	rp, err := newProblemGrouped(in, prefs, base, facts)
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("scheduling: %w", err)
	}
	out := make(map[string]bool, len(unplaced))
	for _, u := range unplaced {
		out[u.Pod] = true
	}
	counts := make([]int64, len(rp.groups))
	for _, g := range rp.groups {
		for _, k := range g.keys {
			if !out[k] {
				counts[g.id]++
			}
		}
	}
	lb, _ := rp.lowerBound(counts)
	return lb, nil
}

func sum(xs []int64) int64 {
	t := int64(0)
	for _, x := range xs {
		t += x
	}
	return t
}

// setValues gives every group its pod value (a tiny one by size when the bound gives none, so
// the greedy still orders it sensibly) and re-sorts the fit lists by it.
func (p *problem) setValues(values []float64) {
	for _, g := range p.groups {
		g.value = values[g.id]
		if g.value <= 0 {
			g.value = 1e-12 * float64(g.req[dimCPU]+g.req[dimMemory]/(1<<20)+1)
		}
	}
	p.orderFits()
}
