package disruption

import (
	"context"
	"fmt"
	"slices"

	"github.com/nodeplan/nodeplan"
)

// MethodDrift replaces nodes whose NodeClaim no longer matches its pool or class.
const MethodDrift Methods = 1 << 3

// drift replaces drifted nodes (Node.Drift, the provider's verdict), as many per pass as budgets
// allow — Karpenter replaces one per pass, so rollouts on thousands of nodes take days —
// empty ones first, then the oldest, simulated in groups. Every pod must find a place. Drift
// of a node whose NodeClaim has a terminationGracePeriod is forceful (Karpenter's eventual
// class): do-not-disrupt pods and PDBs do not hold the command back, only its drain until the
// period runs out.
type drift struct{}

func (drift) name() string                      { return "drift" }
func (drift) kind() Methods                     { return MethodDrift }
func (drift) reason() nodeplan.DisruptionReason { return nodeplan.ReasonDrifted }
func (drift) stage() stage                      { return stageDisruptable }

func (drift) mode(s *nstate) Mode {
	if eventual(s) {
		return ModeForceful
	}
	return ModeGraceful
}

func (drift) take(_ *planner, s *nstate) (bool, *Blocked) {
	if s.in.Drift == "" {
		return false, nil
	}
	s.dest = false // pods moved onto a drifted node would move again
	return true, nil
}

func (m drift) plan(ctx context.Context, p *planner, nodes []*nstate) error {
	list := slices.Clone(nodes)
	slices.SortStableFunc(list, func(x, y *nstate) int {
		if (len(x.movable) == 0) != (len(y.movable) == 0) {
			if len(x.movable) == 0 {
				return -1
			}
			return 1
		}
		return x.in.Created.Compare(y.in.Created)
	})
	type admitted struct {
		s    *nstate
		need pdbNeed
	}
	// Eventual nodes are admitted first: their evictions do not wait for PDBs, so graceful
	// commands may count only on the allowance they leave.
	slices.SortStableFunc(list, func(x, y *nstate) int {
		switch ex, ey := eventual(x), eventual(y); {
		case ex && !ey:
			return -1
		case ey && !ex:
			return 1
		}
		return 0
	})
	var busy []admitted
	for _, s := range list {
		var need pdbNeed
		if eventual(s) {
			need = p.pdbs.needForced(s.movable)
		} else {
			if bl := p.podBlocker(s); bl != nil {
				s.blocked = bl
				continue
			}
			need, _ = p.pdbs.need(s.movable)
		}
		one := map[string]int{s.in.NodePool: 1}
		if bl := p.budgets.fits(one, m.reason()); bl != nil {
			s.blocked = bl
			continue
		}
		p.budgets.take(one)
		p.pdbs.take(need)
		if len(s.movable) == 0 {
			p.commit(p.command(m, []*nstate{s}, simulation{}), []*nstate{s})
			continue
		}
		busy = append(busy, admitted{s, need})
	}
	// Simulate in groups so a large rollout costs a bounded number of simulations; a group whose
	// pods do not all fit is split to find the node at fault.
	release := func(a admitted) {
		p.budgets.take(map[string]int{a.s.in.NodePool: -1})
		p.pdbs.take(negate(a.need))
	}
	share := max(1, (p.maxSims-p.sims)/2)
	var try func(group []admitted) error
	try = func(group []admitted) error {
		if !p.canSimulate() {
			for _, a := range group {
				release(a)
				a.s.blocked = &Blocked{Code: CodeNotEvaluated, Message: fmt.Sprintf(
					"the node drifted (%s) but the pass ran out of simulations before replacing it; a later pass will", a.s.in.Drift)}
			}
			return nil
		}
		set := make([]*nstate, len(group))
		for i, a := range group {
			set[i] = a.s
		}
		sim, err := p.simulate(ctx, set)
		if err != nil {
			return err
		}
		if len(sim.result.Unschedulable) > 0 || sim.broken != nil {
			if len(group) == 1 {
				release(group[0])
				if sim.broken != nil {
					group[0].s.blocked = sim.broken
					return nil
				}
				u := sim.result.Unschedulable[0]
				group[0].s.blocked = &Blocked{Code: CodePodsDoNotFit, Object: u.Pod, Message: fmt.Sprintf(
					"the node drifted (%s) but pod %s would have nowhere to go: %s", group[0].s.in.Drift, u.Pod, u.Message)}
				return nil
			}
			h := len(group) / 2
			if err := try(group[:h]); err != nil {
				return err
			}
			return try(group[h:])
		}
		p.commit(p.command(m, set, sim), set)
		return nil
	}
	// Eventual and graceful nodes go in separate groups, so a command is one or the other.
	var graceful, eventualOnes []admitted
	for _, a := range busy {
		if eventual(a.s) {
			eventualOnes = append(eventualOnes, a)
		} else {
			graceful = append(graceful, a)
		}
	}
	for _, part := range [][]admitted{graceful, eventualOnes} {
		for _, g := range chunkN(len(part), max(1, share*len(part)/max(len(busy), 1))) {
			if err := try(part[g[0]:g[1]]); err != nil {
				return err
			}
		}
	}
	return nil
}

// eventual reports whether drift of the node ignores pod blockers: Karpenter's rule for a
// NodeClaim with a terminationGracePeriod, which bounds the drain instead. Without the claim's
// (Node.TerminationGracePeriod nil), its pool's template's.
func eventual(s *nstate) bool {
	if t := s.in.TerminationGracePeriod; t != nil {
		return *t > 0
	}
	return s.pool.Template.TerminationGracePeriod > 0
}
