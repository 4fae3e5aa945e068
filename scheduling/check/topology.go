package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeplan/nodeplan"
)

// The rules here judge the final placement. A plan is valid when kube-scheduler, placing its
// pods one at a time in an order the plan does not choose, binds them all; for spread and
// affinity that comes down to the final counts and to which pods may bind without the others,
// as each function's comment explains.

func minDomainsOf(tsc corev1.TopologySpreadConstraint) int32 {
	if tsc.MinDomains != nil {
		return *tsc.MinDomains
	}
	return 1
}

// spreadID identifies equal constraints of pods in one namespace.
func spreadID(ns string, tsc corev1.TopologySpreadConstraint, sel labels.Selector) string {
	minDomains := minDomainsOf(tsc)
	aff, taints := corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore
	if tsc.NodeAffinityPolicy != nil {
		aff = *tsc.NodeAffinityPolicy
	}
	if tsc.NodeTaintsPolicy != nil {
		taints = *tsc.NodeTaintsPolicy
	}
	return fmt.Sprintf("%s|%s|%d|%d|%s|%s|%s", ns, tsc.TopologyKey, tsc.MaxSkew, minDomains, aff, taints, sel.String())
}

// topologySpread checks DoNotSchedule constraints with kube-scheduler's semantics: a domain
// is a value of the topology key on an eligible node (nodeAffinityPolicy Honor and
// nodeTaintsPolicy Ignore by default) — and, for zones, also a zone some pool could launch an
// eligible node into; the global minimum is 0 when there are fewer domains than minDomains.
//
// Counted is every pod the selector matches in the pod's namespace on an eligible node: running,
// or placed by the plan — whether or not it carries the constraint, as kube-scheduler counts
// them. kube-scheduler binds the pending pods in an order the plan does not choose and judges
// each carrier against the pods bound so far (the carrier itself not yet counted in the
// minimum), retrying a refused one whenever a matching pod binds. Two rules make every order
// end with every pod bound:
//
//   - the final state: every domain holding a carrier ends within maxSkew of the final minimum
//     (checkSpread);
//   - no set of pending pods can hold each other back (spreadWaits): a carrier refused by a
//     constraint needs the constraint's least filled domain to hold pending matching pods, and
//     those, in that domain, are never refused by this constraint but may be by another one
//     they carry. With the final state held, pods stay pending forever only as such a cycle.
func (c *checker) topologySpread() {
	reported := map[string]bool{}
	views := map[string]*spreadView{}
	var waits []spreadWait
	for _, t := range c.all {
		for _, p := range t.pods {
			for _, tsc := range p.Spec.TopologySpreadConstraints {
				if tsc.WhenUnsatisfiable != corev1.DoNotSchedule {
					continue
				}
				if w, ok := c.checkSpread(p, t, tsc, reported, views); ok {
					waits = append(waits, w)
				}
			}
		}
	}
	c.spreadWaits(waits)
}

// spreadView is what kube-scheduler counts for one constraint of the carriers that share its
// selector, namespace, parameters and eligible nodes: the final count of each domain and the
// pending pods among them.
type spreadView struct {
	id         string
	key        string
	maxSkew    int
	minDomains int
	counts     map[string]int
	pending    map[string][]*corev1.Pod
}

// spreadWait is one carrier's constraint for spreadWaits: its domain, and its count there with
// itself included.
type spreadWait struct {
	pod    *corev1.Pod
	t      *target
	view   *spreadView
	domain string
	own    int
	// failed: the final state already breaks the constraint (reported as such).
	failed bool
	// matches: its own selector matches it.
	matches bool
}

