package topology

import (
	"maps"
	"math"
	"slices"
)

// Member is a group of pods taking part in one split over a key: the domains it may be placed
// in (cheapest first), the families it carries and those that count its pods, and, as the
// split goes, how many of its pods each domain takes.
type Member struct {
	// Domains it may go to, in the order ties are broken, and Room, when set (even empty), the
	// most of its pods each can hold (existing nodes' room where no pool can launch; a negative
	// value is no limit). With Room set, pods no domain has room for are left without a
	// reason (Why empty): the spread is not what stops them.
	Domains []string
	Room    []int
	Carries []*Family
	Counted []*Family
	Kinds   []Kind // per Counted
	// Single: its pods share one node, so one domain takes them all.
	Single bool

	Parts []int // per Domains, the pods it takes there
	Left  int   // pods not given a domain yet
	// Stuck: some pods cannot be given a domain; Why says why.
	Stuck bool
	Why   string

	// blockers are, when it got stuck, the domains its own constraints admitted but where it
	// would have taken a constraint it only counts for over maxSkew for that constraint's
	// carriers there (Assign's retry moves those carriers).
	blockers []heldAt
}

// heldAt is a family's carriers in one domain.
type heldAt struct {
	f *Family
	v string
}

// NewMember is a member of pods pods that may go to domains.
func NewMember(pods int, domains []string) *Member {
	return &Member{Domains: domains, Parts: make([]int, len(domains)), Left: pods}
}

// Assign gives each pod of movers and carriers a domain: pods that only count go first, each to
// its least filled domain (kube-scheduler never refuses a pod for a constraint it does not
// carry, but counts it); then the carriers, in the order Order gives, one pod at a time round
// the members of each layer, each to the least filled domain where every constraint it carries
// holds and no domain holding carriers of a constraint it counts for goes over. A member whose
// pods share a node takes one domain for all of them.
//
// Members that count for each other's constraints share a layer, and there the turns can go
// wrong: a carrier takes a domain early, and a later member, which only counts for its
// constraint, finds that domain the only one its own constraints admit, and the carrier's
// count would go over. kube-scheduler would bind that member (it judges a pod by its own
// constraints only), so Assign tries again with those carriers steered to other domains —
// a retry per new (constraint, domain) found in the way, at most maxRetries — and keeps the
// attempt that gives the most pods a domain (the first among equals).
func Assign(movers, carriers []*Member) {
	all := slices.Concat(movers, carriers)
	start := snapshot(all)
	avoid := map[heldAt]bool{}
	best, bestGiven := start, -1
	for try := 0; ; try++ {
		start.restore(all)
		assignOnce(movers, carriers, avoid)
		if try == 0 && !anyBlockers(all) {
			return // nothing was in anyone's way: the first attempt stands
		}
		given := 0
		for _, m := range all {
			given += m.given()
		}
		if given > bestGiven {
			best, bestGiven = snapshot(all), given
		}
		added := false
		for _, m := range all {
			for _, b := range m.blockers {
				if !avoid[b] {
					avoid[b], added = true, true
				}
			}
		}
		if !added || try == maxRetries {
			break
		}
	}
	best.restore(all)
}

// anyBlockers reports whether some member got stuck with carriers in its way.
func anyBlockers(ms []*Member) bool {
	return slices.ContainsFunc(ms, func(m *Member) bool { return len(m.blockers) > 0 })
}

// maxRetries bounds Assign's retries: each moves the carriers out of one more domain where they
// were in the way; a few cover what the drawn mixes show, and each costs a whole split.
const maxRetries = 4

// assignOnce is one attempt of Assign, with the carriers of a family steered away from the
// domains avoid marks for it (taken only where no other domain fits).
func assignOnce(movers, carriers []*Member, avoid map[heldAt]bool) {
	for _, m := range movers {
		for m.Left > 0 && m.assignOne(avoid) {
		}
	}
	for _, layer := range Order(carriers) {
		for progress := true; progress; {
			progress = false
			for _, m := range layer {
				if m.Left == 0 || m.Stuck {
					continue
				}
				if m.assignOne(avoid) {
					progress = true
				}
			}
		}
	}
	for _, m := range slices.Concat(movers, carriers) {
		if m.Left > 0 && !m.Stuck {
			m.block()
		}
	}
}

