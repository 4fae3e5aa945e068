package scheduling

import (
	"fmt"
	"maps"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/internal/topology"
)

// Spread over zones (or any node label but the hostname).
//
// kube-scheduler counts, for a pod's spread constraint, every pod in the pod's namespace that
// the selector matches on an eligible node — whether or not that pod carries the constraint —
// and admits the pod into a domain only while that domain's count (the pod included if it
// matches) is within maxSkew of the smallest count over the eligible domains. It evaluates
// this when it schedules the pod, against the pods bound so far, and requeues a refused pod
// whenever a matching pod is bound.
//
// So the plan guarantees, in its final state, for every pod carrying a constraint: its
// domain's count of every matching pod (running, and placed by the plan, carriers or not) is
// within maxSkew of the smallest count. Whatever order the pods are then bound in, a pending
// carrier can make progress as long as the pods it waits for can: a pod without the constraint
// binds freely as far as the constraint goes, and once those are bound, a carrier in the
// least-filled domain that still has pending carriers stays within maxSkew (its domain's final
// count bounds the count it sees, and a domain whose pods are all bound is at its final count,
// never below the final minimum). The pods it waits for may carry another spread, though, and
// wait in turn: spreadwait.go takes back a pod wherever carriers could wait on each other. The
// differential test (examples/e2e/kubesched) submits all planned pods at once, lets
// kube-scheduler take them in queue order with its own requeueing, and retries the pods still
// pending once against the final state — as a real cluster does when the nodes join.
//
// The solver meets the condition before packing, by pinning every group involved to domains:
// pods that match a selector without carrying its constraint go first, each to its least
// filled domain (they are never refused for a constraint they do not carry, but they are
// counted); then the carriers, one pod at a time round the groups, each to the least filled
// domain where every constraint it carries holds and no domain holding carriers of a
// constraint it counts for goes over. enforceSpread checks the same counts after packing.

// spreadFam is one spread constraint over a key other than the hostname, shared by every
// group carrying it with the same scope (same key, selector, namespace, skew, minDomains,
// policies and counted nodes: topology.Spread.Scope). Its counts are a topology.Family, made
// by countDomains.
type spreadFam struct {
	sig string
	s   *spreadC
	ns  string
	// rep is a carrier: its node selection and tolerations decide which nodes are counted, as
	// they do for every carrier of the family (they share a scope).
	rep *group
	*topology.Family
	// parts are the groups pinned to its domains after the split (see enforceSpread).
	parts []spreadPart
	// rels[o] is what the family makes of the pods of the groups of origin o (relation): every
	// split and check asks it of every group, for every family.
	rels []famRel
}

// famRel is whether a group carries a family, and how the family counts its pods, packed: 0
// until worked out, then famRelKnown, famRelCarrier if it carries, and the countKind above.
type famRel uint8

const (
	famRelKnown     famRel = 1
	famRelCarrier   famRel = 2
	famRelKindShift        = 2 // where the countKind starts
)

// spreadPart is a group pinned to one domain of a spread: a carrier, and/or one whose pods
// count (surely, or maybe).
type spreadPart struct {
	g       *group
	domain  string
	carrier bool
	count   countKind
}

type countKind = topology.Kind

const (
	countNone  = topology.None
	countSure  = topology.Sure
	countMaybe = topology.Maybe
)

// spreadFamilies collects the spread constraints of the groups, one family per signature and
// scope (kube-scheduler judges each pod's constraint over the nodes its own node selection
// admits: pods pinned to zone-a count zone-a alone, whatever other carriers are pinned to), in
// the order they are first seen.
func (p *problem) spreadFamilies(topo map[*group]groupTopo) []*spreadFam {
	var fams []*spreadFam
	index := map[string]*spreadFam{}
	for _, g := range p.groups {
		t := topo[g]
		for i, sig := range p.familySigs(g) {
			s := &t.spreads[i]
			if index[sig] == nil {
				f := &spreadFam{sig: sig, s: s, ns: g.rep.Namespace, rep: g}
				index[sig] = f
				fams = append(fams, f)
			}
		}
	}
	return fams
}

