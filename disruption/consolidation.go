package disruption

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/nodeplan/nodeplan"
)

// MethodConsolidation deletes or replaces nodes whose pods fit elsewhere for less.
const MethodConsolidation Methods = 1 << 4

// consolidation looks for the moves that save the most per unit of disruption, on pools that
// consolidate WhenEmptyOrUnderutilized: deletes where the pods fit elsewhere, replacements (M→N)
// where new nodes cost less. It screens every candidate cheaply, simulates multi-node sets
// (consolidation_multi.go) and single nodes (consolidation_single.go) within the simulation
// bound, then takes the best moves that fit budgets and PDBs together.
type consolidation struct{}

func (consolidation) name() string                      { return "consolidation" }
func (consolidation) kind() Methods                     { return MethodConsolidation }
func (consolidation) reason() nodeplan.DisruptionReason { return nodeplan.ReasonUnderutilized }
func (consolidation) stage() stage                      { return stageSettled }
func (consolidation) mode(*nstate) Mode                 { return ModeGraceful }

// take has every settled node left: one with pods, on a pool that consolidates more than
// empty nodes, whose pods let it go.
func (consolidation) take(p *planner, s *nstate) (bool, *Blocked) {
	if s.pool.Disruption.Policy() == nodeplan.ConsolidateWhenEmpty {
		return false, &Blocked{Code: CodeWhenEmpty, Object: s.pool.Name, Message: fmt.Sprintf(
			"NodePool %s consolidates only empty nodes (WhenEmpty) and the node runs %d pods", s.pool.Name, len(s.movable))}
	}
	if bl := p.podBlocker(s); bl != nil {
		return false, bl
	}
	return true, nil
}

func (m consolidation) plan(ctx context.Context, p *planner, nodes []*nstate) error {
	var cands []*nstate
	for _, s := range nodes {
		if s.gone {
			continue
		}
		if p.budgets.left(s.in.NodePool, m.reason()) == 0 {
			s.blocked = p.budgets.blocked(s.in.NodePool, m.reason(), 1)
			continue
		}
		if s.receives {
			s.blocked = receivesBlocker()
			continue
		}
		cands = append(cands, s)
	}
	slices.SortStableFunc(cands, func(x, y *nstate) int {
		if c := cmp.Compare(y.price/y.disruption, x.price/x.disruption); c != 0 {
			return c
		}
		return cmp.Compare(x.name, y.name)
	})

	// Screen: a delete needs the pods to fit in the room left on all other nodes together; a
	// replacement needs the least any new nodes for the pods could cost to beat the threshold.
	var total vec
	most := p.prices.largest // the most of each resource one pod could find on a node
	for _, s := range p.nodes {
		if s.dest && !s.gone {
			f := s.free.zeroFloor()
			total = total.add(f)
			most = vec{max(most.cpu, f.cpu), max(most.mem, f.mem), max(most.pods, f.pods)}
		}
	}
	thr := p.opts.savingsThreshold()
	var viable []*nstate
	for _, s := range cands {
		room := total
		if s.dest {
			room = room.sub(s.free.zeroFloor())
		}
		if s.req.leq(room) {
			viable = append(viable, s)
			continue
		}
		if bl := m.fitsNowhere(p, s, most); bl != nil {
			s.blocked = bl
			continue
		}
		lb := p.prices.lowerBound(s.req)
		if s.price > 0 && lb < s.price*(1-thr) && lb < s.price {
			viable = append(viable, s)
			continue
		}
		msg := fmt.Sprintf("its pods (%s) exceed the free room of all other nodes together, and new nodes for them would cost at least $%.4f/h", s.req, lb)
		if s.price > 0 {
			msg += fmt.Sprintf(", not %.0f%% less than the node's $%.4f/h", 100*thr, s.price)
		} else {
			msg += "; the node's own price is unknown"
		}
		s.blocked = &Blocked{Code: CodeNotCheaper, Message: msg}
	}

	var opts []*option
	best, err := m.multiNode(ctx, p, viable)
	if err != nil {
		return err
	}
	if best != nil {
		opts = append(opts, best)
	}
	singles, err := m.singles(ctx, p, viable)
	if err != nil {
		return err
	}
	opts = append(opts, singles...)

	slices.SortStableFunc(opts, func(x, y *option) int {
		switch {
		case better(x, y):
			return -1
		case better(y, x):
			return 1
		}
		return cmp.Compare(x.cmd.Nodes[0], y.cmd.Nodes[0])
	})
	for _, o := range opts {
		if err := m.accept(ctx, p, o); err != nil {
			return err
		}
	}
	return nil
}

// option is a feasible consolidation move found by simulation.
type option struct {
	set      []*nstate
	cmd      Command
	need     pdbNeed
	version  int  // planner.version when simulated
	interPod bool // its pods have inter-pod terms, so any earlier move may change its outcome
	score    float64
}

// fitsNowhere returns a blocker naming a pod of s that asks more cpu or memory than most, the
// most any node has free or any instance type offers — such as a request of cpu 1e16 — or nil.
func (m consolidation) fitsNowhere(p *planner, s *nstate, most vec) *Blocked {
	for _, pod := range s.movable {
		r := toVec(p.podRequests(pod))
		if r.cpu > most.cpu || r.mem > most.mem {
			k := nodeplan.PodKey(pod)
			return &Blocked{Code: CodePodsDoNotFit, Object: k, Message: fmt.Sprintf(
				"pod %s asks %.3g cpu and %.3gGiB memory, more than any other node has free or any instance type offers (%.3g cpu, %.3gGiB)",
				k, r.cpuCores(), r.memGiB(), most.cpuCores(), most.memGiB())}
		}
	}
	return nil
}

