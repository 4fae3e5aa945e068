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

// The rules here judge the final placement. A plan is valid when some order of placing its
// pods one at a time would pass kube-scheduler's filters; for spread and affinity that comes
// down to the final counts, as each function's comment explains.

// spreadID identifies equal constraints of pods in one namespace.
func spreadID(ns string, tsc corev1.TopologySpreadConstraint, sel labels.Selector) string {
	minDomains := int32(1)
	if tsc.MinDomains != nil {
		minDomains = *tsc.MinDomains
	}
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
// them. Every domain holding a carrier must end within maxSkew of the final minimum. That is
// the order-free condition: kube-scheduler binds the pending pods in an order the plan does not
// choose and evaluates each carrier against the pods bound so far, retrying a refused one
// whenever a matching pod binds; a domain's count never exceeds its final count, a fully bound
// domain is at its final count, so a pending carrier in the least filled domain that still has
// pending carriers can always bind once the pods without the constraint are bound.
func (c *checker) topologySpread() {
	reported := map[string]bool{}
	for _, t := range c.all {
		for _, p := range t.pods {
			for _, tsc := range p.Spec.TopologySpreadConstraints {
				if tsc.WhenUnsatisfiable != corev1.DoNotSchedule {
					continue
				}
				c.checkSpread(p, t, tsc, reported)
			}
		}
	}
}

func (c *checker) checkSpread(p *corev1.Pod, t *target, tsc corev1.TopologySpreadConstraint, reported map[string]bool) {
	who := podDesc(nodeplan.PodKey(p))
	sel, err := selectorWithKeys(tsc.LabelSelector, p, tsc.MatchLabelKeys, nil)
	if err != nil {
		c.fail(RuleTopologySpread, who, "has an invalid selector: %v", err)
		return
	}
	id := spreadID(p.Namespace, tsc, sel)
	key := tsc.TopologyKey
	d, ok := t.labels[key]
	if !ok {
		c.fail(RuleTopologySpread, who, "is on %s, which has no %s label for its spread constraint", t.desc, key)
		return
	}
	if sel.Empty() {
		// kube-scheduler counts no pods for an empty selector ({}): the skew is at most 1.
		return
	}
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
	counts := map[string]int{}
	for _, t2 := range c.all {
		if !eligible(t2.labels, t2.name, t2.taints) {
			continue
		}
		v := t2.labels[key]
		n := counts[v]
		for _, q := range t2.bound {
			if q.DeletionTimestamp == nil && q.Namespace == p.Namespace && sel.Matches(labels.Set(q.Labels)) {
				n++
			}
		}
		for _, q := range t2.pods {
			if q.Namespace == p.Namespace && sel.Matches(labels.Set(q.Labels)) {
				n++
			}
		}
		counts[v] = n
	}
	if key == nodeplan.LabelZone {
		for _, z := range c.launchableZones(p, honorAff, honorTaints) {
			counts[z] += 0
		}
	}
	self := counts[d]
	if !eligible(t.labels, t.name, t.taints) && sel.Matches(labels.Set(p.Labels)) {
		self++
	}
	minDomains := 1
	if tsc.MinDomains != nil {
		minDomains = int(*tsc.MinDomains)
	}
	lowest, lowestAt := 0, ""
	if len(counts) >= minDomains {
		first := true
		for _, v := range slices.Sorted(maps.Keys(counts)) {
			if first || counts[v] < lowest {
				lowest, lowestAt, first = counts[v], v, false
			}
		}
	}
	if skew := self - lowest; skew > int(tsc.MaxSkew) {
		if reported[id+"\x00"+d] {
			return
		}
		reported[id+"\x00"+d] = true
		at := "fewer domains than minDomains"
		if lowestAt != "" {
			at = fmt.Sprintf("%s=%s", key, lowestAt)
		}
		c.fail(RuleTopologySpread, who, "on %s: %s=%s has %d matching pods, the minimum is %d (%s): skew %d > maxSkew %d (domains %v)",
			t.desc, key, d, self, lowest, at, skew, tsc.MaxSkew, fmtCounts(counts))
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