func (c *checker) checkSpread(p *corev1.Pod, t *target, tsc corev1.TopologySpreadConstraint, reported map[string]bool, views map[string]*spreadView) (spreadWait, bool) {
	who := podDesc(nodeplan.PodKey(p))
	sel, err := selectorWithKeys(tsc.LabelSelector, p, tsc.MatchLabelKeys, nil)
	if err != nil {
		c.fail(RuleTopologySpread, who, "has an invalid selector: %v", err)
		return spreadWait{}, false
	}
	id := spreadID(p.Namespace, tsc, sel)
	key := tsc.TopologyKey
	d, ok := t.labels[key]
	if !ok {
		c.fail(RuleTopologySpread, who, "is on %s, which has no %s label for its spread constraint", t.desc, key)
		return spreadWait{}, false
	}
	if sel.Empty() {
		// kube-scheduler counts no pods for an empty selector ({}): the skew is at most 1.
		return spreadWait{}, false
	}
	v, eligible := c.spreadViewFor(p, tsc, id, sel, views)
	self := v.counts[d]
	if !eligible(t.labels, t.name, t.taints) && sel.Matches(labels.Set(p.Labels)) {
		self++
	}
	lowest, lowestAt := 0, ""
	if len(v.counts) >= v.minDomains {
		first := true
		for _, dom := range slices.Sorted(maps.Keys(v.counts)) {
			if first || v.counts[dom] < lowest {
				lowest, lowestAt, first = v.counts[dom], dom, false
			}
		}
	}
	w := spreadWait{pod: p, t: t, view: v, domain: d, own: self, matches: sel.Matches(labels.Set(p.Labels))}
	if skew := self - lowest; skew > int(tsc.MaxSkew) {
		w.failed = true
		if reported[id+"\x00"+d] {
			return w, true
		}
		reported[id+"\x00"+d] = true
		at := "fewer domains than minDomains"
		if lowestAt != "" {
			at = fmt.Sprintf("%s=%s", key, lowestAt)
		}
		c.fail(RuleTopologySpread, who, "on %s: %s=%s has %d matching pods, the minimum is %d (%s): skew %d > maxSkew %d (domains %v)",
			t.desc, key, d, self, lowest, at, skew, tsc.MaxSkew, fmtCounts(v.counts))
	}
	return w, true
}

// spreadViewFor returns the view of p's constraint tsc (shared with the carriers that count the
// same pods on the same nodes) and whether a node is eligible for it.
func (c *checker) spreadViewFor(p *corev1.Pod, tsc corev1.TopologySpreadConstraint, id string, sel labels.Selector,
	views map[string]*spreadView) (*spreadView, func(map[string]string, string, []corev1.Taint) bool) {
	key := tsc.TopologyKey
	honorAff := tsc.NodeAffinityPolicy == nil || *tsc.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	honorTaints := tsc.NodeTaintsPolicy != nil && *tsc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	eligible := func(lbls map[string]string, name string, taints []corev1.Taint) bool {
		// kube-scheduler counts only nodes with the keys of all the pod's DoNotSchedule
		// constraints.
		for _, other := range p.Spec.TopologySpreadConstraints {
			if _, ok := lbls[other.TopologyKey]; !ok && other.WhenUnsatisfiable == corev1.DoNotSchedule {
				return false
			}
		}
		if honorAff {
			if ok, _ := matchNode(p, name, lbls); !ok {
				return false
			}
		}
		if honorTaints {
			if _, bad := untolerated(p.Spec.Tolerations, taints); bad {
				return false
			}
		}
		return true
	}
	// Carriers that count the same pods on the same nodes share one view, whatever policies
	// chose those nodes.
	var sig strings.Builder
	fmt.Fprintf(&sig, "%s|%s|%d|%d|%s|", p.Namespace, key, tsc.MaxSkew, minDomainsOf(tsc), sel)
	for _, t2 := range c.all {
		if eligible(t2.labels, t2.name, t2.taints) {
			sig.WriteByte('1')
		} else {
			sig.WriteByte('0')
		}
	}
	var zones []string
	if key == nodeplan.LabelZone {
		zones = c.launchableZones(p, honorAff, honorTaints)
		sig.WriteString(strings.Join(zones, ","))
	}
	v := views[sig.String()]
	if v == nil {
		v = c.countSpread(p, tsc, id, sel, eligible, zones)
		views[sig.String()] = v
	}
	return v, eligible
}

// countSpread counts, per domain of the eligible nodes (and the launchable zones), the pods
// p's constraint tsc matches.
func (c *checker) countSpread(p *corev1.Pod, tsc corev1.TopologySpreadConstraint, id string, sel labels.Selector,
	eligible func(map[string]string, string, []corev1.Taint) bool, zones []string) *spreadView {
	v := &spreadView{id: id, key: tsc.TopologyKey, maxSkew: int(tsc.MaxSkew), minDomains: 1,
		counts: map[string]int{}, pending: map[string][]*corev1.Pod{}}
	if tsc.MinDomains != nil {
		v.minDomains = int(*tsc.MinDomains)
	}
	for _, t2 := range c.all {
		if !eligible(t2.labels, t2.name, t2.taints) {
			continue
		}
		dom := t2.labels[v.key]
		n := v.counts[dom]
		for _, q := range t2.bound {
			if q.DeletionTimestamp == nil && q.Namespace == p.Namespace && sel.Matches(labels.Set(q.Labels)) {
				n++
			}
		}
		for _, q := range t2.pods {
			if q.Namespace == p.Namespace && sel.Matches(labels.Set(q.Labels)) {
				n++
				v.pending[dom] = append(v.pending[dom], q)
			}
		}
		v.counts[dom] = n
	}
	for _, z := range zones {
		v.counts[z] += 0
	}
	return v
}