// familySigs are the family signatures of g's spreads, in order: each spreadSignature with
// its scope (scopeOf). They depend only on g's origin, which fixes its constraints, node
// selection and tolerations, and are worked out once per origin.
func (p *problem) familySigs(g *group) []string {
	of := func() []string {
		t := p.topo[g]
		sigs := make([]string, len(t.spreadSigs))
		for i, sig := range t.spreadSigs {
			sigs[i] = sig + "\x00" + scopeOf(g, &t.spreads[i])
		}
		return sigs
	}
	if g.origin == 0 {
		return of()
	}
	if p.famSigs == nil {
		p.famSigs = make([][]string, len(p.base))
	}
	if p.famSigs[g.origin-1] == nil {
		p.famSigs[g.origin-1] = of()
	}
	return p.famSigs[g.origin-1]
}

// carries reports whether g carries f.
func (p *problem) carries(g *group, f *spreadFam) bool {
	return p.relation(g, f)&famRelCarrier != 0
}

// counts says whether f counts g's pods: not when the selector does not match them (so
// counts(g, f) != countNone is whether the selector matches them); surely when every node g may
// land on is one f's counted nodes include; maybe otherwise.
func (p *problem) counts(g *group, f *spreadFam) countKind {
	k := countKind(p.relation(g, f) >> famRelKindShift)
	if k == countMaybe && slices.Contains(g.countedSure, f) {
		return countSure // narrowed to the nodes f counts (resolveUncertain)
	}
	return k
}

// relation is f.rels for g, worked out on first asking: it depends only on g's pods' labels,
// node selection, tolerations and constraints, which g's origin fixes.
func (p *problem) relation(g *group, f *spreadFam) famRel {
	if g.origin == 0 {
		return p.relationOf(g, f)
	}
	if f.rels == nil {
		f.rels = make([]famRel, len(p.base))
	}
	r := f.rels[g.origin-1]
	if r == 0 {
		r = p.relationOf(g, f)
		f.rels[g.origin-1] = r
	}
	return r
}

// relationOf is relation, worked out.
func (p *problem) relationOf(g *group, f *spreadFam) famRel {
	r := famRelKnown
	carrier := slices.Contains(p.familySigs(g), f.sig)
	if carrier {
		r |= famRelCarrier
	}
	return r | famRel(p.countsOf(g, f, carrier))<<famRelKindShift
}

// countsOf is counts, worked out; carrier says whether g carries f.
func (p *problem) countsOf(g *group, f *spreadFam, carrier bool) countKind {
	if !f.s.term.matches(g.rep) {
		return countNone
	}
	if carrier {
		return countSure // carriers share the scope that decides the counted nodes
	}
	r := f.rep
	if counted := countedAlts(r, f.s); !topology.WholeDomains(counted, f.s.Key) && !slices.EqualFunc(g.nodeAlts, counted, nodeplan.Requirements.Equal) {
		return countMaybe
	}
	if f.s.HonorTaints {
		for _, pl := range p.pools {
			_, gBad := nodeplan.UntoleratedTaint(g.tolerations, pl.np.Template.Taints)
			_, rBad := nodeplan.UntoleratedTaint(r.tolerations, pl.np.Template.Taints)
			if !gBad && rBad {
				return countMaybe
			}
		}
		for _, b := range p.bins {
			_, gBad := nodeplan.UntoleratedTaint(g.tolerations, b.taints)
			_, rBad := nodeplan.UntoleratedTaint(r.tolerations, b.taints)
			if !gBad && rBad {
				return countMaybe
			}
		}
	}
	return countSure
}

func unrestricted(alts []nodeplan.Requirements) bool {
	return len(alts) == 1 && alts[0].Len() == 0
}

// countDomains makes f's topology.Family: the domains kube-scheduler counts for f's carriers
// (every node their scope admits, fitting them or not, and every domain a pool can launch
// such a node into) and the running pods the selector matches there.
func (p *problem) countDomains(f *spreadFam, running []existingPod) {
	g := f.rep
	s := f.s
	base := map[string]int{}
	for v := range p.domainsFor(g, countedAlts(g, s), s.Key, s.HonorTaints, false, true) {
		base[v] = 0
	}
	p.countRunning(f, base, running)
	f.Family = topology.NewFamily(s.Spread, base)
}

