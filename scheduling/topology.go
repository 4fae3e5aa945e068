package scheduling

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/internal/topology"
)

// Topology constraints — spread, pod affinity and anti-affinity — are turned into the few things
// the packer already understands, before any packing starts:
//
//   - a spread or anti-affinity over zones (or any node label but the hostname) splits a group
//     into subgroups pinned to one domain each, sized so the final counts respect maxSkew, or
//     one pod per domain;
//   - an affinity pins a group to the domains where its targets are (or, for a group that is
//     its own target, to the one cheapest domain; affinity.go);
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

// spreadC is a spread constraint of a group: the pods it selects, and the rest as
// kube-scheduler reads it (defaults filled).
type spreadC struct {
	term podTerm
	topology.Spread
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
	// needKeys are the keys of hard spreads but those every node has (topology.Labelled):
	// kube-scheduler binds the pod only to nodes with them, so the parse added them to the
	// group's alternatives (see parseSpreads).
	needKeys []string
}

// blockInfo marks pods that cannot be placed at all because of a constraint, and why.
type blockInfo struct {
	code Reason
	msg  string
}

// parseTopology reads g's constraints: its spreads, its required pod anti-affinity and affinity
// terms, and the heaviest preferred term of each kind where preferences are honoured.
func (p *problem) parseTopology(g *group, nsLabels map[string]map[string]string) (groupTopo, error) {
	var t groupTopo
	if err := p.parseSpreads(g, &t); err != nil {
		return t, err
	}
	terms := nodeplan.PodAffinityTerms(g.rep)
	var err error
	if t.anti, _, err = podTerms(g.rep, terms, true, p.prefs.podAnti, nsLabels); err != nil {
		return t, err
	}
	if t.affinity, t.reqAff, err = podTerms(g.rep, terms, false, p.prefs.podAffinity, nsLabels); err != nil {
		return t, err
	}
	t.affSig = termsSignature(t.affinity[:t.reqAff])
	return t, nil
}

// parseSpreads adds g's spread constraints to t: the hard ones, and the soft ones where
// preferences are honoured. A spread with an empty selector only asks for nodes with its key.
func (p *problem) parseSpreads(g *group, t *groupTopo) error {
	for _, c := range g.rep.Spec.TopologySpreadConstraints {
		term, err := newSpreadTerm(g.rep, c)
		if err != nil {
			return err
		}
		s := spreadC{term: term, Spread: topology.FromConstraint(c)}
		if s.Hard && !topology.Labelled(c.TopologyKey) {
			// kube-scheduler's filter refuses every node without the key.
			t.needKeys = append(t.needKeys, c.TopologyKey)
			needKey(g, c.TopologyKey)
		}
		if term.sel.Empty() {
			// kube-scheduler counts no pods for an empty selector ({}), so the skew is at
			// most 1 everywhere: the constraint only asks for nodes with the key.
			continue
		}
		if s.Hard || p.prefs.spread {
			t.spreads = append(t.spreads, s)
			t.spreadSigs = append(t.spreadSigs, spreadSignature(g, &t.spreads[len(t.spreads)-1]))
		}
	}
	return nil
}

// needKey narrows every alternative of g to nodes with key.
func needKey(g *group, key string) {
	for i := range g.alts {
		g.alts[i] = g.alts[i].Add(nodeplan.Exists(key))
	}
}

// parseGroups reads every group's constraints into p.topo (parseTopology), or takes them from
// from, an earlier build's facts on the same groups (the relaxed problem's, from the plan's):
// the parsed constraints are only read after, and the alternatives are narrowed as the parse
// narrowed them. Groups are not split yet, so they are base's, in order. It reports whether
// any group has a constraint.
func (p *problem) parseGroups(nsLabels map[string]map[string]string, from *buildFacts) (bool, error) {
	any := false
	if from != nil && len(from.topos) == len(p.groups) {
		for i, g := range p.groups {
			t := from.topos[i]
			p.adoptTopo(g, t)
			any = any || t.hasConstraints()
		}
		return any, nil
	}
	p.facts.topos = make([]groupTopo, len(p.groups))
	// Groups that differ only in what the constraints do not read (requests, labels no
	// matchLabelKeys names) parse them alike: each distinct set is parsed once.
	type constraintsOf struct{ namespace, constraints string }
	parsed := map[constraintsOf]groupTopo{}
	for i, g := range p.groups {
		c := constraintsOf{g.rep.Namespace, g.constraints}
		t, seen := parsed[c]
		if seen {
			p.adoptTopo(g, t)
		} else {
			var err error
			if t, err = p.parseTopology(g, nsLabels); err != nil {
				return false, &InputError{Object: "pod " + g.keys[0], Err: err}
			}
			p.topo[g] = t
			// No constraints: nothing to share (or a group not from groupPods, whose key
			// was never written).
			if g.constraints != "" && !t.readsOwnLabels() {
				parsed[c] = t
			}
		}
		p.facts.topos[i] = t
		any = any || t.hasConstraints()
	}
	return any, nil
}

