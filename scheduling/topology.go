package scheduling

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

// Topology constraints — spread, pod affinity and anti-affinity — are turned into the few things
// the packer already understands, before any packing starts:
//
//   - a spread or anti-affinity over zones (or any node label but the hostname) splits a group
//     into subgroups pinned to one domain each, sized so the final counts respect maxSkew, or
//     one pod per domain;
//   - an affinity pins a group to the domains where its targets are (or, for a group that is
//     its own target, to the one cheapest domain);
//   - over hostnames, constraints become per-node caps (maxSkew, or 1 for anti-affinity with
//     itself), conflicts between groups that may not share a node, and existing nodes a group
//     must use or must avoid.
//
// So a spread over three zones costs the solver three groups instead of one, not a search.
//
// Hostname spread. kube-scheduler measures skew against the minimum over all eligible nodes.
// Any eligible node without the group's pods — an existing node, a node launched for other pods,
// one of ours — makes that minimum 0, so we plan at most maxSkew pods of a group per node,
// counting its pods already there. Karpenter assumes the same minimum of 0; unlike Karpenter we
// count the group's running pods per existing node, so a node already at maxSkew takes none.
//
// Counts are kube-scheduler's: every pod matching the selector, in the constraint's namespace,
// on eligible nodes (nodeAffinityPolicy Honor and nodeTaintsPolicy Ignore by default) — running
// or pending, carrying the constraint or not (spread.go says why that holds in any order). Over
// hostnames, pending pods the selector matches without carrying it share the carriers' per-node
// cap, or, when they outnumber the carriers, stay off the carriers' nodes.

type spreadC struct {
	term          podTerm
	maxSkew       int
	minDomains    int
	hard          bool
	honorAffinity bool
	honorTaints   bool
}

// groupTopo is a group's parsed constraints.
type groupTopo struct {
	spreads  []spreadC
	anti     []podTerm // required anti-affinity
	affinity []podTerm // required affinity, then the heaviest preferred term (if honoured)
	// reqAff counts the required terms at the front of affinity; affSig identifies them, so
	// groups carrying the same required terms (co-carriers) can be told apart from others.
	reqAff int
	affSig string
	// spreadSigs are spreadSignature of each spread, in order.
	spreadSigs []string
}

// blockInfo marks pods that cannot be placed at all because of a constraint, and why.
type blockInfo struct {
	code Reason
	msg  string
}

func (p *problem) parseTopology(g *group, nsLabels map[string]map[string]string) (groupTopo, error) {
	var t groupTopo
	rep := g.rep
	for _, c := range rep.Spec.TopologySpreadConstraints {
		term, err := newSpreadTerm(rep, c)
		if err != nil {
			return t, err
		}
		s := spreadC{term: term, maxSkew: int(max(c.MaxSkew, 1)), hard: c.WhenUnsatisfiable != corev1.ScheduleAnyway,
			honorAffinity: c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor,
			honorTaints:   c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor}
		if c.MinDomains != nil {
			s.minDomains = int(*c.MinDomains)
		}
		if term.sel.Empty() {
			// kube-scheduler counts no pods for an empty selector ({}), so the skew is at
			// most 1 everywhere: the constraint only asks for nodes with the key.
			if s.hard && c.TopologyKey != nodeplan.LabelHostname && c.TopologyKey != nodeplan.LabelZone {
				for i := range g.alts {
					g.alts[i] = g.alts[i].Add(nodeplan.Exists(c.TopologyKey))
				}
			}
			continue
		}
		if s.hard || p.prefs.spread {
			t.spreads = append(t.spreads, s)
			t.spreadSigs = append(t.spreadSigs, spreadSignature(g, &t.spreads[len(t.spreads)-1]))
		}
	}
	if a := rep.Spec.Affinity; a != nil {
		if a.PodAntiAffinity != nil {
			for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				pt, err := newPodTerm(rep, term, nsLabels)
				if err != nil {
					return t, err
				}
				t.anti = append(t.anti, pt)
			}
			if p.prefs.podAnti {
				for _, w := range heaviest(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) {
					pt, err := newPodTerm(rep, w, nsLabels)
					if err != nil {
						return t, err
					}
					t.anti = append(t.anti, pt)
				}
			}
		}
		if a.PodAffinity != nil {
			for _, term := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				pt, err := newPodTerm(rep, term, nsLabels)
				if err != nil {
					return t, err
				}
				t.affinity = append(t.affinity, pt)
			}
			t.reqAff = len(t.affinity)
			sigs := make([]string, len(t.affinity))
			for i := range t.affinity {
				sigs[i] = t.affinity[i].sig()
			}
			slices.Sort(sigs)
			t.affSig = strings.Join(sigs, "\n")
			if p.prefs.podAffinity {
				for _, w := range heaviest(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) {
					pt, err := newPodTerm(rep, w, nsLabels)
					if err != nil {
						return t, err
					}
					t.affinity = append(t.affinity, pt)
				}
			}
		}
	}
	return t, nil
}

