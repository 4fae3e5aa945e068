package scheduling

import (
	"fmt"
	"math"
	"slices"

	"github.com/nodeplan/nodeplan/internal/topology"
)

// Spread carriers waiting on each other.
//
// The final counts holding every carrier within maxSkew (spread.go) is not enough when a
// carrier counts for another spread. kube-scheduler refuses a carrier in domain d while d's
// count (the carrier included) exceeds the minimum by more than maxSkew; d's count never
// exceeds its final one, so the minimum must be below its final value: the least filled domain
// holds pending pods the selector matches. There this spread refuses none of them (the skew
// is at most 1 in the least filled domain), but another spread they carry may — and that one
// may wait, in turn, for the first carrier. Two zone spreads, over my-label=f and my-label=g,
// whose carriers are labelled g and f: each carrier is within maxSkew only once the other is
// bound, and kube-scheduler, taking pods in its own order, may bind neither (seed 108 of the
// differential test).
//
// So after packing the solver looks for the pairs (group, family) that may refuse forever:
// the group's final count in its domain exceeds by more than maxSkew the smallest, over the
// other domains, of the final count less the pods there of groups that another family may
// refuse forever. The condition only gets easier as the set of pairs grows, so the largest
// set is found by starting from every pair and dropping those that fail it until none do.
// That set holds every pair that can really wait forever, but alone it is far too cautious
// where many spreads share pods (Karpenter's drawn mix: 117 of 1,000 pods left out), because
// it counts the set's pods as pending in other domains and as bound in the carrier's own. So it
// is then settled: a pair stays only while it is refused with every group of the set pending at
// once, own domain included — the state a deadlock is in. Settling from the whole set can miss
// a deadlock: when the same cycle can form turned two ways (zone a's carriers waiting for pods
// in zone c, or zone c's for pods in zone a), both ways' pods are pending together and nothing
// is refused (input 349 of TestSpreadCarriersWaitingOnEachOtherBindInAnyOrder). So when nothing
// is left, the search and the settling run again once per family and domain of a pair in the
// set, with the pods that family counts there (and does not carry) taken as bound: that picks
// one way of each cycle (seededWaits). Each set found is a state in which every pod left is
// refused; whether some order of binding reaches it is not checked, so the rule may refuse a
// plan that binds in every order (none seen on the generator's inputs or the suite). While any
// pair is left, one pod the family counts in that pair's domain is taken back (lowering the
// count the carrier sees), and the checks run again. Package check judges plans by the same
// rule, over pods.

// waitPair is a group carrying f, pinned to domain.
type waitPair struct {
	g      *group
	f      *spreadFam
	domain string
}

// famCounts returns f's counts per domain as packed: lo the pods surely counted, hi with those
// that may be.
func (p *problem) famCounts(st *packState, f *spreadFam) (lo, hi map[string]int) {
	lo, hi = map[string]int{}, map[string]int{}
	for _, v := range f.Domains {
		lo[v], hi[v] = f.Base[v], f.Base[v]
	}
	for _, part := range f.parts {
		n := st.placed(part.g)
		switch part.count {
		case countSure:
			lo[part.domain] += n
			hi[part.domain] += n
		case countMaybe:
			hi[part.domain] += n
		}
	}
	return lo, hi
}

// spreadWaits returns the pairs left by the search above, in family and part order.
func (p *problem) spreadWaits(st *packState) []waitPair {
	m := p.newWaitModel(st)
	live := slices.Repeat([]bool{true}, len(m.pairs))
	m.mayWaitFixpoint(live)
	found := slices.Clone(live)
	m.settleWaits(found)
	if !slices.Contains(found, true) {
		found = m.seededWaits(live)
	}
	var out []waitPair
	for i, w := range m.pairs {
		if found[i] {
			out = append(out, w)
		}
	}
	return out
}

// waitModel is the packed plan as the search reads it, built once per search. The search runs
// its rounds many times (again for each seed), and each round needs every family's counts less
// the pods of the groups some pairs hold back; with domains and groups as indexes and the placed
// pods read once, a round is one pass over the parts, not counts rebuilt for every pair.
type waitModel struct {
	pairs []waitPair
	at    []waitAt
	fams  []waitFam
	// groups is how many groups have a part, numbered in order of first appearance.
	groups int
}

// waitAt is where a pair sits in the model: its family, domain and group indexes, and self 1
// when its group counts for the family in its own domain (pending, it adds itself there).
type waitAt struct {
	fam, domain, g, self int
}

// waitFam is a family in the model: domains [0, counted) are f.Domains in order, any after them
// are named only by parts; lo and hi are its counts as packed (famCounts).
type waitFam struct {
	f       *spreadFam
	counted int
	lo, hi  []int
	parts   []waitPart
}

// waitPart is a spreadPart with its group's placed pods.
type waitPart struct {
	g, domain, n int
	count        countKind
	carrier      bool
}