// adoptTopo gives g constraints parsed for another group with the same ones: g's alternatives
// are narrowed as the parse narrowed that group's.
func (p *problem) adoptTopo(g *group, t groupTopo) {
	for _, k := range t.needKeys {
		needKey(g, k)
	}
	p.topo[g] = t
}

// hasConstraints reports whether t has a constraint.
func (t *groupTopo) hasConstraints() bool { return len(t.spreads)+len(t.anti)+len(t.affinity) > 0 }

// readsOwnLabels reports whether a term of t was narrowed by the owner's own labels
// (selectorWithKeys): then groups that differ in those labels parse it differently.
func (t *groupTopo) readsOwnLabels() bool {
	for _, s := range t.spreads {
		if s.term.ownLabels {
			return true
		}
	}
	own := func(pt podTerm) bool { return pt.ownLabels }
	return slices.ContainsFunc(t.anti, own) || slices.ContainsFunc(t.affinity, own)
}

// podTerms parses owner's required terms of one kind (anti-affinity or affinity), in order, then,
// with preferred, its heaviest preferred term of that kind (the first on ties). It returns the
// terms and how many of them, at the front, are required.
func podTerms(owner *corev1.Pod, all []nodeplan.PodAffinityTerm, anti, preferred bool, nsLabels map[string]map[string]string) ([]podTerm, int, error) {
	var out []podTerm
	var best *nodeplan.PodAffinityTerm
	for i := range all {
		switch term := &all[i]; {
		case term.Anti != anti:
		case term.Required:
			pt, err := newPodTerm(owner, term.PodAffinityTerm, nsLabels)
			if err != nil {
				return nil, 0, err
			}
			out = append(out, pt)
		case preferred && (best == nil || term.Weight > best.Weight):
			best = term
		}
	}
	required := len(out)
	if best != nil {
		pt, err := newPodTerm(owner, best.PodAffinityTerm, nsLabels)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, pt)
	}
	return out, required, nil
}

// termsSignature identifies a set of terms regardless of their order: groups carrying the same
// required affinity terms have the same signature.
func termsSignature(terms []podTerm) string {
	sigs := make([]string, len(terms))
	for i := range terms {
		sigs[i] = terms[i].sig()
	}
	slices.Sort(sigs)
	return strings.Join(sigs, "\n")
}

// existingPod is a running pod with its node's labels.
type existingPod struct {
	pod    *corev1.Pod
	node   *corev1.Node
	labels map[string]string
}

// repel is a running pod's required anti-affinity term: it keeps the pods it selects away from
// the running pod's domain too (anti-affinity is symmetric).
type repel struct {
	term podTerm
	at   existingPod
}

