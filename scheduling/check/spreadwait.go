package check

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

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
// with every pod of the set pending at once; when that leaves nothing, it is tried again from
// each view and domain of the set with the pods counted there apart (seededWaits). The plan
// passes when nothing is left. (Whether
// kube-scheduler really meets such a set depends on the order it binds in: seed 108 of the
// differential test did.)
func (c *checker) spreadWaits(waits []spreadWait) {
	g := &waitGraph{waits: waits, carried: map[*corev1.Pod][]*spreadWait{}, live: map[*spreadWait]bool{}}
	for i := range waits {
		w := &waits[i]
		g.carried[w.pod] = append(g.carried[w.pod], w)
		g.live[w] = true
	}
	g.shrink()
	left := maps.Clone(g.live)
	c.settleWaits(waits, g.live)
	if len(g.live) == 0 && len(left) > 0 {
		c.seededWaits(g, left)
		g.count()
	}
	c.reportWaits(g)
}

// shrink drops the live pairs that cannot be refused forever until none is left to drop.
func (g *waitGraph) shrink() {
	for changed := true; changed; {
		changed = false
		g.count()
		for i := range g.waits {
			w := &g.waits[i]
			if _, _, r := g.refused(w); g.live[w] && !r {
				delete(g.live, w)
				changed = true
			}
		}
	}
}

// seededWaits looks for the deadlocks settling from every pair left at once misses, when the
// pods of two deadlocks turned opposite ways are pending together and nothing is then refused.
// For each view and domain of a pair left (in order), the pods the view counts there that do not
// carry it are taken as bound: their pairs are dropped, the pairs left are shrunk and settled
// again. g.live ends as the first set not empty, or empty.
func (c *checker) seededWaits(g *waitGraph, left map[*spreadWait]bool) {
	type seed struct {
		v *spreadView
		d string
	}
	tried := map[seed]bool{}
	for i := range g.waits {
		w := &g.waits[i]
		sd := seed{w.view, w.domain}
		if !left[w] || tried[sd] {
			continue
		}
		tried[sd] = true
		bound := map[*corev1.Pod]bool{}
		for _, q := range w.view.pending[w.domain] {
			if !slices.ContainsFunc(g.carried[q], func(x *spreadWait) bool { return x.view == w.view }) {
				bound[q] = true
			}
		}
		g.live = map[*spreadWait]bool{}
		for x := range left {
			if !bound[x.pod] {
				g.live[x] = true
			}
		}
		g.shrink()
		c.settleWaits(g.waits, g.live)
		if len(g.live) > 0 {
			return
		}
	}
}

// waitGraph is spreadWaits' working state: every (carrier, constraint) pair, the pairs of each
// pod, the pairs still live (that may refuse forever), and per view and domain how many of its
// pending pods a live pair of another view may hold back.
type waitGraph struct {
	waits   []spreadWait
	carried map[*corev1.Pod][]*spreadWait
	live    map[*spreadWait]bool
	held    map[*spreadView]map[string]int
	// low are, per view, its two least filled domains counting held pods as absent (ties by
	// name): the least other than a carrier's own is one of them, so refused is O(1) and not a
	// pass over every domain (a hostname view has one per node).
	low map[*spreadView][2]lowDomain
}

// lowDomain is a domain and its count; at is "" when there is no such domain.
type lowDomain struct {
	at string
	n  int
}

// holds reports whether q, if pending, may stay pending for a constraint other than v.
func (g *waitGraph) holds(q *corev1.Pod, v *spreadView) bool {
	return slices.ContainsFunc(g.carried[q], func(w *spreadWait) bool { return g.live[w] && w.view != v })
}

// count recomputes held and low from the live pairs: they shrink as pairs are dropped.
func (g *waitGraph) count() {
	g.held = map[*spreadView]map[string]int{}
	g.low = map[*spreadView][2]lowDomain{}
	for i := range g.waits {
		v := g.waits[i].view
		if g.held[v] != nil {
			continue
		}
		g.held[v] = map[string]int{}
		for e, qs := range v.pending {
			for _, q := range qs {
				if g.holds(q, v) {
					g.held[v][e]++
				}
			}
		}
		var low [2]lowDomain
		for _, e := range v.domains {
			n := v.counts[e] - g.held[v][e]
			switch {
			case low[0].at == "" || n < low[0].n:
				low[1], low[0] = low[0], lowDomain{e, n}
			case low[1].at == "" || n < low[1].n:
				low[1] = lowDomain{e, n}
			}
		}
		g.low[v] = low
	}
}

// refused reports whether w's carrier may be refused forever: its own count exceeds by more
// than maxSkew the least, over the other domains, of the final count less the held pods; and
// which domain that is, with its count.
func (g *waitGraph) refused(w *spreadWait) (string, int, bool) {
	v := w.view
	if w.failed {
		return "", 0, true
	}
	if len(v.counts) < v.minDomains {
		return "", 0, false
	}
	low := g.low[v][0]
	if low.at == w.domain {
		low = g.low[v][1]
	}
	return low.at, low.n, low.at != "" && w.own-low.n > v.maxSkew
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
func (c *checker) reportWaits(g *waitGraph) {
	reported := map[*corev1.Pod]bool{}
	for i := range g.waits {
		w := &g.waits[i]
		if !g.live[w] || w.failed || reported[w.pod] {
			continue
		}
		reported[w.pod] = true
		at, lowest, _ := g.refused(w)
		var waiting []string
		for _, x := range w.view.pending[at] {
			if g.holds(x, w.view) {
				waiting = append(waiting, nodeplan.PodKey(x))
			}
		}
		c.fail(RuleTopologySpread, podDesc(nodeplan.PodKey(w.pod)), "on %s: may wait forever: %s=%s ends with %d matching pods, but while %v (held back by other spread constraints, which wait in turn) are pending, %s=%s has only %d: skew %d > maxSkew %d (domains %v)",
			w.t.desc, w.view.key, w.domain, w.own, waiting, w.view.key, at, lowest, w.own-lowest, w.view.maxSkew, fmtCounts(w.view.counts))
	}
}