// evaluate simulates removing set and returns the move, or why there is none.
func (m consolidation) evaluate(ctx context.Context, p *planner, set []*nstate) (*option, *Blocked, error) {
	sim, err := p.simulate(ctx, set)
	if err != nil {
		return nil, nil, err
	}
	if sim.broken != nil {
		return nil, sim.broken, nil
	}
	if len(sim.result.Unschedulable) > 0 {
		u := sim.result.Unschedulable[0]
		return nil, &Blocked{Code: CodePodsDoNotFit, Object: u.Pod, Message: fmt.Sprintf(
			"pod %s would have nowhere to go: %s", u.Pod, u.Message)}, nil
	}
	c := p.command(m, set, sim)
	if len(sim.result.NodeClaims) > 0 {
		claims, judged, bl := p.prices.judgeReplacement(set, c.Price, sim.result.NodeClaims)
		if bl != nil {
			return nil, bl, nil
		}
		c.Replacements = p.nameClaims(c.Nodes[0], claims)
		c.ReplacementPrice = judged
		c.Savings = c.Price - judged
	}
	need, bl := p.pdbs.needNodes(set)
	if bl != nil {
		return nil, bl, nil
	}
	o := &option{set: set, cmd: c, need: need, version: p.version, score: c.Savings / c.Disruption}
	for _, pod := range podsOf(set) {
		if interPod(pod) {
			o.interPod = true
			break
		}
	}
	return o, nil, nil
}

// accept commits o if it still fits the budgets, the PDBs and — re-simulated if an earlier move
// changed its destinations — the cluster.
func (m consolidation) accept(ctx context.Context, p *planner, o *option) error {
	single := len(o.set) == 1
	blockAll := func(bl *Blocked) {
		if single {
			o.set[0].blocked = bl
		}
	}
	var set []*nstate
	for _, s := range o.set {
		switch {
		case s.gone:
		case s.receives:
			if single {
				s.blocked = receivesBlocker()
			}
		default:
			set = append(set, s)
		}
	}
	if len(set) == 0 {
		return nil
	}
	if len(set) != len(o.set) {
		// Part of a multi-node set went to a better move; what is left is a different move.
		if len(set) < 2 || !p.canSimulate() {
			return nil
		}
		no, bl, err := m.evaluate(ctx, p, set)
		if err != nil || bl != nil {
			return err
		}
		o = no
	}
	count := map[string]int{}
	for _, s := range set {
		count[s.in.NodePool]++
	}
	if bl := p.budgets.fits(count, m.reason()); bl != nil {
		blockAll(bl)
		return nil
	}
	if bl := p.pdbs.check(o.need); bl != nil {
		blockAll(bl)
		return nil
	}
	if m.stale(p, o) {
		if !p.canSimulate() {
			blockAll(&Blocked{Code: CodeOutranked, Message: fmt.Sprintf(
				"a move chosen earlier in this pass changed where its pods would go, and the pass reached its limit of %d simulations before re-checking it; a later pass will", p.maxSims)})
			return nil
		}
		no, bl, err := m.evaluate(ctx, p, set)
		if err != nil {
			return err
		}
		if bl != nil {
			blockAll(bl)
			return nil
		}
		o = no
		if bl := p.pdbs.check(o.need); bl != nil {
			blockAll(bl)
			return nil
		}
	}
	p.budgets.take(count)
	p.pdbs.take(o.need)
	p.commit(o.cmd, set)
	return nil
}

// stale reports whether a move simulated earlier in the pass may no longer hold: a destination
// it counted on changed since, or inter-pod terms make it depend on every earlier move.
func (m consolidation) stale(p *planner, o *option) bool {
	if o.version == p.version {
		return false
	}
	if o.interPod || p.interPodMvd {
		return true
	}
	for _, pl := range o.cmd.Moves {
		d := p.byName[pl.Name]
		if d == nil || d.gone || d.changedAt > o.version {
			return true
		}
	}
	return false
}

func receivesBlocker() *Blocked {
	return &Blocked{Code: CodeReceivesPods, Message: "pods of another node disrupted in this pass are moving onto this node, so it stays this pass"}
}

// roundRobin interleaves the ranked candidates pool by pool, so one large pool cannot use up
// the simulations before another pool's nodes are looked at.
func roundRobin(ranked []*nstate) []*nstate {
	byPool := map[string][]*nstate{}
	for _, s := range ranked {
		byPool[s.in.NodePool] = append(byPool[s.in.NodePool], s)
	}
	pools := sortedMapKeys(byPool)
	out := make([]*nstate, 0, len(ranked))
	for i := 0; len(out) < len(ranked); i++ {
		for _, pool := range pools {
			if i < len(byPool[pool]) {
				out = append(out, byPool[pool][i])
			}
		}
	}
	return out
}

// better reports whether x saves more per unit of disruption than y, or as much and more in all.
func better(x, y *option) bool {
	if c := compareFloat(x.score, y.score); c != 0 {
		return c > 0
	}
	return compareFloat(x.cmd.Savings, y.cmd.Savings) > 0
}

// compareFloat compares a and b, treating values within a relative 1e-9 as equal so that sums
// taken in different orders rank alike.
func compareFloat(a, b float64) int {
	if math.Abs(a-b) <= 1e-9*max(math.Abs(a), math.Abs(b)) {
		return 0
	}
	return cmp.Compare(a, b)
}