// applyTopology rewrites groups for their topology constraints (see the comment at the top).
// Its steps, in order:
//
//  1. read the running pods (running, counted) and their anti-affinity (repels), cap groups by
//     the nodes' volume attach limits (volumes.go), and read every group's constraints
//     (p.topo, parseGroups; from from's facts where given); with none anywhere, nothing more
//     to do;
//  2. non-hostname anti-affinity, running pods' and the groups' own: excluded or split domains;
//  3. non-hostname spreads and pod affinities: split and pinned groups (applyZoneTopology), or,
//     for the relaxed bound, only the caps every plan obeys (relaxedSpreadCap);
//  4. hostname spreads and anti-affinity: per-node caps, conflicts and nodes to avoid;
//  5. number the caps for the packers (the groups are numbered before step 4, whose conflicts
//     name them).
//
// For the bound (relaxTopology) only what holds for every plan the same way stays: the
// hostname anti-affinity. Zone constraints are met by splitting and pinning groups one
// particular way, and hostname spread depends on the nodes a plan has.
func (p *problem) applyTopology(in *Input, from *buildFacts) error {
	nsLabels := namespaceLabels(in)
	running, counted := runningPods(in)
	repels, err := runningAntiAffinity(running, nsLabels)
	if err != nil {
		return err
	}
	p.topo = make(map[*group]groupTopo, len(p.groups))
	any := len(repels) > 0
	any = p.applyAttachLimits(in) || any
	parsed, err := p.parseGroups(nsLabels, from)
	if err != nil {
		return err
	}
	if !any && !parsed {
		return nil
	}
	relax := p.prefs.relaxTopology
	if !relax {
		p.applyDomainAnti(repels, running)
	}
	// Spreads split groups (spread.go). Groups with the same constraint form a family whose pods
	// are spread together, and every pending pod its selector matches counts, carrier or not.
	fams := p.spreadFamilies(p.topo)
	if relax {
		for _, f := range zoneFamilies(fams) {
			p.relaxedSpreadCap(f, counted)
		}
	} else {
		p.applyZoneTopology(fams, running, counted)
	}
	// No group is split after this: they take their final ids, which the conflicts recorded
	// from here on name.
	p.numberGroups()
	if !relax {
		p.applyHostnameSpreads(fams, counted)
	}
	p.applyHostnameAnti(running)
	p.numberCaps()
	return nil
}

// namespaceLabels maps each namespace of in to its labels, for namespaceSelectors.
func namespaceLabels(in *Input) map[string]map[string]string {
	nsLabels := map[string]map[string]string{}
	for _, ns := range in.Namespaces {
		nsLabels[ns.Name] = ns.Labels
	}
	return nsLabels
}

// runningPods returns the bound pods kube-scheduler sees (terminal pods are not in its cache)
// and, of those, the ones counted: not being deleted. Spread counts only those; pod affinity
// and anti-affinity count every running pod.
func runningPods(in *Input) (running, counted []existingPod) {
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
	return running, counted
}

// runningAntiAffinity returns the required anti-affinity terms of the running pods.
func runningAntiAffinity(running []existingPod, nsLabels map[string]map[string]string) ([]repel, error) {
	var repels []repel
	for _, e := range running {
		for _, term := range nodeplan.PodAffinityTerms(e.pod) {
			if !term.Anti || !term.Required {
				continue
			}
			pt, err := newPodTerm(e.pod, term.PodAffinityTerm, nsLabels)
			if err != nil {
				return nil, &InputError{Object: "pod " + nodeplan.PodKey(e.pod), Err: err}
			}
			repels = append(repels, repel{pt, e})
		}
	}
	return repels, nil
}

// matchingDomains returns the values of key on the nodes of the running pods that match.
func matchingDomains(running []existingPod, match func(*corev1.Pod) bool, key string) map[string]bool {
	found := map[string]bool{}
	for _, e := range running {
		if match(e.pod) {
			if v, ok := e.labels[key]; ok {
				found[v] = true
			}
		}
	}
	return found
}

// applyDomainAnti applies required anti-affinity over keys other than the hostname: the
// running pods' (symmetry: the groups they select avoid their domains, or their nodes for a
// hostname term) and each group's own (applyZoneAnti).
func (p *problem) applyDomainAnti(repels []repel, running []existingPod) {
	for _, g := range slices.Clone(p.groups) {
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
		t := p.topo[g]
		for i := range t.anti {
			if t.anti[i].key != nodeplan.LabelHostname {
				p.relaxable = true
				p.applyZoneAnti(g, &t.anti[i], running)
			}
		}
	}
}

// zoneFamilies returns the spread families over keys other than the hostname.
func zoneFamilies(fams []*spreadFam) []*spreadFam {
	var out []*spreadFam
	for _, f := range fams {
		if f.s.Key != nodeplan.LabelHostname {
			out = append(out, f)
		}
	}
	return out
}