// given is how many of m's pods have a domain.
func (m *Member) given() int {
	n := 0
	for _, x := range m.Parts {
		n += x
	}
	return n
}

// splitState is what an attempt of Assign changes: every member's share and every family's
// counts, to start each attempt alike and to return to the best.
type splitState struct {
	members []memberState
	fams    map[*Family]famState
}

type memberState struct {
	parts    []int
	left     int
	stuck    bool
	why      string
	blockers []heldAt
}

type famState struct {
	lo, hi map[string]int
	held   map[string]bool
}

func snapshot(ms []*Member) splitState {
	st := splitState{fams: map[*Family]famState{}}
	for _, m := range ms {
		st.members = append(st.members, memberState{slices.Clone(m.Parts), m.Left, m.Stuck, m.Why, slices.Clone(m.blockers)})
		for _, f := range slices.Concat(m.Carries, m.Counted) {
			if _, ok := st.fams[f]; !ok {
				st.fams[f] = famState{maps.Clone(f.Lo), maps.Clone(f.Hi), maps.Clone(f.Held)}
			}
		}
	}
	return st
}

func (st splitState) restore(ms []*Member) {
	for i, m := range ms {
		s := st.members[i]
		m.Parts, m.Left, m.Stuck, m.Why, m.blockers = slices.Clone(s.parts), s.left, s.stuck, s.why, slices.Clone(s.blockers)
	}
	for f, s := range st.fams {
		f.Lo, f.Hi, f.Held = maps.Clone(s.lo), maps.Clone(s.hi), maps.Clone(s.held)
	}
}

// Order splits carriers into layers to assign one after the other: a member some family counts
// comes before that family's other carriers, so that their domains are chosen knowing its pods.
// kube-scheduler never refuses a pod for a constraint it does not carry; the carriers of that
// constraint must make room, not it — placed first, it cannot be blocked by a domain they
// already hold. Members that count for each other's families (both carry one constraint, or a
// cycle of them) share a layer and take turns. In each layer, members with fewer domains come
// first: one that may go to a single domain takes its share there before others, who could go
// elsewhere, fill it. The order is deterministic: ties keep carriers' order.
func Order(carriers []*Member) [][]*Member {
	ms := slices.Clone(carriers)
	slices.SortStableFunc(ms, func(a, b *Member) int { return len(a.Domains) - len(b.Domains) })
	// before[i] lists the members that must not come before ms[i]: the other carriers of a
	// family counting ms[i]'s pods (each once, in ms's order).
	carriersOf := map[*Family][]int{}
	for j, o := range ms {
		for _, f := range o.Carries {
			carriersOf[f] = append(carriersOf[f], j)
		}
	}
	before := make([][]int, len(ms))
	for i, m := range ms {
		for _, f := range m.Counted {
			for _, j := range carriersOf[f] {
				if j != i {
					before[i] = append(before[i], j)
				}
			}
		}
		slices.Sort(before[i])
		before[i] = slices.Compact(before[i])
	}
	return components(ms, before)
}

// components is Tarjan's strongly connected components of the graph edges over ms, in
// topological order (an edge's source's component first), each component in ms's order.
func components(ms []*Member, edges [][]int) [][]*Member {
	index, low := make([]int, len(ms)), make([]int, len(ms))
	onStack := make([]bool, len(ms))
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var out [][]*Member
	next := 0
	var visit func(v int)
	visit = func(v int) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range edges[v] {
			switch {
			case index[w] < 0:
				visit(w)
				low[v] = min(low[v], low[w])
			case onStack[w]:
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var comp []int
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			comp = append(comp, w)
			if w == v {
				break
			}
		}
		slices.Sort(comp)
		layer := make([]*Member, len(comp))
		for i, w := range comp {
			layer[i] = ms[w]
		}
		out = append(out, layer)
	}
	for v := range ms {
		if index[v] < 0 {
			visit(v)
		}
	}
	// Tarjan emits a component after every component its edges reach: reversed, sources first.
	slices.Reverse(out)
	return out
}