// heaviest returns the term of highest weight (first on ties), or none.
func heaviest(ws []corev1.WeightedPodAffinityTerm) []corev1.PodAffinityTerm {
	if len(ws) == 0 {
		return nil
	}
	best := ws[0]
	for _, w := range ws[1:] {
		if w.Weight > best.Weight {
			best = w
		}
	}
	return []corev1.PodAffinityTerm{best.PodAffinityTerm}
}

// existingPod is a running pod with its node's labels.
type existingPod struct {
	pod    *corev1.Pod
	node   *corev1.Node
	labels map[string]string
}

// applyTopology rewrites groups for their topology constraints (see the comment at the top).
func (p *problem) applyTopology(in *Input) error {
	nsLabels := map[string]map[string]string{}
	for _, ns := range in.Namespaces {
		nsLabels[ns.Name] = ns.Labels
	}
	// running are the bound pods kube-scheduler sees (terminal pods are not in its cache);
	// counted leaves out those being deleted, which spread does not count but pod affinity
	// and anti-affinity do.
	var running, counted []existingPod
	for _, n := range in.Nodes {
		for _, pod := range n.Pods {
			if nodeplan.PodTerminal(pod) {
				continue
			}
			e := existingPod{pod: pod, node: n.Node, labels: n.Node.Labels}
			running = append(running, e)
			if pod.DeletionTimestamp == nil {
				counted = append(counted, e)
			}
		}
	}
	// Existing pods' required anti-affinity repels incoming pods too (symmetry).
	type repel struct {
		term podTerm
		at   existingPod
	}
	var repels []repel
	for _, e := range running {
		if a := e.pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
			for _, term := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				pt, err := newPodTerm(e.pod, term, nsLabels)
				if err != nil {
					return &InputError{Object: "pod " + nodeplan.PodKey(e.pod), Err: err}
				}
				repels = append(repels, repel{pt, e})
			}
		}
	}
	topo := make(map[*group]groupTopo, len(p.groups))
	p.topo = topo
	any := len(repels) > 0
	any = p.applyAttachLimits(in) || any
	for _, g := range p.groups {
		t, err := p.parseTopology(g, nsLabels)
		if err != nil {
			return &InputError{Object: "pod " + g.keys[0], Err: err}
		}
		topo[g] = t
		any = any || len(t.spreads)+len(t.anti)+len(t.affinity) > 0
	}
	if !any {
		return nil
	}
	// For the bound (relaxTopology) only what holds for every plan the same way stays: the
	// hostname anti-affinity below. Zone constraints are met by splitting and pinning groups
	// one particular way, and hostname spread depends on the nodes a plan has.
	relax := p.prefs.relaxTopology
	// Pass 1: everything over non-hostname keys, which may pin or split groups.
	groups := slices.Clone(p.groups)
	for _, g := range groups {
		if relax {
			break
		}
		t := topo[g]
		// Symmetry: domains where a running pod's anti-affinity selects this group.
		for _, r := range repels {
			if !r.term.matches(g.rep) {
				continue
			}
			if r.term.key == nodeplan.LabelHostname {
				g.avoidBin(r.at.node.Name)
				continue
			}
			if v, ok := r.at.labels[r.term.key]; ok {
				p.relaxable = true
				p.exclude(g, r.term.key, v)
			}
		}
		for i := range t.anti {
			if t.anti[i].key != nodeplan.LabelHostname {
				p.relaxable = true
				p.applyZoneAnti(g, &t.anti[i], running)
			}
		}
	}
	// Spreads split groups (spread.go). Groups with the same constraint form a family whose pods
	// are spread together, and every pending pod its selector matches counts, carrier or not.
	fams := p.spreadFamilies(topo)
	if len(fams) > 0 && !relax {
		p.relaxable = true
	}
	var zoneFams, firstFams, laterFams []*spreadFam
	for _, f := range fams {
		if f.s.term.key == nodeplan.LabelHostname {
			continue
		}
		zoneFams = append(zoneFams, f)
		if len(topo[f.rep].affinity) > 0 {
			laterFams = append(laterFams, f)
		} else {
			firstFams = append(firstFams, f)
		}
	}
	// Spreads of groups without pod affinity first, so that groups that must share a domain
	// with spread pods can follow one of the domains those were given; then affinities (which
	// may pin); then the spreads of groups with affinity, within their pins. Pods that only
	// count for a spread are pinned with the first spreads unless an affinity or a later
	// spread of their own still has to place them.
	assigned := map[string]map[*group]bool{}
	if !relax {
		p.splitSpreads(firstFams, firstFams, counted, assigned, func(g *group) bool {
			if len(topo[g].affinity) > 0 {
				return false
			}
			return !slices.ContainsFunc(laterFams, func(f *spreadFam) bool { return p.carries(g, f) })
		})
	}
	for _, g := range slices.Clone(p.groups) {
		t := topo[g]
		for i := range t.affinity {
			if relax {
				break
			}
			p.relaxable = true
			p.applyAffinity(g, i, running, topo)
		}
	}
	if relax {
		for _, f := range zoneFams {
			p.relaxedSpreadCap(f, counted)
		}
	} else {
		p.splitSpreads(laterFams, zoneFams, counted, assigned, func(*group) bool { return true })
		p.recordSpreadParts(zoneFams)
	}
	// Pass 2: hostname constraints become caps, conflicts and nodes to avoid.
	for _, f := range fams {
		if f.s.term.key != nodeplan.LabelHostname || relax {
			continue
		}
		c := &nodeCap{limit: int64(f.s.maxSkew), existing: map[string]int64{}}
		for _, e := range counted {
			if f.s.term.matches(e.pod) {
				c.existing[e.node.Name]++
			}
		}
		var carriers, others []*group
		for _, g := range p.groups {
			switch {
			case p.carries(g, f):
				carriers = append(carriers, g)
			case f.s.term.matches(g.rep):
				others = append(others, g)
			}
		}
		// Pods the selector matches without carrying the constraint count on a node too.
		// Either they share the carriers' cap (at most maxSkew matching pods on any node,
		// which also keeps every carrier's node within it), when they are no more than the
		// carriers; or a node holding carriers holds none of them, and they are free
		// elsewhere.
		nc, cc := 0, 0
		for _, h := range others {
			nc += len(h.pods)
		}
		for _, g := range carriers {
			cc += len(g.pods)
		}
		shareCap := nc <= cc
		if shareCap {
			for _, h := range others {
				c.members = append(c.members, h)
				h.caps = append(h.caps, c)
			}
		}
		for _, g := range carriers {
			if !shareCap {
				for _, h := range others {
					g.conflict(h)
					h.conflict(g)
				}
			}
			if f.s.term.matches(g.rep) {
				c.members = append(c.members, g)
				g.caps = append(g.caps, c)
				continue
			}
			// A carrier its selector does not match adds nothing to the counts, but may
			// still only go where they are within maxSkew of the minimum (0 over hostnames).
			for name, n := range c.existing {
				if n > c.limit {
					g.avoidBin(name)
				}
			}
		}
	}
	antiFams := map[string]*nodeCap{}
	for _, g := range p.groups {
		t := topo[g]
		for i := range t.anti {
			a := &t.anti[i]
			if a.key != nodeplan.LabelHostname {
				continue
			}
			if a.matches(g.rep) {
				g.capPerNode(1)
				sig := a.sel.String() + "|" + g.rep.Namespace
				c, ok := antiFams[sig]
				if !ok {
					c = &nodeCap{limit: 1}
					antiFams[sig] = c
				}
				c.members = append(c.members, g)
				g.caps = append(g.caps, c)
			}
			for _, h := range p.groups {
				if h != g && a.matches(h.rep) {
					g.conflict(h)
					h.conflict(g)
				}
			}
			for _, e := range running {
				if a.matches(e.pod) {
					g.avoidBin(e.node.Name)
				}
			}
		}
	}
	for i, g := range p.groups {
		g.id = i
	}
	for _, g := range p.groups {
		for _, c := range g.caps {
			if c.ids == nil {
				c.ids = make([]bool, len(p.groups))
				for _, m := range c.members {
					c.ids[m.id] = true
				}
				c.idx = p.ncaps
				p.ncaps++
			}
		}
	}
	return nil
}