// spreadWaits fails the carriers that kube-scheduler may leave pending forever although the
// final state holds: pods that each wait for another to bind.
//
// A carrier P in domain d is refused by a constraint while d's count (P included) exceeds the
// minimum by more than maxSkew. Its own domain's count never exceeds the final one, so the
// minimum must be below its final value: the least filled domain e holds pending matching pods.
// Those are not refused by this constraint (in e the skew is at most 1), so if they stay
// pending, another constraint they carry refuses them. Hence the pairs (pod, constraint) that
// may refuse forever satisfy: the pod's final count in its domain exceeds by more than maxSkew
// the smallest, over the other domains e, of e's final count less the pods there that another
// of their constraints may refuse forever. That only gets easier as the set of pairs grows, so
// the largest such set is found by starting from every pair and dropping those that do not
// satisfy it until none do. That set is then settled (settleWaits), as the solver settles its
// own (scheduling/spreadwait.go says why and what it costs): a pair stays only while refused
// with every pod of the set pending at once. The plan passes when nothing is left. (Whether
// kube-scheduler really meets such a set depends on the order it binds in: seed 108 of the
// differential test did.)
func (c *checker) spreadWaits(waits []spreadWait) {
	carried := map[*corev1.Pod][]*spreadWait{}
	live := map[*spreadWait]bool{}
	for i := range waits {
		w := &waits[i]
		carried[w.pod] = append(carried[w.pod], w)
		live[w] = true
	}
	// holds reports whether q, if pending, may stay pending for a constraint other than v.
	holds := func(q *corev1.Pod, v *spreadView) bool {
		return slices.ContainsFunc(carried[q], func(w *spreadWait) bool { return live[w] && w.view != v })
	}
	// held counts, per view and domain, the pending pods holds accepts.
	var held map[*spreadView]map[string]int
	count := func() {
		held = map[*spreadView]map[string]int{}
		for i := range waits {
			v := waits[i].view
			if held[v] != nil {
				continue
			}
			held[v] = map[string]int{}
			for e, qs := range v.pending {
				for _, q := range qs {
					if holds(q, v) {
						held[v][e]++
					}
				}
			}
		}
	}
	refused := func(w *spreadWait) (string, int, bool) {
		v := w.view
		if w.failed {
			return "", 0, true
		}
		if len(v.counts) < v.minDomains {
			return "", 0, false
		}
		at, lowest := "", 0
		for _, e := range slices.Sorted(maps.Keys(v.counts)) {
			if n := v.counts[e] - held[v][e]; e != w.domain && (at == "" || n < lowest) {
				at, lowest = e, n
			}
		}
		return at, lowest, at != "" && w.own-lowest > v.maxSkew
	}
	for changed := true; changed; {
		changed = false
		count()
		for i := range waits {
			w := &waits[i]
			if _, _, r := refused(w); live[w] && !r {
				delete(live, w)
				changed = true
			}
		}
	}
	c.settleWaits(waits, live)
	c.reportWaits(waits, live, holds, refused)
}

// settleWaits keeps, of the pairs left, those refused when every pod with a pair left is
// pending at once: the state a deadlock would be in.
func (c *checker) settleWaits(waits []spreadWait, live map[*spreadWait]bool) {
	for changed := true; changed; {
		changed = false
		pending := map[*corev1.Pod]bool{}
		for w := range live {
			pending[w.pod] = true
		}
		for i := range waits {
			w := &waits[i]
			if !live[w] || w.failed {
				continue
			}
			v := w.view
			cnt := func(e string) int {
				n := v.counts[e]
				for _, q := range v.pending[e] {
					if pending[q] {
						n--
					}
				}
				return n
			}
			own := cnt(w.domain)
			if w.matches {
				own++
			}
			lowest := 0
			if len(v.counts) >= v.minDomains {
				lowest = own
				for e := range v.counts {
					lowest = min(lowest, cnt(e))
				}
			}
			if own-lowest <= v.maxSkew {
				delete(live, w)
				changed = true
			}
		}
	}
}