// applyZoneTopology splits and pins groups for their non-hostname spreads and pod affinities.
// Spreads of groups without pod affinity first, so that groups that must share a domain with
// spread pods can follow one of the domains those were given; then affinities (which may pin);
// then the spreads of groups with affinity, within their pins. Pods that only count for a
// spread are pinned with the first spreads unless an affinity or a later spread of their own
// still has to place them.
func (p *problem) applyZoneTopology(fams []*spreadFam, running, counted []existingPod) {
	zoneFams := zoneFamilies(fams)
	if len(fams) > 0 {
		p.relaxable = true
	}
	var firstFams, laterFams []*spreadFam
	for _, f := range zoneFams {
		if len(p.topo[f.rep].affinity) > 0 {
			laterFams = append(laterFams, f)
		} else {
			firstFams = append(firstFams, f)
		}
	}
	assigned := map[string]map[*group]bool{}
	p.splitSpreads(firstFams, firstFams, counted, assigned, func(g *group) bool {
		if len(p.topo[g].affinity) > 0 {
			return false
		}
		return !slices.ContainsFunc(laterFams, func(f *spreadFam) bool { return p.carries(g, f) })
	})
	memo := newAffinityMemo()
	for _, g := range slices.Clone(p.groups) {
		for i := range p.topo[g].affinity {
			p.relaxable = true
			p.applyAffinity(g, i, running, p.topo, memo)
		}
	}
	p.splitSpreads(laterFams, zoneFams, counted, assigned, func(*group) bool { return true })
	p.recordSpreadParts(zoneFams)
}

// applyHostnameSpreads turns each hostname spread family into a per-node cap (maxSkew,
// counting the matching pods already on each node), conflicts and nodes to avoid.
func (p *problem) applyHostnameSpreads(fams []*spreadFam, counted []existingPod) {
	for _, f := range fams {
		if f.s.term.key == nodeplan.LabelHostname {
			p.applyHostnameSpread(f, counted)
		}
	}
}