// spreadSignature identifies a spread constraint shared by several groups.
func spreadSignature(g *group, s *spreadC) string {
	return fmt.Sprintf("%s|%s|%s|%d|%d|%t|%t|%t", s.term.key, s.term.sel, g.rep.Namespace, s.maxSkew, s.minDomains, s.hard, s.honorAffinity, s.honorTaints)
}

func (g *group) capPerNode(n int64) {
	if g.perNode == 0 || n < g.perNode {
		g.perNode = n
	}
}

func (g *group) avoidBin(name string) {
	if g.avoid == nil {
		g.avoid = map[string]bool{}
	}
	g.avoid[name] = true
}

func (g *group) conflict(h *group) {
	if !slices.Contains(g.conflictGroups, h) {
		g.conflictGroups = append(g.conflictGroups, h)
	}
}

// pin narrows every alternative of g to key ∈ values.
func (p *problem) pin(g *group, key string, values ...string) {
	for i := range g.alts {
		g.alts[i] = g.alts[i].Add(nodeplan.In(key, values...))
	}
}

// exclude narrows every alternative of g to key ∉ values (or absent).
func (p *problem) exclude(g *group, key string, values ...string) {
	for i := range g.alts {
		g.alts[i] = g.alts[i].Add(nodeplan.NotIn(key, values...))
	}
}

