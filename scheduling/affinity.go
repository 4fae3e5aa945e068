package scheduling

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

// Pod affinity — the required terms, and the heaviest preferred one where preferences are
// honoured. Each term pins its group to the domains of what it follows, or gives it a group
// whose nodes it must share, or blocks it when nothing it could follow exists (applyAffinity).
// applyTopology (topology.go) applies the terms between the first and the later zone spreads.

// applyAffinity handles g's i-th pod-affinity term: a required one, or the heaviest preferred
// one when preferences are honoured.
//
// kube-scheduler counts a pod for a pod's required affinity only when it matches every one of
// its required terms, and lets a pod satisfy its own affinity only when no pod anywhere
// matches. Since kube-scheduler binds the pending pods in an order the plan does not choose,
// "anywhere" includes the pending pods that match without carrying the same terms: any of
// them may bind first. So a group follows, in this order: the domains of running matches; a
// pending group that matches without carrying the same required terms; or, when only groups
// carrying the same terms (its co-carriers, subgroups included) match, the one domain where
// all of them start.
func (p *problem) applyAffinity(g *group, i int, running []existingPod, topo map[*group]groupTopo, memo *affinityMemo) {
	ask := newAffinityAsk(g, i, topo, memo)
	if p.followRunning(ask, running) {
		return
	}
	indep, co := p.pendingMatches(ask, running, topo, memo)
	if ask.term.key == nodeplan.LabelHostname {
		p.followOnNode(ask, indep, co)
	} else {
		p.followDomain(ask, indep, co)
	}
}

// affinityAsk is one pod-affinity term of a group as applyAffinity follows it.
type affinityAsk struct {
	g    *group
	term *podTerm
	// match tells the pods that count as matches: for a required term, those matching every
	// required term of g; coCarrier tells the groups carrying the same terms, which share sig.
	match     func(*corev1.Pod) bool
	coCarrier func(*group) bool
	sig       string
	// self: g's own pods match.
	self bool
	// required: the term is one of g's required terms, so match and coCarrier are the same for
	// every group carrying the same terms.
	required bool
}

// affinityMemo is what applyAffinity remembers from one group to the next: every group of a
// pending match is asked about by every group carrying the same terms, and on the drawn mix a
// few sets of terms are carried by hundreds of groups.
type affinityMemo struct {
	// all holds, per set of required terms (by affSig), which pods match them all.
	all termMatches
	// pending holds, per set of required terms (by affSig), the pending groups that match them
	// (pendingScan), worked out while the problem had groups groups.
	pending map[string][]pendingMatch
	groups  int
}

func newAffinityMemo() *affinityMemo {
	return &affinityMemo{all: termMatches{}, pending: map[string][]pendingMatch{}}
}

// termMatches remembers, per set of required terms (by affSig), which pods match them all.
type termMatches map[string]podMatches

// all is matchesAll(terms, pod) for the terms whose signature is sig.
func (tm termMatches) all(sig string, terms []podTerm, pod *corev1.Pod) bool {
	return tm.of(sig).all(terms, pod)
}

// of returns the memo of the terms whose signature is sig: an ask looks it up once, not once
// per pod (the signatures are long).
func (tm termMatches) of(sig string) podMatches {
	m := tm[sig]
	if m == nil {
		m = podMatches{}
		tm[sig] = m
	}
	return m
}

// podMatches remembers which pods match one set of terms.
type podMatches map[*corev1.Pod]bool

// all is matchesAll(terms, pod), terms being the set m is for.
func (m podMatches) all(terms []podTerm, pod *corev1.Pod) bool {
	v, ok := m[pod]
	if !ok {
		v = matchesAll(terms, pod)
		m[pod] = v
	}
	return v
}

// pendingMatch is a pending group that matches an ask: a co-carrier of the asking group, or
// independent (it binds on its own: it matches its own required terms, a running pod does, or
// it has none), or neither.
type pendingMatch struct {
	h         *group
	co, indep bool
}

func newAffinityAsk(g *group, i int, topo map[*group]groupTopo, memo *affinityMemo) affinityAsk {
	t := topo[g]
	ask := affinityAsk{g: g, term: &t.affinity[i], sig: fmt.Sprintf("%p", g.rep)}
	ask.match = ask.term.matches
	ask.coCarrier = func(h *group) bool { return h.rep == g.rep }
	if i < t.reqAff {
		terms := t.affinity[:t.reqAff]
		sig := t.affSig
		m := memo.all.of(sig)
		ask.match = func(pod *corev1.Pod) bool { return m.all(terms, pod) }
		ask.sig, ask.required = sig, true
		ask.coCarrier = func(h *group) bool { return topo[h].affSig == sig }
	}
	ask.self = ask.match(g.rep)
	return ask
}

