package disruption

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// forcefulBatches is how many simulations interruption and expiration each spend at most: their
// nodes are simulated in that many groups, whatever their number.
const forcefulBatches = 4

// interruption drains interrupted nodes at once, outside budgets, with replacements launched
// for their pods in the same command.
func (p *planner) interruption(ctx context.Context, b *buckets) error {
	list := slices.Clone(b.interrupted)
	slices.SortStableFunc(list, func(x, y *nstate) int {
		return x.in.Interruption.Deadline.Compare(y.in.Interruption.Deadline)
	})
	return p.forceful(ctx, list, nodeplan.ReasonInterrupted, ModeImmediate)
}

// expiration replaces expired nodes: at once, like Karpenter, or within budgets when
// Options.ExpirationHonorsBudgets is set. Unlike Karpenter it pre-launches replacements.
func (p *planner) expiration(ctx context.Context, b *buckets) error {
	list := slices.Clone(b.expired)
	slices.SortStableFunc(list, func(x, y *nstate) int { return x.in.Created.Compare(y.in.Created) })
	if p.opts.ExpirationHonorsBudgets {
		var ok []*nstate
		for _, s := range list {
			if bl := p.budgets.fits(map[string]int{s.in.NodePool: 1}, nodeplan.ReasonExpired); bl != nil {
				s.blocked = bl
				s.dest = false
				continue
			}
			p.budgets.take(map[string]int{s.in.NodePool: 1})
			ok = append(ok, s)
		}
		return p.forcefulAdmitted(ctx, ok, nodeplan.ReasonExpired, ModeForceful)
	}
	return p.forceful(ctx, list, nodeplan.ReasonExpired, ModeForceful)
}

func (p *planner) forceful(ctx context.Context, list []*nstate, reason nodeplan.DisruptionReason, mode Mode) error {
	for _, s := range list {
		p.budgets.take(map[string]int{s.in.NodePool: 1})
	}
	return p.forcefulAdmitted(ctx, list, reason, mode)
}

// forcefulAdmitted issues commands for nodes whose budget is already taken. Their evictions
// use PDB allowances first, so graceful moves get only what is left.
func (p *planner) forcefulAdmitted(ctx context.Context, list []*nstate, reason nodeplan.DisruptionReason, mode Mode) error {
	for _, s := range list {
		s.dest = false
	}
	for _, batch := range chunk(list, forcefulBatches) {
		// A forceful command goes ahead even when its moves break an earlier one's: its
		// simulation's result is then made around the earlier moves as they are.
		sim, err := p.simulate(ctx, batch)
		if err != nil {
			return err
		}
		p.pdbs.take(p.pdbs.needForced(podsOf(batch)))
		c := p.command(reason, batch, sim)
		c.Mode = mode
		p.commit(c, batch)
	}
	return nil
}

// emptiness deletes empty nodes, most expensive first, as far as budgets allow.
func (p *planner) emptiness(ctx context.Context, b *buckets) error {
	list := slices.Clone(b.empty)
	slices.SortStableFunc(list, func(x, y *nstate) int { return cmp.Compare(y.price, x.price) })
	for _, s := range list {
		if s.gone {
			continue
		}
		if s.receives {
			s.blocked = p.receivesBlocker()
			continue
		}
		one := map[string]int{s.in.NodePool: 1}
		if bl := p.budgets.fits(one, nodeplan.ReasonEmpty); bl != nil {
			s.blocked = bl
			continue
		}
		p.budgets.take(one)
		p.commit(p.command(nodeplan.ReasonEmpty, []*nstate{s}, simulation{}), []*nstate{s})
	}
	return nil
}

// drift replaces drifted nodes, as many per pass as budgets allow (Karpenter does one): empty
// ones first, then the oldest. Pods must all find a place; on pools with a
// terminationGracePeriod do-not-disrupt pods and PDBs do not hold the command back.
func (p *planner) drift(ctx context.Context, b *buckets) error {
	list := slices.Clone(b.drifted)
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
		if bl := p.budgets.fits(one, nodeplan.ReasonDrifted); bl != nil {
			s.blocked = bl
			continue
		}
		p.budgets.take(one)
		p.pdbs.take(need)
		if len(s.movable) == 0 {
			c := p.command(nodeplan.ReasonDrifted, []*nstate{s}, simulation{})
			c.Mode = driftMode(s)
			p.commit(c, []*nstate{s})
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
		c := p.command(nodeplan.ReasonDrifted, set, sim)
		c.Mode = driftMode(set[0])
		p.commit(c, set)
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

// command builds the command that removes set, given what the simulation found.
func (p *planner) command(reason nodeplan.DisruptionReason, set []*nstate, sim simulation) Command {
	c := Command{Action: ActionDelete, Reason: reason, Mode: ModeGraceful}
	pools := map[string]int{}
	for _, s := range set {
		c.Nodes = append(c.Nodes, s.name)
		pools[s.in.NodePool]++
		c.Price += s.price
		c.Disruption += s.disruption
		for _, pod := range s.movable {
			c.Pods = append(c.Pods, nodeplan.PodKey(pod))
		}
	}
	sortStrings(c.Nodes)
	sortStrings(c.Pods)
	c.NodePools = sortedPools(pools)
	c.OneAtATime = p.pdbs.oneAtATime(set)
	c.Moves = sim.result.Existing
	c.Replacements = p.nameClaims(c.Nodes[0], p.prices.band(sim.result.NodeClaims))
	for _, u := range sim.result.Unschedulable {
		c.Unplaced = append(c.Unplaced, u.Pod)
	}
	if !sim.done && len(c.Pods) > 0 {
		c.Unplaced = slices.Clone(c.Pods) // never simulated
	}
	if len(c.Replacements) > 0 {
		c.Action = ActionReplace
	}
	c.ReplacementPrice = p.prices.judgedPrice(c.Replacements)
	c.Savings = c.Price - c.ReplacementPrice
	return c
}

// nameClaims gives replacement claims names unique within the plan: the first node replaced,
// "-replacement-", and the claim's index.
func (p *planner) nameClaims(first string, claims []scheduling.NewNodeClaim) []scheduling.NewNodeClaim {
	if len(claims) == 0 {
		return nil
	}
	out := slices.Clone(claims)
	for i := range out {
		out[i].Name = fmt.Sprintf("%s-replacement-%d", first, i)
	}
	return out
}

func podsOf(set []*nstate) []*corev1.Pod {
	var out []*corev1.Pod
	for _, s := range set {
		out = append(out, s.movable...)
	}
	return out
}

// chunk splits list into at most n groups of near-equal size, in order.
func chunk(list []*nstate, n int) [][]*nstate {
	var out [][]*nstate
	for _, g := range chunkN(len(list), n) {
		out = append(out, list[g[0]:g[1]])
	}
	return out
}

// chunkN splits [0, total) into at most n contiguous ranges of near-equal size.
func chunkN(total, n int) [][2]int {
	if total == 0 {
		return nil
	}
	n = min(max(n, 1), total)
	var out [][2]int
	for i := range n {
		out = append(out, [2]int{i * total / n, (i + 1) * total / n})
	}
	return out
}

func negate(n pdbNeed) pdbNeed {
	out := make(pdbNeed, len(n))
	for k, v := range n {
		out[k] = -v
	}
	return out
}