// applyHostnameSpread caps f's pods per node. Pods the selector matches without carrying the
// constraint count on a node too. Either they share the carriers' cap (at most maxSkew matching
// pods on any node, which also keeps every carrier's node within it), when they are no more than
// the carriers; or a node holding carriers holds none of them, and they are free elsewhere.
func (p *problem) applyHostnameSpread(f *spreadFam, counted []existingPod) {
	c := &nodeCap{limit: int64(f.s.MaxSkew), existing: map[string]int64{}}
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
		case p.counts(g, f) != countNone:
			others = append(others, g)
		}
	}
	shareCap := pendingPods(others) <= pendingPods(carriers)
	if !shareCap {
		p.conflictPairs = slices.Grow(p.conflictPairs, len(carriers)*len(others))
	}
	if shareCap {
		for _, h := range others {
			c.members = append(c.members, h)
			h.caps = append(h.caps, c)
		}
	}
	for _, g := range carriers {
		if !shareCap {
			for _, h := range others {
				p.conflict(g, h)
			}
		}
		if p.counts(g, f) != countNone {
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

// pendingPods is the number of pending pods in groups.
func pendingPods(groups []*group) int {
	n := 0
	for _, g := range groups {
		n += len(g.pods)
	}
	return n
}

// applyHostnameAnti applies required anti-affinity over hostnames: a group its own term selects
// gets at most one pod per node (shared with every group of the same selector and namespace), it
// conflicts with the other groups the term selects, and avoids nodes running a pod it selects.
func (p *problem) applyHostnameAnti(running []existingPod) {
	antiFams := map[string]*nodeCap{}
	selects := map[string][]*group{}
	for _, g := range p.groups {
		t := p.topo[g]
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
			for _, h := range p.selected(a, selects) {
				if h != g {
					p.conflict(g, h)
				}
			}
			for _, e := range running {
				if a.matches(e.pod) {
					g.avoidBin(e.node.Name)
				}
			}
		}
	}
}

// selected returns the groups term a selects, from memo (by the term's signature: on the drawn
// mixes hundreds of groups carry the same few terms).
func (p *problem) selected(a *podTerm, memo map[string][]*group) []*group {
	sig := a.sig()
	hs, ok := memo[sig]
	if !ok {
		for _, h := range p.groups {
			if a.matches(h.rep) {
				hs = append(hs, h)
			}
		}
		memo[sig] = hs
	}
	return hs
}

// numberGroups gives every group its final id (topology added subgroups).
func (p *problem) numberGroups() {
	for i, g := range p.groups {
		g.id = i
	}
}

// numberCaps gives every cap its index and member set.
func (p *problem) numberCaps() {
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
}

// spreadSignature identifies a spread constraint shared by several groups, whatever nodes it
// counts for each (its scope, scopeOf).
func spreadSignature(g *group, s *spreadC) string {
	return fmt.Sprintf("%s|%s|%s", s.term.sel, g.rep.Namespace, s.Spread)
}

// scopeOf is what decides which nodes g's spread s counts (topology.Spread.Scope): g's node
// selection and, as the policies say, its tolerations and the keys of its other spreads.
func scopeOf(g *group, s *spreadC) string {
	return s.Scope(g.nodeAlts, topology.Keys(g.rep.Spec.TopologySpreadConstraints, s.Hard), fmt.Sprint(g.tolerations))
}

// countedAlts is the node selection whose nodes g's spread s counts.
func countedAlts(g *group, s *spreadC) []nodeplan.Requirements {
	return s.Counted(g.nodeAlts, topology.Keys(g.rep.Spec.TopologySpreadConstraints, s.Hard))
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

// conflict records that g and h may not share a node. It may record a pair more than once
// (finishConflicts drops repeats): a scan for repeats here made the drawn mix's 20,000 pods
// quadratic.
func (p *problem) conflict(g, h *group) {
	p.conflictPairs = append(p.conflictPairs, [2]int32{int32(g.id), int32(h.id)})
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

// applyZoneAnti handles a required anti-affinity term over a key other than the hostname: g
// avoids the domains of running pods the term selects, and the other pending groups it selects
// end up in other domains than g's pods. g takes its cheapest domain (one per pod when it
// repels itself) and the others lose the domains g was given: a valid choice, not always the
// cheapest.
func (p *problem) applyZoneAnti(g *group, a *podTerm, running []existingPod) {
	taken := matchingDomains(running, a.matches, a.key)
	if len(taken) > 0 {
		p.exclude(g, a.key, sortedSet(taken)...)
	}
	var others []*group
	for _, h := range p.groups {
		if h.rep != g.rep && a.matches(h.rep) {
			others = append(others, h)
		}
	}
	switch {
	case a.matches(g.rep):
		p.splitOnePerDomain(g, a, taken)
	case len(others) > 0:
		if vals := byPrice(p.domains(g, a.key)); len(vals) > 0 {
			parts := make([]int, len(vals))
			parts[0] = len(g.pods)
			p.splitInto(g, a.key, vals, parts, nil)
		}
	}
	if len(others) > 0 {
		p.excludeGroupDomains(g, a.key, others)
	}
}

// splitOnePerDomain splits g, whose anti-affinity term a selects its own pods, into one pod per
// free domain (cheapest first); pods left over are blocked.
func (p *problem) splitOnePerDomain(g *group, a *podTerm, taken map[string]bool) {
	doms := p.domains(g, a.key)
	for v := range taken {
		delete(doms, v)
	}
	vals := byPrice(doms)
	parts := make([]int, len(vals))
	for i := range min(len(vals), len(g.pods)) {
		parts[i] = 1
	}
	// The sentence counts what the left-over pods would meet: a running match in each taken
	// domain, and one of g's own pods in each domain the split gives one.
	counts := map[string]int{}
	all := slices.Clone(vals)
	for v := range taken {
		counts[v] = 1
		all = append(all, v)
	}
	for i, v := range vals {
		counts[v] += parts[i]
	}
	slices.Sort(all)
	p.splitInto(g, a.key, vals, parts, &blockInfo{ReasonPodAntiAffinity,
		fmt.Sprintf("pod anti-affinity on %s: every domain already has a pod matching %s (%s)", a.key, a.sel, topology.FormatCounts(counts, all))})
}

// excludeGroupDomains keeps others out of the domains g's placeable pods (its subgroups
// included) are pinned to.
func (p *problem) excludeGroupDomains(g *group, key string, others []*group) {
	var mine []string
	for _, h := range p.groups {
		if h.rep == g.rep && h.blocked == nil {
			if v := pinnedTo(h, key); v != "" && !slices.Contains(mine, v) {
				mine = append(mine, v)
			}
		}
	}
	if len(mine) > 0 {
		slices.Sort(mine)
		for _, h := range others {
			p.exclude(h, key, mine...)
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