// countRunning adds to base the domain of every existing node that kube-scheduler counts for
// f's carriers — the nodes their scope admits, whatever else (volumes, other constraints'
// pins) narrows where they may go; whether or not the solve may use it (NoNewPods, cordoned),
// since kube-scheduler's minimum is over all of them — and counts there the running pods the
// selector matches, among those runningCandidates leaves.
func (p *problem) countRunning(f *spreadFam, base map[string]int, running []existingPod) {
	g, s := f.rep, f.s
	alts := countedAlts(g, s)
	type counted struct {
		v  string
		ok bool
	}
	seen := map[*corev1.Node]counted{} // decided once per node
	domain := func(e existingPod) (string, bool) {
		if c, ok := seen[e.node]; ok {
			return c.v, c.ok
		}
		v, ok := e.labels[s.Key]
		if ok && !anyAltMatches(alts, e.labels) {
			ok = false
		}
		if ok && s.HonorTaints {
			if _, blocked := nodeplan.UntoleratedTaint(g.tolerations, e.node.Spec.Taints); blocked {
				ok = false
			}
		}
		seen[e.node] = counted{v, ok}
		return v, ok
	}
	// Every existing node is a domain, with its running pods or without: a node the solve may
	// not use (NoNewPods) whose pods match nothing still has a count of zero there.
	for i := range p.in.Nodes {
		if n := p.in.Nodes[i].Node; n != nil {
			if v, ok := domain(existingPod{node: n, labels: n.Labels}); ok {
				base[v] += 0
			}
		}
	}
	count := func(e existingPod) {
		if v, ok := domain(e); ok && s.term.matches(e.pod) {
			base[v]++
		}
	}
	if idx, all := p.runningCandidates(&s.term, running); all {
		for _, e := range running {
			count(e)
		}
	} else {
		for _, i := range idx {
			count(running[i])
		}
	}
}

// spreadMember is a group taking part in one split, as topology.Member.
type spreadMember struct {
	g *group
	*topology.Member
	free []string // a free carrier's domains (topology.Member.Free)
}

// splitSpreads pins the groups involved in the families check (all over one key each split
// together) to domains, so that the final counts hold every carrier within maxSkew (see the
// comment at the top; topology.Assign shares the pods out). The carriers of active families
// are split, and the pods the selectors of check count that are not yet pinned and ready(g)
// allows. A family over a key no node it counts has takes no pods at all (blockNoKey).
// assigned records the groups already pinned by an earlier call, per key.
func (p *problem) splitSpreads(active, check []*spreadFam, running []existingPod, assigned map[string]map[*group]bool, ready func(*group) bool) {
	byKey := map[string][]*spreadFam{}
	var keys []string
	for _, f := range check {
		k := f.s.Key
		if byKey[k] == nil {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], f)
		if f.Family == nil {
			p.countDomains(f, running)
		}
	}
	p.blockNoKey(check, active)
	for _, key := range keys {
		// A family whose matching pods cannot leave any domain more than maxSkew above
		// another, wherever they go, needs no pins.
		fams := slices.DeleteFunc(slices.Clone(byKey[key]), p.slack)
		if assigned[key] == nil {
			assigned[key] = map[*group]bool{}
		}
		done := assigned[key]
		var movers, carriers, free []*spreadMember
		for try := 0; ; try++ {
			for _, f := range fams {
				f.Reset()
			}
			movers, carriers, free = p.spreadMembers(key, fams, active, done, ready)
			topology.Assign(members(movers), members(carriers))
			for _, m := range free {
				m.free = m.Free()
			}
			if try > 0 || !(uncertain{p, key, fams}).resolve(slices.Concat(movers, carriers, free)) {
				break
			}
		}
		p.pinFree(key, free, done)
		for _, m := range slices.Concat(movers, carriers) {
			var why *blockInfo
			if m.Why != "" {
				why = &blockInfo{ReasonTopologySpread, m.Why}
			}
			for _, sub := range p.splitInto(m.g, key, m.Domains, m.Parts, why) {
				done[sub] = true
			}
			done[m.g] = true
		}
	}
}

// blockNoKey blocks the carriers of the active hard families over a key not every node has
// (topology.Labelled) that have no domain: no node they may go to, existing or launchable, has
// the key, and kube-scheduler binds such a pod nowhere. (Over the zone, no domain means no
// node the spread counts: the pods' own selection or taints say why, in packing.)
func (p *problem) blockNoKey(fams, active []*spreadFam) {
	for _, f := range fams {
		if len(f.Domains) > 0 || !f.s.Hard || topology.Labelled(f.s.Key) || !slices.Contains(active, f) {
			continue
		}
		for _, g := range p.groups {
			if g.blocked == nil && p.carries(g, f) {
				g.blocked = &blockInfo{ReasonTopologySpread, f.NoKey()}
			}
		}
	}
}