// newWaitModel indexes p's families and parts as st placed them, and lists the pairs: each
// part of a carrier with pods placed, in family and part order.
func (p *problem) newWaitModel(st *packState) *waitModel {
	m := &waitModel{fams: make([]waitFam, len(p.spreadFams))}
	local := map[*group]int{}
	for fi, f := range p.spreadFams {
		domain := make(map[string]int, len(f.Domains))
		for _, v := range f.Domains {
			domain[v] = len(domain)
		}
		wf := &m.fams[fi]
		wf.f, wf.counted = f, len(f.Domains)
		for _, part := range f.parts {
			if _, ok := domain[part.domain]; !ok {
				domain[part.domain] = len(domain)
			}
			if _, ok := local[part.g]; !ok {
				local[part.g] = len(local)
			}
			wf.parts = append(wf.parts, waitPart{local[part.g], domain[part.domain], st.placed(part.g), part.count, part.carrier})
		}
		wf.lo, wf.hi = make([]int, len(domain)), make([]int, len(domain))
		for i, v := range f.Domains {
			wf.lo[i], wf.hi[i] = f.Base[v], f.Base[v]
		}
		wf.count(wf.lo, wf.hi, nil, 1)
		m.addPairs(fi)
	}
	m.groups = len(local)
	return m
}

// addPairs lists family fi's pairs.
func (m *waitModel) addPairs(fi int) {
	wf := &m.fams[fi]
	counts := map[[2]int]bool{}
	for _, part := range wf.parts {
		if part.count != countNone {
			counts[[2]int{part.g, part.domain}] = true
		}
	}
	for i, part := range wf.parts {
		if !part.carrier || part.n == 0 {
			continue
		}
		self := 0
		if counts[[2]int{part.g, part.domain}] {
			self = 1
		}
		m.pairs = append(m.pairs, waitPair{wf.f.parts[i].g, wf.f, wf.f.parts[i].domain})
		m.at = append(m.at, waitAt{fi, part.domain, part.g, self})
	}
}

// count adds sign times the pods of f's parts (only those of the groups in only, when set) to
// lo (surely counted) and hi (surely or maybe).
func (wf *waitFam) count(lo, hi []int, only []bool, sign int) {
	for _, part := range wf.parts {
		if only != nil && !only[part.g] {
			continue
		}
		switch part.count {
		case countSure:
			lo[part.domain] += sign * part.n
			hi[part.domain] += sign * part.n
		case countMaybe:
			hi[part.domain] += sign * part.n
		}
	}
}

// mayWaitFixpoint drops from live the pairs that cannot wait while only the pairs still live
// hold pods back, until none drops. Dropping a pair only makes the others' condition harder,
// so every order of dropping ends at the same set.
func (m *waitModel) mayWaitFixpoint(live []bool) {
	for {
		failing := m.cannotWait(live)
		if len(failing) == 0 {
			return
		}
		for _, i := range failing {
			live[i] = false
		}
	}
}

// cannotWait returns the pairs of live that cannot wait while the pairs of live hold pods back.
func (m *waitModel) cannotWait(live []bool) []int {
	// fam[g] is a family g has a live pair with, -1 for none; many[g] that it has two.
	fam, many := make([]int, m.groups), make([]bool, m.groups)
	for g := range fam {
		fam[g] = -1
	}
	for i, a := range m.at {
		if !live[i] {
			continue
		}
		if fam[a.g] < 0 {
			fam[a.g] = a.fam
		} else if fam[a.g] != a.fam {
			many[a.g] = true
		}
	}
	free := m.freeCounts(func(g, f int) bool { return many[g] || (fam[g] >= 0 && fam[g] != f) })
	var failing []int
	for i, a := range m.at {
		if live[i] && !m.fams[a.fam].mayWait(a.domain, free[a.fam]) {
			failing = append(failing, i)
		}
	}
	return failing
}

// freeCounts returns, per family, its surely counted pods per domain less those of the groups
// held(g, family) says another family may hold back.
func (m *waitModel) freeCounts(held func(g, f int) bool) [][]int {
	free := make([][]int, len(m.fams))
	for fi := range m.fams {
		wf := &m.fams[fi]
		free[fi] = slices.Clone(wf.lo)
		for _, part := range wf.parts {
			if part.count == countSure && held(part.g, fi) {
				free[fi][part.domain] -= part.n
			}
		}
	}
	return free
}

// mayWait reports whether a carrier of the family in domain d may be refused while the pods
// held in other domains are pending: free is the family's surely counted pods less those.
func (wf *waitFam) mayWait(d int, free []int) bool {
	if wf.counted < wf.f.s.MinDomains {
		return false
	}
	lowest, any := 0, false
	for v, n := range free[:wf.counted] {
		if v != d && (!any || n < lowest) {
			lowest, any = n, true
		}
	}
	return any && wf.hi[d]-lowest > wf.f.s.MaxSkew
}