// reportWaits fails each pod with a pair left by spreadWaits (not one whose final state already
// failed), once.
func (c *checker) reportWaits(waits []spreadWait, live map[*spreadWait]bool, holds func(*corev1.Pod, *spreadView) bool,
	refused func(*spreadWait) (string, int, bool)) {
	reported := map[*corev1.Pod]bool{}
	for i := range waits {
		w := &waits[i]
		if !live[w] || w.failed || reported[w.pod] {
			continue
		}
		reported[w.pod] = true
		at, lowest, _ := refused(w)
		var waiting []string
		for _, x := range w.view.pending[at] {
			if holds(x, w.view) {
				waiting = append(waiting, nodeplan.PodKey(x))
			}
		}
		c.fail(RuleTopologySpread, podDesc(nodeplan.PodKey(w.pod)), "on %s: may wait forever: %s=%s ends with %d matching pods, but while %v (held back by other spread constraints, which wait in turn) are pending, %s=%s has only %d: skew %d > maxSkew %d (domains %v)",
			w.t.desc, w.view.key, w.domain, w.own, waiting, w.view.key, at, lowest, w.own-lowest, w.view.maxSkew, fmtCounts(w.view.counts))
	}
}

func fmtCounts(counts map[string]int) string {
	s := ""
	for i, k := range slices.Sorted(maps.Keys(counts)) {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%s:%d", k, counts[k])
	}
	return "[" + s + "]"
}

