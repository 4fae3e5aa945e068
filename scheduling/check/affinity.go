package check

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

// located is a pod and where it is: a running pod on its node, or a pending pod where the
// plan puts it.
type located struct {
	pod *corev1.Pod
	t   *target
	// placed: a pending pod the plan places (otherwise a running pod).
	placed bool
}

// affinityCheck is what podAffinity works from: where every pod is, the sets of required
// affinity terms, and indexes built once — which pods a term selects, per domain — so that
// judging one pod costs what its domain holds, not a scan of the whole cluster.
type affinityCheck struct {
	c *checker
	// running are the bound pods and incoming the placed pending pods, each in target order;
	// everyone is both, running first. Violations name the first pod found in these orders.
	running, incoming, everyone []located
	sets                        map[string]*affinitySet
	// ids are the sets' ids, sorted: the order in which sets are judged.
	ids   []string
	setOf map[*corev1.Pod]string
	// selecting caches, per term (termKey), the pods it selects on targets with its topology
	// key, grouped by the key's value: many pods carry equal terms.
	selecting map[string]map[string][]located
	// without caches, per set, the pods that bind when its carriers are left out.
	without map[string]map[*corev1.Pod]bool
}

// podAffinity checks required pod affinity and anti-affinity.
//
// Anti-affinity is symmetric in the final state: no pod may share a domain with a pod its
// required anti-affinity selects, whether the incoming pod carries the term or a running pod
// does (kube-scheduler checks both directions).
//
// Affinity is judged per set of required terms (see holds): a carrier's domain needs a pod
// matching all of them that binds on its own, or the group starts there, which needs that no
// such pod exists anywhere.
func (c *checker) podAffinity() {
	a := c.newAffinityCheck()
	// Per placed pod, as kube-scheduler meets it: its anti-affinity, then its affinity terms
	// (an invalid one is reported here and keeps the pod out of every set).
	for _, in := range a.incoming {
		a.incomingAntiAffinity(in)
		a.collectAffinity(in)
	}
	a.runningAntiAffinity()
	a.judgeAffinity()
}

func (c *checker) newAffinityCheck() *affinityCheck {
	a := &affinityCheck{c: c, sets: map[string]*affinitySet{}, setOf: map[*corev1.Pod]string{},
		selecting: map[string]map[string][]located{}, without: map[string]map[*corev1.Pod]bool{}}
	for _, t := range c.all {
		for _, q := range t.bound {
			a.running = append(a.running, located{pod: q, t: t})
		}
	}
	for _, t := range c.all {
		for _, p := range t.pods {
			a.incoming = append(a.incoming, located{pod: p, t: t, placed: true})
		}
	}
	a.everyone = append(slices.Clone(a.running), a.incoming...)
	return a
}

// termKey identifies terms that select the same pods in the same domains. A term's id alone
// does not: a nil selector (selects nothing) and an empty one (selects everything) print alike.
func termKey(t podTerm) string { return t.id + "|" + strconv.FormatBool(t.selector.Empty()) }

// selected returns the pods (running, then placed) that term selects on targets with its
// topology key, grouped by the key's value, in everyone's order. Computed once per term: the
// pods of a deployment carry equal terms, and scanning the cluster per pod was quadratic.
func (a *affinityCheck) selected(term podTerm) map[string][]located {
	k := termKey(term)
	if m, ok := a.selecting[k]; ok {
		return m
	}
	m := map[string][]located{}
	for _, q := range a.everyone {
		if v, ok := q.t.labels[term.key]; ok && term.matches(q.pod) {
			m[v] = append(m[v], q)
		}
	}
	a.selecting[k] = m
	return m
}

// incomingAntiAffinity fails a placed pod that shares a domain with a pod (running or placed)
// one of its required anti-affinity terms selects; the first such pod is named.
func (a *affinityCheck) incomingAntiAffinity(in located) {
	p, t := in.pod, in.t
	who := podDesc(nodeplan.PodKey(p))
	_, anti := requiredAffinity(p)
	for _, raw := range anti {
		term, err := resolveTerm(p, raw, a.c.in.Namespaces)
		if err != nil {
			a.c.fail(RulePodAntiAffinity, who, "has an invalid anti-affinity term: %v", err)
			continue
		}
		d, ok := t.labels[term.key]
		if !ok {
			continue
		}
		for _, q := range a.selected(term)[d] {
			if q.pod != p {
				a.c.fail(RulePodAntiAffinity, who, "on %s shares %s=%s with pod %s (on %s), which its anti-affinity selects",
					t.desc, term.key, d, nodeplan.PodKey(q.pod), q.t.desc)
				break
			}
		}
	}
}