func members(ms []*spreadMember) []*topology.Member {
	out := make([]*topology.Member, len(ms))
	for i, m := range ms {
		out[i] = m.Member
	}
	return out
}

// spreadMembers sorts the groups one split over key involves: movers only count for fams,
// carriers carry one of them and may count, free carriers count for none. Groups that may not
// move (pinned by an earlier split, not ready, or carrying only families not active) are
// counted where they are pinned and are members of none.
func (p *problem) spreadMembers(key string, fams, active []*spreadFam, done map[*group]bool, ready func(*group) bool) (movers, carriers, free []*spreadMember) {
	for _, g := range slices.Clone(p.groups) {
		if g.blocked != nil {
			continue
		}
		m := &spreadMember{g: g, Member: &topology.Member{}}
		activeCarrier := false
		for _, f := range fams {
			if p.carries(g, f) {
				m.Carries = append(m.Carries, f.Family)
				activeCarrier = activeCarrier || slices.Contains(active, f)
			}
			if k := p.counts(g, f); k != countNone {
				m.Counted = append(m.Counted, f.Family)
				m.Kinds = append(m.Kinds, k)
			}
		}
		if len(m.Carries)+len(m.Counted) == 0 {
			continue
		}
		movable := !done[g] && (activeCarrier || (len(m.Counted) > 0 && len(m.Carries) == 0 && ready(g)))
		if !movable {
			p.countFixed(m, key, fams)
			continue
		}
		m.Domains = byPrice(p.domains(g, key))
		if len(m.Domains) == 0 && len(m.Carries) == 0 {
			// Only counted, and no node it may go to has the key: it counts nowhere.
			continue
		}
		if h := g.with; h != nil {
			// It goes onto the nodes of the group it follows: into that group's
			// domain, once that is known.
			v := pinnedTo(h, key)
			if v == "" || !slices.Contains(m.Domains, v) {
				continue
			}
			m.Domains = []string{v}
		}
		if room := p.domainRoom(g, key, m.Domains); slices.ContainsFunc(room, func(n int) bool { return n >= 0 }) {
			// Domains nothing can take a pod in are left out; the rest take at most
			// what existing nodes there hold, where no pool launches. Pods left over
			// when every domain is full stay unpinned and unblocked: packing explains
			// them by their own requests and selection.
			var doms []string
			m.Room = []int{}
			for i, v := range m.Domains {
				if room[i] != 0 {
					doms = append(doms, v)
					m.Room = append(m.Room, room[i])
				}
			}
			m.Domains = doms
		}
		m.Parts = make([]int, len(m.Domains))
		m.Left = len(g.pods)
		m.Single = g.single != nil
		switch {
		case len(m.Counted) == 0 && g.single == nil:
			free = append(free, m)
		case len(m.Carries) > 0:
			carriers = append(carriers, m)
		default:
			movers = append(movers, m)
		}
	}
	return movers, carriers, free
}

// countFixed counts a group that does not move in this split: where an earlier split or
// another constraint pinned it; a group not pinned yet is counted when its turn comes.
func (p *problem) countFixed(m *spreadMember, key string, fams []*spreadFam) {
	if v := pinnedTo(m.g, key); v != "" {
		for i, f := range m.Counted {
			f.Add(v, len(m.g.pods), m.Kinds[i])
		}
	}
	for _, f := range fams {
		if slices.Contains(m.Carries, f.Family) {
			for _, v := range carrierDomains(m.g, f) {
				f.Held[v] = true
			}
		}
	}
}

// pinFree pins the free carriers: their selectors do not match them (and they count for none
// of these families), so they add nothing and may go to every domain within maxSkew of the
// minimum as it ends.
func (p *problem) pinFree(key string, free []*spreadMember, done map[*group]bool) {
	for _, m := range free {
		ok := m.free
		switch {
		case len(ok) == 0:
			m.g.blocked = &blockInfo{ReasonTopologySpread, m.Why}
		case len(ok) < len(m.Domains):
			slices.Sort(ok)
			p.pin(m.g, key, ok...)
		}
		done[m.g] = true
	}
}