// launchableZones are the zones some pool could launch a node into that is eligible for the
// pod's spread: an available offering of a type in the pool's catalog that the pool's
// requirements allow — and, as the policies say, the pod's node affinity and tolerations.
func (c *checker) launchableZones(p *corev1.Pod, honorAff, honorTaints bool) []string {
	zones := map[string]bool{}
	for i := range c.in.NodePools {
		np := &c.in.NodePools[i]
		if honorTaints {
			if _, bad := untolerated(p.Spec.Tolerations, np.Template.Taints); bad {
				continue
			}
		}
		its := c.catalog(np.Name)
		for j := range its {
			it := &its[j]
			for _, o := range it.Offerings {
				if !o.Available || zones[o.Zone] {
					continue
				}
				lbls := maps.Clone(np.Template.Labels)
				if lbls == nil {
					lbls = map[string]string{}
				}
				maps.Copy(lbls, it.Labels)
				lbls[nodeplan.LabelInstanceType] = it.Name
				lbls[nodeplan.LabelZone] = o.Zone
				lbls[nodeplan.LabelCapacityType] = string(o.CapacityType)
				lbls[nodeplan.LabelNodePool] = np.Name
				if !np.Template.Requirements.Matches(lbls) {
					continue
				}
				if honorAff {
					if ok, _ := matchNode(p, "", lbls); !ok {
						continue
					}
				}
				zones[o.Zone] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(zones))
}

type located struct {
	pod *corev1.Pod
	t   *target
}

// podAffinity checks required pod affinity and anti-affinity.
//
// Anti-affinity is symmetric in the final state: no pod may share a domain with a pod its
// required anti-affinity selects, whether the incoming pod carries the term or a running pod
// does (kube-scheduler checks both directions).
//
// Affinity is judged per set of required terms (see checkAffinitySet): a carrier's domain needs
// a pod matching all of them that binds on its own, or the group starts there, which needs
// that no such pod exists anywhere.
func (c *checker) podAffinity() {
	var running, everyone []located
	for _, t := range c.all {
		for _, q := range t.bound {
			running = append(running, located{q, t})
		}
	}
	everyone = slices.Clone(running)
	var incoming []located
	for _, t := range c.all {
		for _, p := range t.pods {
			incoming = append(incoming, located{p, t})
		}
	}
	everyone = append(everyone, incoming...)

	sets := map[string]*affinitySet{}
	setOf := map[*corev1.Pod]string{}
	for _, in := range incoming {
		p, t := in.pod, in.t
		who := podDesc(nodeplan.PodKey(p))
		aff, anti := requiredAffinity(p)
		for _, raw := range anti {
			term, err := resolveTerm(p, raw, c.in.Namespaces)
			if err != nil {
				c.fail(RulePodAntiAffinity, who, "has an invalid anti-affinity term: %v", err)
				continue
			}
			d, ok := t.labels[term.key]
			if !ok {
				continue
			}
			for _, q := range everyone {
				if q.pod == p || !term.matches(q.pod) {
					continue
				}
				if v, ok := q.t.labels[term.key]; ok && v == d {
					c.fail(RulePodAntiAffinity, who, "on %s shares %s=%s with pod %s (on %s), which its anti-affinity selects",
						t.desc, term.key, d, nodeplan.PodKey(q.pod), q.t.desc)
					break
				}
			}
		}
		var terms []podTerm
		var ids []string
		for _, raw := range aff {
			term, err := resolveTerm(p, raw, c.in.Namespaces)
			if err != nil {
				c.fail(RulePodAffinity, who, "has an invalid affinity term: %v", err)
				terms = nil
				break
			}
			terms = append(terms, term)
			ids = append(ids, term.id)
		}
		if len(terms) == 0 {
			continue
		}
		slices.Sort(ids)
		id := strings.Join(ids, "\n")
		set := sets[id]
		if set == nil {
			set = &affinitySet{terms: terms}
			sets[id] = set
		}
		set.carriers = append(set.carriers, in)
		setOf[p] = id
	}

	// Running pods' anti-affinity against the pods placed near them.
	for _, r := range running {
		_, anti := requiredAffinity(r.pod)
		for _, raw := range anti {
			term, err := resolveTerm(r.pod, raw, c.in.Namespaces)
			if err != nil {
				continue
			}
			d, ok := r.t.labels[term.key]
			if !ok {
				continue
			}
			for _, in := range incoming {
				if v, ok := in.t.labels[term.key]; ok && v == d && term.matches(in.pod) {
					c.fail(RulePodAntiAffinity, podDesc(nodeplan.PodKey(in.pod)), "on %s shares %s=%s with running pod %s (on %s), whose anti-affinity selects it",
						in.t.desc, term.key, d, nodeplan.PodKey(r.pod), r.t.desc)
				}
			}
		}
	}

	// Affinity is judged per set of required terms: kube-scheduler counts a pod for a pod's
	// affinity only when it matches all of its required terms.
	//
	// A pod only supports another once it can bind itself: running, without required affinity,
	// or with its own affinity met by such pods (or as a valid start). Required affinities that
	// wait on each other with no seed never bind, so the anchored pods are found to a fixpoint.
	ids := slices.Sorted(maps.Keys(sets))
	// fixpoint finds the pods that bind, leaving out the carriers of set exclude (none when
	// ""); blockers gives, for a set, the pods that bind without it: those forbid it a start.
	fixpoint := func(exclude string, blockers func(id string, anchored map[*corev1.Pod]bool) map[*corev1.Pod]bool) map[*corev1.Pod]bool {
		anchored := map[*corev1.Pod]bool{}
		for _, in := range incoming {
			if setOf[in.pod] == "" {
				anchored[in.pod] = true
			}
		}
		for changed := true; changed; {
			changed = false
			for _, id := range ids {
				if id == exclude {
					continue
				}
				for _, cr := range sets[id].carriers {
					if !anchored[cr.pod] && c.affinityHolds(id, sets[id], cr, running, incoming, setOf, anchored, blockers(id, anchored), false) {
						anchored[cr.pod], changed = true, true
					}
				}
			}
		}
		return anchored
	}
	// A group may start only where no pod that binds without it matches: such a pod may bind
	// first, and then the group must follow it. A pod that binds only after the group has
	// started (it follows pods that follow the group) does not stand in the way. Within that
	// world without the group, other groups' starts are judged against the pods anchored so far.
	without := map[string]map[*corev1.Pod]bool{}
	blockers := func(id string, _ map[*corev1.Pod]bool) map[*corev1.Pod]bool {
		if without[id] == nil {
			without[id] = fixpoint(id, func(_ string, anchored map[*corev1.Pod]bool) map[*corev1.Pod]bool { return anchored })
		}
		return without[id]
	}
	anchored := fixpoint("", blockers)
	for _, id := range ids {
		for _, cr := range sets[id].carriers {
			if !anchored[cr.pod] {
				c.affinityHolds(id, sets[id], cr, running, incoming, setOf, anchored, blockers(id, anchored), true)
			}
		}
	}
}

// affinitySet is the placed pods carrying one set of required affinity terms.
type affinitySet struct {
	terms    []podTerm
	carriers []located
}

// affinityHolds reports whether carrier cr of one set of required affinity terms can bind, given
// the pods known to bind (running ones and anchored placed ones); with report, it records why not.
//
// cr needs, in its domain for every term, a pod that matches all the terms and binds before it:
// a running pod, an anchored placed pod that does not carry the same terms (it binds on its
// own), or — in the domain where the group starts — an anchored co-carrier. Otherwise it must
// start the group, which kube-scheduler allows only when no pod anywhere matches: since the
// pending pods bind in an order the plan does not choose, a placed pod that matches without
// carrying the same terms may bind first, and then the group must follow it. So a start is
// valid only when the only matches are the carriers themselves, and only in one domain (the
// first by name with a carrier matching its own terms).
func (c *checker) affinityHolds(id string, set *affinitySet, cr located, running, incoming []located, setOf map[*corev1.Pod]string, anchored, blockers map[*corev1.Pod]bool, report bool) bool {
	matchAll := func(q *corev1.Pod) bool {
		for _, t := range set.terms {
			if !t.matches(q) {
				return false
			}
		}
		return true
	}
	// kube-scheduler only counts matches on nodes with one of the terms' keys.
	hasKey := func(t *target) bool {
		for _, term := range set.terms {
			if _, ok := t.labels[term.key]; ok {
				return true
			}
		}
		return false
	}
	var indep, co []located
	for _, r := range running {
		if matchAll(r.pod) && hasKey(r.t) {
			indep = append(indep, r)
		}
	}
	for _, in := range incoming {
		if !anchored[in.pod] || in.pod == cr.pod || !matchAll(in.pod) || !hasKey(in.t) {
			continue
		}
		if setOf[in.pod] == id {
			co = append(co, in)
		} else {
			indep = append(indep, in)
		}
	}
	// Matches that bind without the group: they forbid it a start.
	var first []located
	for _, r := range running {
		if matchAll(r.pod) && hasKey(r.t) {
			first = append(first, r)
		}
	}
	for _, in := range incoming {
		if blockers[in.pod] && setOf[in.pod] != id && matchAll(in.pod) && hasKey(in.t) {
			first = append(first, in)
		}
	}
	domain := func(t *target) (string, bool) {
		var vals []string
		for _, term := range set.terms {
			v, ok := t.labels[term.key]
			if !ok {
				return term.key, false
			}
			vals = append(vals, term.key+"="+v)
		}
		return strings.Join(vals, ","), true
	}
	supported := func(t *target, by []located) bool {
		for _, term := range set.terms {
			v := t.labels[term.key]
			if !slices.ContainsFunc(by, func(q located) bool {
				w, ok := q.t.labels[term.key]
				return ok && w == v
			}) {
				return false
			}
		}
		return true
	}
	who := podDesc(nodeplan.PodKey(cr.pod))
	d, ok := domain(cr.t)
	if !ok {
		if report {
			c.fail(RulePodAffinity, who, "is on %s, which has no %s label for its pod affinity", cr.t.desc, d)
		}
		return false
	}
	if supported(cr.t, indep) {
		return true
	}
	// A match in cr's own domain does not stand in the way: bound first, it supports cr.
	first = slices.DeleteFunc(first, func(q located) bool { return supported(cr.t, []located{q}) })
	if len(first) > 0 {
		if report {
			q := first[0]
			c.fail(RulePodAffinity, who, "on %s (%s): no pod its affinity selects is there, and it cannot start the group there because pod %s (on %s) matches it elsewhere",
				cr.t.desc, d, nodeplan.PodKey(q.pod), q.t.desc)
		}
		return false
	}
	// A start: the first domain (by name) where a carrier matches its own terms.
	start := ""
	for _, other := range set.carriers {
		if od, ok := domain(other.t); ok && matchAll(other.pod) && (start == "" || od < start) {
			start = od
		}
	}
	// Co-carriers support each other only there: the group's first pod binds in one domain
	// (kube-scheduler lets it ignore its affinity while nothing matches), and from then on
	// every other must join it.
	switch {
	case start == d && (matchAll(cr.pod) || supported(cr.t, co)):
		return true
	case !report:
	case start == "":
		c.fail(RulePodAffinity, who, "on %s (%s): no pod its affinity selects is there or can bind anywhere, and it does not match its own terms, so it cannot start the group",
			cr.t.desc, d)
	case start != d:
		c.fail(RulePodAffinity, who, "on %s (%s): no pod its affinity selects is there, and the group already started in %s",
			cr.t.desc, d, start)
	default:
		c.fail(RulePodAffinity, who, "on %s (%s): no pod its affinity selects is there or can bind anywhere, and it does not match its own terms, so it cannot start the group",
			cr.t.desc, d)
	}
	return false
}