// runningAntiAffinity fails each placed pod that shares a domain with a running pod whose
// required anti-affinity selects it: kube-scheduler checks existing pods' terms too. A running
// pod's invalid term is not the plan's fault and is skipped.
func (a *affinityCheck) runningAntiAffinity() {
	for _, r := range a.running {
		_, anti := requiredAffinity(r.pod)
		for _, raw := range anti {
			term, err := resolveTerm(r.pod, raw, a.c.in.Namespaces)
			if err != nil {
				continue
			}
			d, ok := r.t.labels[term.key]
			if !ok {
				continue
			}
			for _, in := range a.selected(term)[d] {
				if in.placed {
					a.c.fail(RulePodAntiAffinity, podDesc(nodeplan.PodKey(in.pod)), "on %s shares %s=%s with running pod %s (on %s), whose anti-affinity selects it",
						in.t.desc, term.key, d, nodeplan.PodKey(r.pod), r.t.desc)
				}
			}
		}
	}
}

// collectAffinity adds a placed pod with required affinity to the set of its terms: pods whose
// terms are equal, in any order, are one set. A pod with an invalid term is reported and joins
// no set (it then binds as if it had no affinity: the error is the violation).
func (a *affinityCheck) collectAffinity(in located) {
	p := in.pod
	aff, _ := requiredAffinity(p)
	var terms []podTerm
	var ids []string
	for _, raw := range aff {
		term, err := resolveTerm(p, raw, a.c.in.Namespaces)
		if err != nil {
			a.c.fail(RulePodAffinity, podDesc(nodeplan.PodKey(p)), "has an invalid affinity term: %v", err)
			return
		}
		terms = append(terms, term)
		ids = append(ids, term.id)
	}
	if len(terms) == 0 {
		return
	}
	slices.Sort(ids)
	id := strings.Join(ids, "\n")
	s := a.sets[id]
	if s == nil {
		s = &affinitySet{id: id, terms: terms}
		a.sets[id] = s
	}
	s.carriers = append(s.carriers, carrier{located: in})
	a.setOf[p] = id
}

// judgeAffinity finds the carriers that bind and fails the others.
//
// kube-scheduler counts a pod for a pod's affinity only when it matches all of its required
// terms, hence the sets. A pod only supports another once it can bind itself: running, without
// required affinity, or with its own affinity met by such pods (or as a valid start). Required
// affinities that wait on each other with no seed never bind, so the pods that bind
// ("anchored") are found to a fixpoint.
func (a *affinityCheck) judgeAffinity() {
	a.ids = slices.Sorted(maps.Keys(a.sets))
	for _, id := range a.ids {
		a.sets[id].prepare(a)
	}
	anchored := a.fixpoint("")
	for _, id := range a.ids {
		s := a.sets[id]
		for i := range s.carriers {
			if cr := &s.carriers[i]; !anchored[cr.pod] {
				a.holds(s, cr, anchored, func() map[*corev1.Pod]bool { return a.bindWithout(id) }, true)
			}
		}
	}
}

// fixpoint finds the pods that bind, leaving out the carriers of set exclude (none when "").
// Sets go in id order and carriers in placement order, each judged against the pods anchored
// so far, until a pass anchors none: the order is part of the rule, since a start's blockers
// (below) can grow as pods anchor.
//
// A group may start only where no pod that binds without it matches: such a pod may bind first,
// and then the group must follow it. So a set's blockers are the pods that bind in the world
// without it (bindWithout); a pod that binds only after the group has started (it follows pods
// that follow the group) does not stand in the way. Within that world, other groups' starts
// are judged against the pods anchored so far.
func (a *affinityCheck) fixpoint(exclude string) map[*corev1.Pod]bool {
	anchored := map[*corev1.Pod]bool{}
	for _, in := range a.incoming {
		if a.setOf[in.pod] == "" {
			anchored[in.pod] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for _, id := range a.ids {
			if id == exclude {
				continue
			}
			s := a.sets[id]
			blockers := func() map[*corev1.Pod]bool { return anchored }
			if exclude == "" {
				blockers = func() map[*corev1.Pod]bool { return a.bindWithout(id) }
			}
			for i := range s.carriers {
				if cr := &s.carriers[i]; !anchored[cr.pod] && a.holds(s, cr, anchored, blockers, false) {
					anchored[cr.pod], changed = true, true
				}
			}
		}
	}
	return anchored
}

// bindWithout returns the pods that bind when set id's carriers are left out, computed once
// per set and only for sets whose start is in question.
func (a *affinityCheck) bindWithout(id string) map[*corev1.Pod]bool {
	if a.without[id] == nil {
		a.without[id] = a.fixpoint(id)
	}
	return a.without[id]
}