// assignOne puts one more pod of m in the least filled domain that keeps every constraint,
// domains avoid marks for a family m carries last; it reports whether it could. When it cannot,
// it notes the carriers in its way (blockers).
func (m *Member) assignOne(avoid map[heldAt]bool) bool {
	if m.Single {
		if i := slices.IndexFunc(m.Parts, func(x int) bool { return x > 0 }); i >= 0 {
			// Its domain is chosen: the others may only follow it there.
			if !m.Fits(i, 1) {
				m.noteBlockers(i, 1)
				m.block()
				return false
			}
			m.Take(i, 1)
			return true
		}
	}
	best, bestScore := -1, math.MaxInt
	for i := range m.Domains {
		if !m.Fits(i, 1) {
			continue
		}
		score := 0
		for _, f := range m.Carries {
			score += f.Hi[m.Domains[i]]
			if avoid[heldAt{f, m.Domains[i]}] {
				score += avoidPenalty
			}
		}
		for _, f := range m.Counted {
			score += f.Hi[m.Domains[i]]
		}
		if score < bestScore {
			best, bestScore = i, score
		}
	}
	if best < 0 {
		for i := range m.Domains {
			m.noteBlockers(i, 1)
		}
		m.block()
		return false
	}
	m.Take(best, 1)
	return true
}

// avoidPenalty outweighs any count: an avoided domain is taken only where nothing else fits.
const avoidPenalty = 1 << 30

// noteBlockers records, when n more pods fit m's i-th domain but for the carriers there of
// constraints m only counts for, those carriers.
func (m *Member) noteBlockers(i, n int) {
	if m.Room != nil && m.Room[i] >= 0 && m.Parts[i]+n > m.Room[i] {
		return
	}
	v := m.Domains[i]
	for _, f := range m.Carries {
		add := 0
		if slices.Contains(m.Counted, f) {
			add = n
		}
		if !f.Admits(v, add) {
			return
		}
	}
	for _, f := range m.Counted {
		if f.Held[v] && !slices.Contains(m.Carries, f) && f.Over(v, n) {
			m.blockers = append(m.blockers, heldAt{f, v})
		}
	}
}

// Fits reports whether n more of m's pods may go to its i-th domain: it has room for them,
// every constraint m carries holds there, and every constraint it counts for still holds for
// the carriers in that domain.
func (m *Member) Fits(i, n int) bool {
	if m.Room != nil && m.Room[i] >= 0 && m.Parts[i]+n > m.Room[i] {
		return false
	}
	v := m.Domains[i]
	for _, f := range m.Carries {
		add := 0
		if slices.Contains(m.Counted, f) {
			add = n
		}
		if !f.Admits(v, add) {
			return false
		}
	}
	for _, f := range m.Counted {
		if f.Held[v] && !slices.Contains(m.Carries, f) && f.Over(v, n) {
			return false
		}
	}
	return true
}

// full reports whether Room is set and no domain has room for one more pod.
func (m *Member) full() bool {
	if m.Room == nil {
		return false
	}
	for i := range m.Domains {
		if m.Room[i] < 0 || m.Parts[i] < m.Room[i] {
			return false
		}
	}
	return true
}

// Take gives n more of m's pods its i-th domain.
func (m *Member) Take(i, n int) {
	v := m.Domains[i]
	m.Parts[i] += n
	m.Left -= n
	for ci, f := range m.Counted {
		f.Add(v, n, m.Kinds[ci])
	}
	for _, f := range m.Carries {
		f.Held[v] = true
	}
}

// Free is, for a member no family counts (a carrier its selectors do not match), the domains it
// may go to as the split ends: those within maxSkew of every minimum. It marks them held.
func (m *Member) Free() []string {
	var ok []string
	for i, v := range m.Domains {
		if m.Fits(i, 0) {
			ok = append(ok, v)
		}
	}
	for _, f := range m.Carries {
		for _, v := range ok {
			f.Held[v] = true
		}
	}
	if len(ok) == 0 {
		m.block()
	}
	return ok
}

// block marks m stuck, with the first constraint it carries (or counts for) and its counts —
// unless no domain has room left for a pod: then the constraints are not what stops it, and
// Why stays empty (the pods' own requests, selection or the existing nodes' room explain it).
func (m *Member) block() {
	m.Stuck = true
	if m.full() {
		return
	}
	fams, what := m.Carries, "pods"
	if len(m.blockers) > 0 {
		// Its own constraints admit a domain; a constraint it counts for is what stops it.
		fams, what = []*Family{m.blockers[0].f}, "pods its selector matches"
	} else if len(fams) == 0 {
		fams, what = m.Counted, "pods its selector matches"
	}
	if len(fams) > 0 {
		m.Why = fams[0].Blocked(fams[0].Hi, what)
	}
}