// recordSpreadParts lists, for the check after packing, every group pinned to a domain of each
// family that carries it or counts for it.
func (p *problem) recordSpreadParts(fams []*spreadFam) {
	for _, f := range fams {
		f.parts = f.parts[:0]
		for _, g := range p.groups {
			carrier := p.carries(g, f)
			k := p.counts(g, f)
			if !carrier && k == countNone {
				continue
			}
			v := pinnedTo(g, f.s.term.key)
			if v == "" && k == countNone {
				for _, d := range carrierDomains(g, f) {
					f.parts = append(f.parts, spreadPart{g: g, domain: d, carrier: true})
				}
				continue
			}
			if v == "" {
				if k != countNone && g.blocked == nil {
					// Not pinned (it could not be split, e.g. it follows an unpinned
					// group onto its nodes): it may land anywhere, so it may count
					// anywhere, and a carrier may be anywhere it may go.
					var at []string
					if carrier {
						at = carrierDomains(g, f)
					}
					for _, d := range f.Domains {
						f.parts = append(f.parts, spreadPart{g: g, domain: d, carrier: slices.Contains(at, d), count: countMaybe})
					}
				}
				continue
			}
			f.parts = append(f.parts, spreadPart{g: g, domain: v, carrier: carrier, count: k})
		}
		p.spreadFams = append(p.spreadFams, f)
	}
}

// enforceSpread takes back carriers whose domain, as packed, is more than maxSkew above the
// smallest count of f: pods of the domain's matching carriers one at a time, or, when none
// match, its carriers altogether.
func (p *problem) enforceSpread(st *packState, f *spreadFam) {
	for {
		lo, hi := p.famCounts(st, f)
		held := map[string]bool{}
		for _, part := range f.parts {
			if part.carrier && st.placed(part.g) > 0 {
				held[part.domain] = true
			}
		}
		m := f.Minimum(lo)
		worst, over := "", 0
		for _, v := range slices.Sorted(maps.Keys(held)) {
			if d := hi[v] - m - f.s.MaxSkew; d > over {
				worst, over = v, d
			}
		}
		if worst == "" {
			return
		}
		why := &blockInfo{ReasonTopologySpread, fmt.Sprintf("topology spread on %s (maxSkew %d): other domains could not take their share, so %s=%s cannot take more (%s)",
			f.s.term.key, f.s.MaxSkew, f.s.term.key, worst, topology.FormatCounts(hi, f.Domains))}
		took := false
		for _, part := range slices.Backward(f.parts) {
			if part.domain == worst && part.carrier && part.count != countNone && st.placed(part.g) > 0 {
				p.unplace(st, part.g, 1)
				part.g.blocked = why
				took = true
				break
			}
		}
		if !took {
			for _, part := range f.parts {
				if part.domain == worst && part.carrier && st.placed(part.g) > 0 {
					p.unplace(st, part.g, math.MaxInt)
					part.g.blocked = why
				}
			}
		}
	}
}

// relaxedSpreadCap gives the bound's relaxed problem what a spread over zones (or any key but
// the hostname) implies for every plan, without choosing a split: with n matching pods over Z
// counted domains, a domain holding carriers holds at most M = ⌊(n + (Z−1)·maxSkew)/Z⌋ of them
// (it holds at most min+maxSkew, and the other Z−1 at least min each), so no node holds more
// carriers. n counts every running and pending pod the selector matches (pods that may not be
// counted only raise M); Z counts the same domains the split does.
//
// Only a cap below relaxedCapMax is kept (see there): dropping a constraint only lowers the
// relaxed problem's optimum, so the bound stays valid either way.
func (p *problem) relaxedSpreadCap(f *spreadFam, running []existingPod) {
	doms := map[string]bool{}
	n := 0
	var members []*group
	for _, g := range p.groups {
		if p.carries(g, f) {
			members = append(members, g)
			for v := range p.domainsFor(g, countedAlts(g, f.s), f.s.Key, f.s.HonorTaints, false, true) {
				doms[v] = true
			}
		}
		if p.counts(g, f) != countNone {
			n += len(g.pods)
		}
	}
	if idx, all := p.runningCandidates(&f.s.term, running); all {
		for _, e := range running {
			if f.s.term.matches(e.pod) {
				n++
			}
		}
	} else {
		for _, i := range idx {
			if f.s.term.matches(running[i].pod) {
				n++
			}
		}
	}
	z := len(doms)
	if z == 0 || f.s.MaxSkew <= 0 {
		return
	}
	m := (n + (z-1)*f.s.MaxSkew) / z
	if m >= n || m >= relaxedCapMax {
		return // no cap below what the pods are anyway, or one the bound does better without
	}
	c := &nodeCap{limit: int64(m)}
	for _, g := range members {
		if p.counts(g, f) != countNone {
			c.members = append(c.members, g)
			g.caps = append(g.caps, c)
		}
	}
}