// nowhere blocks the group: nothing it could follow exists.
func (ask affinityAsk) nowhere() {
	a := ask.term
	ask.g.blocked = &blockInfo{ReasonPodAffinity, fmt.Sprintf("pod affinity on %s: no pod matches %s in any domain", a.key, a.sel)}
}

// followRunning pins the group to the domains of the running pods that match (over hostnames:
// to the nodes running one, and no new node, which cannot have one). It reports whether any
// running pod matches.
func (p *problem) followRunning(ask affinityAsk, running []existingPod) bool {
	g, a := ask.g, ask.term
	found := matchingDomains(running, ask.match, a.key)
	if len(found) == 0 {
		return false
	}
	if a.key != nodeplan.LabelHostname {
		p.pin(g, a.key, sortedSet(found)...)
		return true
	}
	g.onlyOn = map[string]bool{}
	for _, e := range running {
		if ask.match(e.pod) {
			g.onlyOn[e.node.Name] = true
		}
	}
	g.noNew = true
	return true
}

// pendingMatches returns the pending groups that match: independent ones, those that bind on
// their own first (they match their own required terms, a running pod does, or they have none),
// then those that bind once the pods they follow do; and co-carriers. A match whose affinities
// wait, in turn, for g (as h might, or as the targets chosen so far would make it) never binds
// and is left out; a match that binds after its own partners still binds sooner or later, so g
// may not start on its own beside it either.
func (p *problem) pendingMatches(ask affinityAsk, running []existingPod, topo map[*group]groupTopo, memo *affinityMemo) (indep, co []*group) {
	var chained []*group
	for _, m := range memo.pendingScan(p, ask, running, topo) {
		h := m.h
		switch {
		case h.blocked != nil:
		case m.co:
			co = append(co, h)
		case m.indep:
			indep = append(indep, h)
		case p.startable(h, ask.g, running, topo) && !follows(h, ask.g):
			chained = append(chained, h)
		}
	}
	return append(indep, chained...), co
}

// pendingScan returns the pending groups that match ask, blocked or not, in the problem's
// order: for a required term from the memo, the same for every group carrying the same terms.
func (memo *affinityMemo) pendingScan(p *problem, ask affinityAsk, running []existingPod, topo map[*group]groupTopo) []pendingMatch {
	if memo.groups != len(p.groups) {
		clear(memo.pending) // groups were split since: scan again
		memo.groups = len(p.groups)
	}
	if out, ok := memo.pending[ask.sig]; ok && ask.required {
		return out
	}
	var out []pendingMatch
	for _, h := range p.groups {
		if !ask.match(h.rep) {
			continue
		}
		m := pendingMatch{h: h, co: ask.coCarrier(h)}
		if !m.co {
			ht := topo[h]
			m.indep = ht.reqAff == 0 || memo.all.all(ht.affSig, ht.affinity[:ht.reqAff], h.rep) ||
				slices.ContainsFunc(running, func(e existingPod) bool { return matchesAll(ht.affinity[:ht.reqAff], e.pod) })
		}
		out = append(out, m)
	}
	if ask.required {
		memo.pending[ask.sig] = out
	}
	return out
}

// followOnNode handles a hostname term without a running match: the group is placed after an
// independent match, onto nodes that run it; or, when its pods match, the first pod starts the
// node and the rest, and every co-carrier, follow it (they are one group to kube-scheduler); or
// it follows a co-carrier.
func (p *problem) followOnNode(ask affinityAsk, indep, co []*group) {
	g := ask.g
	switch {
	case len(indep) > 0:
		g.with = indep[0]
	case ask.self:
		// co holds g, so co[0] (the first original group of them) is the same for all.
		key := g.rep
		if len(co) > 0 {
			key = co[0].rep
		}
		if p.singleStates == nil {
			p.singleStates = map[*corev1.Pod]*singleState{}
		}
		if p.singleStates[key] == nil {
			p.singleStates[key] = &singleState{rep: key}
		}
		g.single = p.singleStates[key]
	case len(co) > 0:
		g.with = co[0]
	default:
		ask.nowhere()
	}
}

