package scheduling

import (
	"fmt"
	"slices"
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
	for _, v := range f.all {
		lo[v], hi[v] = f.base[v], f.base[v]
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
	var pairs []waitPair
	lo, hi := map[*spreadFam]map[string]int{}, map[*spreadFam]map[string]int{}
	for _, f := range p.spreadFams {
		lo[f], hi[f] = p.famCounts(st, f)
		for _, part := range f.parts {
			if part.carrier && st.placed(part.g) > 0 {
				pairs = append(pairs, waitPair{part.g, f, part.domain})
			}
		}
	}
	live := make([]bool, len(pairs))
	for i := range live {
		live[i] = true
	}
	p.mayWaitFixpoint(st, pairs, live, lo, hi)
	found := slices.Clone(live)
	p.settleWaits(st, pairs, found)
	if !slices.Contains(found, true) {
		found = p.seededWaits(st, pairs, live, lo, hi)
	}
	var out []waitPair
	for i, w := range pairs {
		if found[i] {
			out = append(out, w)
		}
	}
	return out
}

// mayWaitFixpoint drops from live the pairs that cannot wait while only the pairs still live
// hold pods back, until none drops.
func (p *problem) mayWaitFixpoint(st *packState, pairs []waitPair, live []bool, lo, hi map[*spreadFam]map[string]int) {
	for changed := true; changed; {
		changed = false
		liveFams := map[*group][]*spreadFam{}
		for i, w := range pairs {
			if live[i] {
				liveFams[w.g] = append(liveFams[w.g], w.f)
			}
		}
		// held[f][v]: f's surely counted pods in v that another family may hold back.
		held := map[*spreadFam]map[string]int{}
		for _, f := range p.spreadFams {
			held[f] = map[string]int{}
			for _, part := range f.parts {
				if part.count == countSure && slices.ContainsFunc(liveFams[part.g], func(o *spreadFam) bool { return o != f }) {
					held[f][part.domain] += st.placed(part.g)
				}
			}
		}
		for i, w := range pairs {
			if live[i] && !w.f.mayWait(w.domain, lo[w.f], hi[w.f], held[w.f]) {
				live[i], changed = false, true
			}
		}
	}
}

// seededWaits looks for a deadlock the settling from every pair at once misses: settled from
// all the pairs left, the pods of two deadlocks turned opposite ways (a family's carriers in
// zone a waiting for its pods in zone c, or those in c for those in a) are pending together,
// and then nothing is refused. For each family and domain of a pair left, in order, it takes the
// pods that family counts there as bound — the groups counted there that do not carry it — runs
// the search and the settling again from the pairs left without theirs, and returns the first
// set not empty (input 349 of TestSpreadCarriersWaitingOnEachOtherBindInAnyOrder).
func (p *problem) seededWaits(st *packState, pairs []waitPair, live []bool, lo, hi map[*spreadFam]map[string]int) []bool {
	type seed struct {
		f      *spreadFam
		domain string
	}
	tried := map[seed]bool{}
	for i, w := range pairs {
		sd := seed{w.f, w.domain}
		if !live[i] || tried[sd] {
			continue
		}
		tried[sd] = true
		bound := map[*group]bool{}
		for _, part := range w.f.parts {
			if part.domain == w.domain && part.count != countNone && !w.f.carries(part.g) {
				bound[part.g] = true
			}
		}
		next := slices.Clone(live)
		for j, o := range pairs {
			if bound[o.g] {
				next[j] = false
			}
		}
		p.mayWaitFixpoint(st, pairs, next, lo, hi)
		p.settleWaits(st, pairs, next)
		if slices.Contains(next, true) {
			return next
		}
	}
	return make([]bool, len(pairs))
}

// carries reports whether g carries f's constraint.
func (f *spreadFam) carries(g *group) bool {
	return slices.ContainsFunc(f.parts, func(part spreadPart) bool { return part.g == g && part.carrier })
}

// settleWaits keeps, of the pairs left, those refused when every group with a pair left is
// pending at once: the state a deadlock would be in.
func (p *problem) settleWaits(st *packState, pairs []waitPair, live []bool) {
	for changed := true; changed; {
		changed = false
		pending := map[*group]bool{}
		for i, w := range pairs {
			if live[i] {
				pending[w.g] = true
			}
		}
		for i, w := range pairs {
			if !live[i] {
				continue
			}
			f := w.f
			lo, hi := p.famCounts(st, f)
			self := 0
			for _, part := range f.parts {
				if !pending[part.g] {
					continue
				}
				n := st.placed(part.g)
				switch part.count {
				case countSure:
					lo[part.domain] -= n
					hi[part.domain] -= n
				case countMaybe:
					hi[part.domain] -= n
				}
				if part.g == w.g && part.domain == w.domain && part.count != countNone {
					self = 1
				}
			}
			own := hi[w.domain] + self
			lowest := 0
			if len(f.all) >= f.s.minDomains {
				lowest = own
				for _, v := range f.all {
					lowest = min(lowest, lo[v])
				}
			}
			if own-lowest <= f.s.maxSkew {
				live[i], changed = false, true
			}
		}
	}
}

// mayWait reports whether a carrier of f in domain d may be refused while the pods held in
// other domains are pending.
func (f *spreadFam) mayWait(d string, lo, hi, held map[string]int) bool {
	if len(f.all) < f.s.minDomains {
		return false
	}
	lowest, any := 0, false
	for _, v := range f.all {
		if v == d {
			continue
		}
		if n := lo[v] - held[v]; !any || n < lowest {
			lowest, any = n, true
		}
	}
	return any && hi[d]-lowest > f.s.maxSkew
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
		w.f.s.term.key, w.f.s.maxSkew, w.g.keys[0], w.f.s.term.key, w.domain, fmtCounts(hi, w.f.all))}
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
		if lo[d] <= o.minimum(lo) {
			harm++
		}
	}
	return harm
}
