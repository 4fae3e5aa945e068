package check

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

// affinitySet is the placed pods carrying one set of required affinity terms, and the facts
// about it that do not change while the fixpoint runs, found once by prepare.
type affinitySet struct {
	id       string
	terms    []podTerm
	carriers []carrier
	// others are the pods, running then placed, that match every term on a target with one of
	// the terms' keys (kube-scheduler counts matches only there) and do not carry the set;
	// other[i] groups them by their value of terms[i]'s key. own[i] groups the carriers so.
	others     []located
	other, own []map[string][]located
	// start is the domain where the group may start: the first by name with a carrier matching
	// its own terms ("" when none does).
	start string
}

// carrier is one pod of a set where the plan puts it.
type carrier struct {
	located
	// domain is the pod's values of the terms' keys ("k=v,…"); when hasDomain is false it is
	// the first key its target lacks.
	domain    string
	hasDomain bool
	// self: the pod matches its own terms.
	self bool
}

func (s *affinitySet) matchesAll(q *corev1.Pod) bool {
	for _, t := range s.terms {
		if !t.matches(q) {
			return false
		}
	}
	return true
}

func (s *affinitySet) hasKey(t *target) bool {
	return slices.ContainsFunc(s.terms, func(term podTerm) bool { _, ok := t.labels[term.key]; return ok })
}

// domainOf is t's values of the terms' keys, or the first key t lacks.
func (s *affinitySet) domainOf(t *target) (string, bool) {
	var vals []string
	for _, term := range s.terms {
		v, ok := t.labels[term.key]
		if !ok {
			return term.key, false
		}
		vals = append(vals, term.key+"="+v)
	}
	return strings.Join(vals, ","), true
}

// prepare matches the set's terms against every pod once and finds each carrier's domain and
// the group's start; holds then only looks pods up by domain.
func (s *affinitySet) prepare(a *affinityCheck) {
	s.other = make([]map[string][]located, len(s.terms))
	s.own = make([]map[string][]located, len(s.terms))
	for i := range s.terms {
		s.other[i], s.own[i] = map[string][]located{}, map[string][]located{}
	}
	for _, q := range a.everyone {
		if !s.matchesAll(q.pod) || !s.hasKey(q.t) {
			continue
		}
		byDomain := s.own
		if mine := q.placed && a.setOf[q.pod] == s.id; !mine {
			s.others = append(s.others, q)
			byDomain = s.other
		}
		for i, term := range s.terms {
			if v, ok := q.t.labels[term.key]; ok {
				byDomain[i][v] = append(byDomain[i][v], q)
			}
		}
	}
	for i := range s.carriers {
		cr := &s.carriers[i]
		cr.domain, cr.hasDomain = s.domainOf(cr.t)
		cr.self = s.matchesAll(cr.pod)
		if cr.hasDomain && cr.self && (s.start == "" || cr.domain < s.start) {
			s.start = cr.domain
		}
	}
}

// supported reports whether, for every term, some pod of byDomain that ok accepts is in cr's
// value of the term's key.
func (s *affinitySet) supported(cr *carrier, byDomain []map[string][]located, ok func(located) bool) bool {
	for i, term := range s.terms {
		if !slices.ContainsFunc(byDomain[i][cr.t.labels[term.key]], ok) {
			return false
		}
	}
	return true
}

// firstBlocker returns the first pod that forbids cr's group a start in cr's domain: a match
// that binds without the group (running, or among blockers) outside cr's domain — one inside
// it, bound first, would support cr instead.
func (s *affinitySet) firstBlocker(cr *carrier, blockers map[*corev1.Pod]bool) (located, bool) {
	for _, q := range s.others {
		if q.placed && !blockers[q.pod] {
			continue
		}
		inside := true
		for _, term := range s.terms {
			if w, ok := q.t.labels[term.key]; !ok || w != cr.t.labels[term.key] {
				inside = false
				break
			}
		}
		if !inside {
			return q, true
		}
	}
	return located{}, false
}

// holds reports whether carrier cr of set s can bind, given the pods known to bind (running
// ones and anchored placed ones); with report, it records why not. blockers gives the pods
// that bind without the group, asked for only when a start is in question.
//
// cr needs, in its domain for every term, a pod that matches all the terms and binds before it:
// a running pod, an anchored placed pod that does not carry the same terms (it binds on its
// own), or — in the domain where the group starts — an anchored co-carrier. Otherwise it must
// start the group, which kube-scheduler allows only when no pod anywhere matches: since the
// pending pods bind in an order the plan does not choose, a placed pod that matches without
// carrying the same terms may bind first, and then the group must follow it. So a start is
// valid only when the only matches are the carriers themselves, and only in one domain (the
// first by name with a carrier matching its own terms).
func (a *affinityCheck) holds(s *affinitySet, cr *carrier, anchored map[*corev1.Pod]bool, blockers func() map[*corev1.Pod]bool, report bool) bool {
	who := podDesc(nodeplan.PodKey(cr.pod))
	if !cr.hasDomain {
		if report {
			a.c.fail(RulePodAffinity, who, "is on %s, which has no %s label for its pod affinity", cr.t.desc, cr.domain)
		}
		return false
	}
	if s.supported(cr, s.other, func(q located) bool { return !q.placed || anchored[q.pod] }) {
		return true
	}
	if q, ok := s.firstBlocker(cr, blockers()); ok {
		if report {
			a.c.fail(RulePodAffinity, who, "on %s (%s): no pod its affinity selects is there, and it cannot start the group there because pod %s (on %s) matches it elsewhere",
				cr.t.desc, cr.domain, nodeplan.PodKey(q.pod), q.t.desc)
		}
		return false
	}
	// Co-carriers support each other only in the start: the group's first pod binds in one
	// domain (kube-scheduler lets it ignore its affinity while nothing matches), and from then
	// on every other must join it.
	if s.start == cr.domain && (cr.self || s.supported(cr, s.own, func(q located) bool { return q.pod != cr.pod && anchored[q.pod] })) {
		return true
	}
	if !report {
		return false
	}
	if s.start != "" && s.start != cr.domain {
		a.c.fail(RulePodAffinity, who, "on %s (%s): no pod its affinity selects is there, and the group already started in %s",
			cr.t.desc, cr.domain, s.start)
	} else {
		a.c.fail(RulePodAffinity, who, "on %s (%s): no pod its affinity selects is there or can bind anywhere, and it does not match its own terms, so it cannot start the group",
			cr.t.desc, cr.domain)
	}
	return false
}