// seededWaits looks for a deadlock the settling from every pair at once misses: settled from
// all the pairs left, the pods of two deadlocks turned opposite ways (a family's carriers in
// zone a waiting for its pods in zone c, or those in c for those in a) are pending together,
// and then nothing is refused. For each family and domain of a pair left, in order, it takes the
// pods that family counts there as bound — the groups counted there that do not carry it — runs
// the search and the settling again from the pairs left without theirs, and returns the first
// set not empty (input 349 of TestSpreadCarriersWaitingOnEachOtherBindInAnyOrder).
func (m *waitModel) seededWaits(live []bool) []bool {
	tried := map[[2]int]bool{}
	for i, a := range m.at {
		seed := [2]int{a.fam, a.domain}
		if !live[i] || tried[seed] {
			continue
		}
		tried[seed] = true
		bound := m.fams[a.fam].countedApart(a.domain, m.groups)
		next := slices.Clone(live)
		for j, o := range m.at {
			if bound[o.g] {
				next[j] = false
			}
		}
		m.mayWaitFixpoint(next)
		m.settleWaits(next)
		if slices.Contains(next, true) {
			return next
		}
	}
	return make([]bool, len(m.pairs))
}

// countedApart marks the groups the family counts in domain d that carry it nowhere.
func (wf *waitFam) countedApart(d, groups int) []bool {
	carries, out := make([]bool, groups), make([]bool, groups)
	for _, part := range wf.parts {
		carries[part.g] = carries[part.g] || part.carrier
	}
	for _, part := range wf.parts {
		if part.domain == d && part.count != countNone && !carries[part.g] {
			out[part.g] = true
		}
	}
	return out
}

// settleWaits keeps, of the pairs left, those refused when every group with a pair left is
// pending at once: the state a deadlock would be in. The pending groups are those of the pairs
// left when a round starts, so a round's outcome does not depend on the order of the pairs.
func (m *waitModel) settleWaits(live []bool) {
	pending := make([]bool, m.groups)
	lo, hi := make([][]int, len(m.fams)), make([][]int, len(m.fams))
	lowest := make([]int, len(m.fams))
	for changed := true; changed; {
		changed = false
		clear(pending)
		for i, a := range m.at {
			pending[a.g] = pending[a.g] || live[i]
		}
		for fi := range m.fams {
			wf := &m.fams[fi]
			lo[fi], hi[fi] = append(lo[fi][:0], wf.lo...), append(hi[fi][:0], wf.hi...)
			wf.count(lo[fi], hi[fi], pending, -1)
			lowest[fi] = math.MaxInt
			for _, n := range lo[fi][:wf.counted] {
				lowest[fi] = min(lowest[fi], n)
			}
		}
		for i, a := range m.at {
			if !live[i] {
				continue
			}
			wf := &m.fams[a.fam]
			own, low := hi[a.fam][a.domain]+a.self, 0
			if wf.counted >= wf.f.s.MinDomains || wf.counted == 0 {
				// (With no counted domain lowest is MaxInt: nothing refuses it.)
				low = min(own, lowest[a.fam])
			}
			if own-low <= wf.f.s.MaxSkew {
				live[i], changed = false, true
			}
		}
	}
}

// enforceSpreadWaits takes back one pod when some carriers may wait on each other forever: for
// the first pair left, a pod its family counts in the pair's domain or one of the pair's
// carriers, preferring one whose going lowers no other family's minimum. It reports whether it
// took one.
func (p *problem) enforceSpreadWaits(st *packState) bool {
	waits := p.spreadWaits(st)
	if len(waits) == 0 {
		return false
	}
	w := waits[0]
	var best *group
	bestHarm := 0
	consider := func(g *group) {
		if harm := p.lowersMinimum(st, g, w.f, w.domain); best == nil || harm < bestHarm {
			best, bestHarm = g, harm
		}
	}
	for _, part := range slices.Backward(w.f.parts) {
		if part.domain == w.domain && part.count != countNone && st.placed(part.g) > 0 {
			consider(part.g)
		}
	}
	// Or the carrier itself: it no longer waits (the only choice when running pods make the
	// whole count).
	consider(w.g)
	_, hi := p.famCounts(st, w.f)
	p.unplace(st, best, 1)
	best.blocked = &blockInfo{ReasonTopologySpread, fmt.Sprintf(
		"topology spread on %s (maxSkew %d) of %s…: %s=%s cannot take more of the pods it counts and carriers, or carriers there could wait forever for pods in other domains that wait for them in turn (%s)",
		w.f.s.term.key, w.f.s.MaxSkew, w.g.keys[0], w.f.s.term.key, w.domain, topology.FormatCounts(hi, w.f.Domains))}
	return true
}

// lowersMinimum counts the families other than f whose smallest surely counted domain is d
// and counts g's pods there: taking one back would lower their minimum.
func (p *problem) lowersMinimum(st *packState, g *group, f *spreadFam, d string) int {
	harm := 0
	for _, o := range p.spreadFams {
		if o == f || !slices.ContainsFunc(o.parts, func(part spreadPart) bool {
			return part.g == g && part.domain == d && part.count == countSure
		}) {
			continue
		}
		lo, _ := p.famCounts(st, o)
		if lo[d] <= o.Minimum(lo) {
			harm++
		}
	}
	return harm
}