// domains returns the values of key the group could be placed in — from the shapes of pools
// it may use and from existing nodes it may use — each with the cheapest price seen there.
func (p *problem) domains(g *group, key string) map[string]float64 {
	return p.domainsFor(g, g.alts, key, true, true, true)
}

// domainsFor is domains for the given alternatives; with honorTaints false, pools whose taints
// the group does not tolerate count too (a spread's domains under nodeTaintsPolicy Ignore).
// withBins adds existing nodes: with mustFit, those the group may go to; without, every node
// a spread counts (its labels match the alternatives; its taints matter only if honoured).
func (p *problem) domainsFor(g *group, alts []nodeplan.Requirements, key string, honorTaints, mustFit, withBins bool) map[string]float64 {
	out := map[string]float64{}
	note := func(v string, price float64) {
		if old, ok := out[v]; !ok || price < old {
			out[v] = price
		}
	}
	for _, pl := range p.pools {
		if _, blocked := nodeplan.UntoleratedTaint(g.tolerations, pl.np.Template.Taints); blocked && honorTaints {
			continue
		}
		for _, s := range pl.shapes {
			var alt *nodeplan.Requirements
			for i := range alts {
				if compatibleIgnoring(s.reqs, alts[i], key) == nil {
					alt = &alts[i]
					break
				}
			}
			if alt == nil || (mustFit && !g.req.fitsIn(s.alloc)) {
				continue
			}
			want, has := alt.Get(key)
			if key == nodeplan.LabelZone {
				for _, o := range s.offerings {
					if (!has || want.Accepts(o.Zone, true)) && o.Accepts(*alt) {
						note(o.Zone, o.Price)
					}
				}
				continue
			}
			r, ok := s.reqs.Get(key)
			if !ok || r.Len() == math.MaxInt {
				continue
			}
			for _, v := range r.Values() {
				if !has || want.Accepts(v, true) {
					note(v, s.minPrice)
				}
			}
		}
	}
	switch {
	case withBins && !mustFit:
		// Counting, as kube-scheduler does: every node with the key whose labels the pod's
		// node affinity (alts) accepts, and, only when the policy honours taints, that the
		// pod tolerates — whether or not the pod fits there or may go there today.
		for _, b := range p.bins {
			v, ok := b.labels[key]
			if !ok {
				continue
			}
			if _, blocked := nodeplan.UntoleratedTaint(g.tolerations, b.taints); blocked && honorTaints {
				continue
			}
			for _, alt := range alts {
				if b.reqs.Compatible(alt) == nil {
					note(v, 0)
					break
				}
			}
		}
	case withBins || len(out) == 0:
		for _, b := range p.bins {
			if v, ok := b.labels[key]; ok && b.admits(g) {
				note(v, 0)
			}
		}
	}
	return out
}

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
func (p *problem) applyAffinity(g *group, i int, running []existingPod, topo map[*group]groupTopo) {
	t := topo[g]
	a := &t.affinity[i]
	match := a.matches
	coCarrier := func(h *group) bool { return h.rep == g.rep }
	sig := fmt.Sprintf("%p", g.rep)
	if i < t.reqAff {
		terms := t.affinity[:t.reqAff]
		match = func(pod *corev1.Pod) bool { return matchesAll(terms, pod) }
		sig = t.affSig
		coCarrier = func(h *group) bool { return topo[h].affSig == sig }
	}
	hostname := a.key == nodeplan.LabelHostname
	found := map[string]bool{}
	for _, e := range running {
		if match(e.pod) {
			if v, ok := e.labels[a.key]; ok {
				found[v] = true
			}
		}
	}
	if len(found) > 0 {
		vals := sortedSet(found)
		if hostname {
			// Only nodes already running a match will do; new nodes cannot have one.
			g.onlyOn = map[string]bool{}
			for _, e := range running {
				if match(e.pod) {
					g.onlyOn[e.node.Name] = true
				}
			}
			g.noNew = true
			return
		}
		p.pin(g, a.key, vals...)
		return
	}
	self := match(g.rep)
	// Pending matches: independent ones, and co-carriers that match their own terms. An
	// independent match with a required affinity of its own supports g only if it can bind
	// without pending pods (it matches its own terms, or a running pod does); affinities that
	// wait on each other never bind.
	var indep, chained, co []*group
	for _, h := range p.groups {
		if h.blocked != nil || !match(h.rep) {
			continue
		}
		if coCarrier(h) {
			co = append(co, h)
			continue
		}
		ht := topo[h]
		if ht.reqAff == 0 || matchesAll(ht.affinity[:ht.reqAff], h.rep) ||
			slices.ContainsFunc(running, func(e existingPod) bool { return matchesAll(ht.affinity[:ht.reqAff], e.pod) }) {
			indep = append(indep, h) // it binds on its own
			continue
		}
		// It binds once the pods it follows do; unless those wait, in turn, for g (as h
		// might, or as the targets chosen so far would make it).
		if p.startable(h, g, running, topo) && !follows(h, g) {
			chained = append(chained, h)
		}
	}
	// Matches that bind on their own are followed first; a match that binds after its own
	// partners still binds sooner or later, so g may not start on its own beside it either.
	indep = append(indep, chained...)
	nowhere := func() {
		g.blocked = &blockInfo{ReasonPodAffinity, fmt.Sprintf("pod affinity on %s: no pod matches %s in any domain", a.key, a.sel)}
	}
	if hostname {
		switch {
		case len(indep) > 0:
			g.with = indep[0] // placed after it, onto nodes that run it
		case self:
			// The first pod starts the node; the rest, and every co-carrier, must follow
			// it: they are one group to kube-scheduler.
			// co holds g, so co[0] (the first original group of them) is the same for all.
			key := g.rep
			if len(co) > 0 {
				key = co[0].rep
			}
			if p.singleStates == nil {
				p.singleStates = map[*corev1.Pod]*singleState{}
			}
			if p.singleStates[key] == nil {
				p.singleStates[key] = &singleState{}
			}
			g.single = p.singleStates[key]
		case len(co) > 0:
			g.with = co[0]
		default:
			nowhere()
		}
		return
	}
	// pinned reports whether h is already pinned to one domain (e.g. a spread subgroup).
	pinned := func(h *group) bool {
		if r, ok := h.alts[0].Get(a.key); ok {
			_, single := r.Single()
			return single
		}
		return false
	}
	prefer := func(hs []*group) *group {
		for _, h := range hs {
			if h != g && pinned(h) {
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
	var target *group
	shared := "" // the start domain co-carriers share
	switch {
	case len(indep) > 0:
		target = prefer(indep)
	case self:
		target, shared = g, sig+"|"+a.key
	case len(co) > 0:
		target, shared = prefer(co), sig+"|"+a.key
	default:
		nowhere()
		return
	}
	if shared != "" {
		if v, ok := p.affinityDomain[shared]; ok {
			p.pinOrBlock(g, a.key, v, a)
			p.noteAffinity(g, target, a.key, v, "")
			return
		}
	}
	// Pin the target to its cheapest domain (if not already pinned) and g with it.
	if pinned(target) {
		v, _ := target.alts[0].Get(a.key)
		d, _ := v.Single()
		p.pinOrBlock(g, a.key, d, a)
		p.noteAffinity(g, target, a.key, d, shared)
		return
	}
	// A domain where the target can be launched, so it surely lands there; existing nodes'
	// domains only when nothing can be launched.
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

// applyZoneAnti handles a required anti-affinity term over a key other than the hostname.
func (p *problem) applyZoneAnti(g *group, a *podTerm, running []existingPod) {
	taken := map[string]bool{}
	for _, e := range running {
		if a.matches(e.pod) {
			if v, ok := e.labels[a.key]; ok {
				taken[v] = true
			}
		}
	}
	if len(taken) > 0 {
		p.exclude(g, a.key, sortedSet(taken)...)
	}
	// Other pending groups the term selects must end up in other domains than g's pods. g
	// takes its cheapest domain (one per pod when it repels itself) and the others lose the
	// domains g was given: a valid choice, not always the cheapest.
	var others []*group
	for _, h := range p.groups {
		if h.rep != g.rep && a.matches(h.rep) {
			others = append(others, h)
		}
	}
	switch {
	case a.matches(g.rep):
		// With itself: at most one pod per domain.
		doms := p.domains(g, a.key)
		for v := range taken {
			delete(doms, v)
		}
		vals := byPrice(doms)
		parts := make([]int, len(vals))
		for i := range min(len(vals), len(g.pods)) {
			parts[i] = 1
		}
		counts := map[string]int{}
		for v := range taken {
			counts[v] = 1
		}
		p.splitInto(g, a.key, vals, parts, &blockInfo{ReasonPodAntiAffinity,
			fmt.Sprintf("pod anti-affinity on %s: every domain already has a pod matching %s (%s)", a.key, a.sel, fmtCounts(counts, vals))})
	case len(others) > 0:
		if vals := byPrice(p.domains(g, a.key)); len(vals) > 0 {
			parts := make([]int, len(vals))
			parts[0] = len(g.pods)
			p.splitInto(g, a.key, vals, parts, nil)
		}
	}
	if len(others) == 0 {
		return
	}
	var mine []string
	for _, h := range p.groups {
		if h.rep == g.rep && h.blocked == nil {
			if v := pinnedTo(h, a.key); v != "" && !slices.Contains(mine, v) {
				mine = append(mine, v)
			}
		}
	}
	if len(mine) > 0 {
		slices.Sort(mine)
		for _, h := range others {
			p.exclude(h, a.key, mine...)
		}
	}
}

// splitInto replaces g by one subgroup per domain with parts[i] pods pinned to vals[i]; pods left
// over form a blocked subgroup explained by why. It returns the subgroups that can be placed.
func (p *problem) splitInto(g *group, key string, vals []string, parts []int, why *blockInfo) []*group {
	var out []*group
	pods, keys := g.pods, g.keys
	orig := slices.Clone(g.alts)
	first := true
	take := func(n int) *group {
		sub := g
		if !first {
			c := *g
			sub = &c
			p.groups = append(p.groups, sub)
			if t, ok := p.topo[g]; ok {
				p.topo[sub] = t // subgroups keep the rest of the group's constraints
			}
		}
		sub.alts = slices.Clone(orig)
		first = false
		sub.pods, sub.keys = pods[:n:n], keys[:n:n]
		pods, keys = pods[n:], keys[n:]
		return sub
	}
	for i, v := range vals {
		if parts[i] == 0 {
			continue
		}
		sub := take(parts[i])
		p.pin(sub, key, v)
		out = append(out, sub)
	}
	if len(pods) > 0 {
		sub := take(len(pods))
		sub.blocked = why
	}
	return out
}

func anyAltMatches(alts []nodeplan.Requirements, labels map[string]string) bool {
	for _, a := range alts {
		if a.Matches(labels) {
			return true
		}
	}
	return false
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// byPrice orders domains cheapest first, then by name.
func byPrice(doms map[string]float64) []string {
	vals := make([]string, 0, len(doms))
	for v := range doms {
		vals = append(vals, v)
	}
	slices.SortFunc(vals, func(a, b string) int { return cmp.Or(cmp.Compare(doms[a], doms[b]), strings.Compare(a, b)) })
	return vals
}

func cheapest(doms map[string]float64) string { return byPrice(doms)[0] }

func fmtCounts(counts map[string]int, order []string) string {
	if len(order) == 0 {
		return "no domain"
	}
	parts := make([]string, len(order))
	for i, v := range order {
		parts[i] = fmt.Sprintf("%s=%d", v, counts[v])
	}
	return strings.Join(parts, ", ")
}