// carrierDomains are the domains of f a carrier g may be in: those its pins allow, or all.
func carrierDomains(g *group, f *spreadFam) []string {
	if v := pinnedTo(g, f.s.term.key); v != "" {
		return []string{v}
	}
	var out []string
	for _, d := range f.Domains {
		for _, alt := range g.alts {
			if r, ok := alt.Get(f.s.term.key); !ok || r.Accepts(d, true) {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// slack reports whether f holds wherever its pods go: all the pending pods it may count, added
// to its fullest domain, keep that within maxSkew of its emptiest.
func (p *problem) slack(f *spreadFam) bool {
	n := 0
	for _, g := range p.groups {
		if g.blocked == nil && p.counts(g, f) != countNone {
			n += len(g.pods)
		}
	}
	hi := 0
	for _, v := range f.Domains {
		hi = max(hi, f.Base[v])
	}
	return hi+n-f.Minimum(f.Base) <= f.s.MaxSkew
}

// uncertain is one split's families over key, whose uncertain counts resolve makes sure of.
type uncertain struct {
	p    *problem
	key  string
	fams []*spreadFam
}

// resolve (resolveUncertain) makes sure of the counts a stuck member met. A family counts a pod "maybe"
// when the pod may land on nodes its carriers' node selection (nodeAffinityPolicy Honor) does
// not admit: such pods count in a domain's high count and not in its low one, and a carrier
// whose own pods the family does not count meets a minimum of 0 against every domain's high
// count — with a few of them per domain, no domain admits it, though kube-scheduler, which sees
// where they landed, binds it (seed 4's app-4 and seed 17's app-1 in the differential).
//
// So, where a member of ms is stuck on a family it carries whose counts are uncertain, every
// group that family may or may not count is kept to the nodes it counts — its alternatives
// narrowed to the carriers' counted node selection — when it can still go to each of its
// domains over key there. It reports whether it narrowed any: the split is then done again,
// with those pods counted surely. A plan may choose the nodes of pods that do not care; the
// narrowing is only ever for a carrier the split would otherwise refuse.
func (u uncertain) resolve(ms []*spreadMember) bool {
	p, fams := u.p, u.fams
	var unsure []*spreadFam
	for _, m := range ms {
		if !m.Stuck || m.Left == 0 {
			continue
		}
		for _, tf := range m.Carries {
			if f := famOf(fams, tf); f != nil && tf.Uncertain() && !slices.Contains(unsure, f) {
				unsure = append(unsure, f)
			}
		}
	}
	changed := false
	for _, f := range unsure {
		for _, g := range p.groups {
			if g.blocked != nil || p.counts(g, f) != countMaybe {
				continue
			}
			alts := narrowedAlts(g.alts, countedAlts(f.rep, f.s))
			if len(alts) == 0 || !u.keepsDomains(g, alts) {
				continue
			}
			g.alts = alts
			g.countedSure = append(slices.Clip(g.countedSure), f)
			changed = true
		}
	}
	return changed
}

// keepsDomains reports whether g, its alternatives narrowed to alts, can still go to every
// domain over key it could go to (its pinned one, if pinned).
func (u uncertain) keepsDomains(g *group, alts []nodeplan.Requirements) bool {
	p, key := u.p, u.key
	now := p.domains(g, key)
	if v := pinnedTo(g, key); v != "" {
		now = map[string]float64{v: 0}
	}
	after := p.domainsFor(g, alts, key, true, true, true)
	for v := range now {
		if _, ok := after[v]; !ok {
			return false
		}
	}
	return true
}

func famOf(fams []*spreadFam, tf *topology.Family) *spreadFam {
	for _, f := range fams {
		if f.Family == tf {
			return f
		}
	}
	return nil
}

// narrowedAlts is every satisfiable intersection of an alternative of alts with one of within.
func narrowedAlts(alts, within []nodeplan.Requirements) []nodeplan.Requirements {
	var out []nodeplan.Requirements
	for _, a := range alts {
		for _, w := range within {
			if !a.Intersects(w) {
				continue
			}
			n := a
			for _, r := range w.All() {
				n = n.Add(r)
			}
			out = append(out, n)
		}
	}
	return out
}