// followDomain handles a term over another key without a running match: the group shares one
// domain with its target — an independent match, itself (when its pods match) or a co-carrier —
// preferring a target already pinned. Co-carriers share their start domain.
func (p *problem) followDomain(ask affinityAsk, indep, co []*group) {
	g, a := ask.g, ask.term
	var target *group
	shared := "" // the start domain co-carriers share
	switch {
	case len(indep) > 0:
		target = preferPinned(g, indep, a.key)
	case ask.self:
		target, shared = g, ask.sig+"|"+a.key
	case len(co) > 0:
		target, shared = preferPinned(g, co, a.key), ask.sig+"|"+a.key
	default:
		ask.nowhere()
		return
	}
	if shared != "" {
		if v, ok := p.affinityDomain[shared]; ok {
			p.pinOrBlock(g, a.key, v, a)
			p.noteAffinity(g, target, a.key, v, "")
			return
		}
	}
	if d, ok := pinnedDomain(target, a.key); ok {
		p.pinOrBlock(g, a.key, d, a)
		p.noteAffinity(g, target, a.key, d, shared)
		return
	}
	p.pinWithTarget(g, target, a, shared)
}

// pinWithTarget pins the target to its cheapest domain where it can be launched, so it surely
// lands there (existing nodes' domains only when nothing can be launched), and g with it.
func (p *problem) pinWithTarget(g, target *group, a *podTerm, shared string) {
	doms := p.domainsFor(target, target.alts, a.key, true, true, false)
	if len(doms) == 0 {
		g.blocked = &blockInfo{ReasonPodAffinity, fmt.Sprintf("pod affinity on %s: no %s domain can host the pods it selects", a.key, a.key)}
		return
	}
	v := cheapest(doms)
	p.pin(target, a.key, v)
	if target != g {
		p.pinOrBlock(g, a.key, v, a)
	}
	p.noteAffinity(g, target, a.key, v, shared)
}

// pinnedDomain returns the one domain of key h is pinned to, if it is (e.g. a spread subgroup).
func pinnedDomain(h *group, key string) (string, bool) {
	if r, ok := h.alts[0].Get(key); ok {
		return r.Single()
	}
	return "", false
}

// preferPinned returns the first of hs other than g that is pinned on key, else the first other
// than g, else nil.
func preferPinned(g *group, hs []*group, key string) *group {
	for _, h := range hs {
		if _, ok := pinnedDomain(h, key); h != g && ok {
			return h
		}
	}
	for _, h := range hs {
		if h != g {
			return h
		}
	}
	return nil
}

// startable reports whether kube-scheduler can ever bind h's pods as far as their required
// pod affinity goes, without the pods of group not (the group asking, not bound yet): h has no
// required affinity, its pods match their own terms (the first may start), a running pod
// matches, or a pending group that matches them is startable in turn. Groups whose affinities
// wait on each other with none of them matching its own terms never bind.
func (p *problem) startable(h, not *group, running []existingPod, topo map[*group]groupTopo) bool {
	seen := map[*group]bool{}
	var walk func(h *group) bool
	walk = func(h *group) bool {
		if h.rep == not.rep || seen[h] {
			return false
		}
		seen[h] = true
		ht := topo[h]
		if ht.reqAff == 0 {
			return true
		}
		terms := ht.affinity[:ht.reqAff]
		if matchesAll(terms, h.rep) || slices.ContainsFunc(running, func(e existingPod) bool { return matchesAll(terms, e.pod) }) {
			return true
		}
		for _, k := range p.groups {
			if k != h && k.blocked == nil && matchesAll(terms, k.rep) && walk(k) {
				return true
			}
		}
		return false
	}
	return walk(h)
}

// follows reports whether h's chain of chosen targets (the group it shares nodes with, the group
// it shares a domain with, in turn) reaches g's pods.
func follows(h, g *group) bool {
	seen := map[*group]bool{}
	var walk func(h *group) bool
	walk = func(h *group) bool {
		if h == nil || seen[h] {
			return false
		}
		if h.rep == g.rep {
			return true
		}
		seen[h] = true
		if h.partner != nil && walk(h.partner.group) {
			return true
		}
		return walk(h.with)
	}
	return walk(h)
}

// noteAffinity remembers the domain g follows: as the start domain its co-carriers share
// (shared), and, when it follows another group, as a partner requirement — if none of that
// group's pods land there, g's are taken back (they would have no partner).
func (p *problem) noteAffinity(g, target *group, key, v, shared string) {
	if shared != "" {
		if p.affinityDomain == nil {
			p.affinityDomain = map[string]string{}
		}
		p.affinityDomain[shared] = v
	}
	if target != g {
		g.partner = &partnerReq{group: target, key: key, value: v}
	}
}

// pinOrBlock pins g, or blocks it when the pin leaves it nowhere to go (its pods were already
// pinned elsewhere by another constraint).
func (p *problem) pinOrBlock(g *group, key, v string, a *podTerm) {
	p.pin(g, key, v)
	for _, alt := range g.alts {
		if !alt.IsEmpty() {
			return
		}
	}
	g.blocked = &blockInfo{ReasonPodAffinity, fmt.Sprintf("pod affinity on %s puts the pods in %s=%s, which their other constraints rule out", key, key, v)}
}
