package disruption

import (
	"cmp"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// A plain pod's placement depends only on the node it lands on: its resources are cpu, memory
// and the pod slot; it has no inter-pod terms, host ports, volumes or field selectors. For a set
// of plain pods the planner proves a delete feasible itself — best fit onto the nodes that stay,
// checking resources, node selectors, required node affinity and taints — and calls the solver
// only when that fails. The placement is exact, not an estimate: scheduling/check verifies it in
// the tests like the solver's.

// plainPod is a pod the fast path can place, with what it needs.
type plainPod struct {
	pod  *corev1.Pod
	key  string
	req  vec
	sel  []nodeplan.Requirements // alternatives (node affinity terms), each ANDed with the nodeSelector; nil = any
	tols []corev1.Toleration
}

func (p *planner) plain(pod *corev1.Pod) (plainPod, bool) {
	if interPod(pod) || hostPorts(pod) {
		return plainPod{}, false
	}
	if _, ok := p.in.VolumeZones[nodeplan.PodKey(pod)]; ok {
		return plainPod{}, false
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil || v.CSI != nil {
			return plainPod{}, false
		}
	}
	reqs := p.podRequests(pod)
	for k := range reqs {
		if k != corev1.ResourceCPU && k != corev1.ResourceMemory && k != corev1.ResourcePods {
			return plainPod{}, false
		}
	}
	pp := plainPod{pod: pod, key: nodeplan.PodKey(pod), req: toVec(reqs), tols: pod.Spec.Tolerations}
	base := nodeplan.RequirementsFromLabels(pod.Spec.NodeSelector)
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			if len(term.MatchFields) > 0 {
				return plainPod{}, false
			}
			rs, err := nodeplan.RequirementsFromNodeSelector(term.MatchExpressions)
			if err != nil {
				return plainPod{}, false
			}
			pp.sel = append(pp.sel, base.Intersect(rs))
		}
		if len(pp.sel) == 0 {
			return plainPod{}, false // no term matches nothing; let the solver explain
		}
	} else if len(pod.Spec.NodeSelector) > 0 {
		pp.sel = []nodeplan.Requirements{base}
	}
	return pp, true
}

// admits reports whether node s may run pod pp, resources aside.
func admits(s *nstate, pp *plainPod) bool {
	n := s.sched.Node
	if n.Spec.Unschedulable || n.DeletionTimestamp != nil {
		return false
	}
	if pp.sel != nil {
		ok := false
		for _, rs := range pp.sel {
			if rs.Matches(n.Labels) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	// The solver's rule for an existing node (scheduling/bin.go): the taints it keeps once
	// initialized, or before, those it does not shed as it comes up.
	var startup []corev1.Taint
	if s.pool != nil {
		startup = s.pool.Template.StartupTaints
	}
	_, blocked := nodeplan.UntoleratedTaint(pp.tols, nodeplan.NodeTaints(n, startup))
	return !blocked
}

// fastDelete tries to place every movable pod of set onto the nodes that stay, best fit (the
// fullest node that still takes the pod, largest pods first). It returns the placements, by node
// name, or ok=false when some pod is not plain or finds no node.
func (p *planner) fastDelete(set []*nstate) (moves []scheduling.Placement, ok bool) {
	return p.fastPlace(set, podsOf(set), nil)
}

// fastPlace places pods (of set's nodes) as fastDelete does, on top of room already taken
// (taken may be nil).
func (p *planner) fastPlace(set []*nstate, movable []*corev1.Pod, taken map[*nstate]vec) (moves []scheduling.Placement, ok bool) {
	var pods []plainPod
	for _, pod := range movable {
		pp, ok := p.plain(pod)
		if !ok {
			return nil, false
		}
		pods = append(pods, pp)
	}
	if len(pods) == 0 {
		return nil, true
	}
	p.mark++
	for _, s := range set {
		s.mark = p.mark
	}
	work := append(p.scratch[:0], p.destIndex()...)
	defer func() { p.scratch = work[:0] }()
	slices.SortStableFunc(pods, func(a, b plainPod) int {
		if c := cmp.Compare(b.req.cpu, a.req.cpu); c != 0 {
			return c
		}
		if c := cmp.Compare(b.req.mem, a.req.mem); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	used := map[*nstate]vec{}
	if len(taken) > 0 {
		for i := range work {
			if t, ok := taken[work[i].s]; ok {
				used[work[i].s] = t
				work[i].cpu -= t.cpu
			}
		}
		slices.SortFunc(work, func(a, b destEntry) int {
			switch {
			case destLess(a, b):
				return -1
			case destLess(b, a):
				return 1
			}
			return 0
		})
	}
	to := make([]*nstate, len(pods))
	for i := range pods {
		pp := &pods[i]
		// work is sorted by free cpu: the first node from the first that has the cpu which
		// also has the rest and admits the pod is the best fit.
		j := sort.Search(len(work), func(j int) bool { return work[j].cpu >= pp.req.cpu })
		for ; j < len(work); j++ {
			d := work[j].s
			if d.mark == p.mark || !pp.req.leq(d.free.sub(used[d])) || !admits(d, pp) {
				continue
			}
			break
		}
		if j == len(work) {
			return nil, false
		}
		d := work[j].s
		used[d] = used[d].add(pp.req)
		to[i] = d
		work[j].cpu -= pp.req.cpu
		for ; j > 0 && destLess(work[j], work[j-1]); j-- {
			work[j], work[j-1] = work[j-1], work[j]
		}
	}
	byNode := map[*nstate][]string{}
	var order []*nstate
	for i, d := range to {
		if byNode[d] == nil {
			order = append(order, d)
		}
		byNode[d] = append(byNode[d], pods[i].key)
	}
	slices.SortFunc(order, func(a, b *nstate) int { return strings.Compare(a.name, b.name) })
	for _, d := range order {
		ks := byNode[d]
		slices.Sort(ks)
		moves = append(moves, scheduling.Placement{Name: d.name, Pods: ks})
	}
	return moves, true
}

// destEntry is a node that may take plain pods, with its free cpu.
type destEntry struct {
	s   *nstate
	cpu int64
}

func destLess(a, b destEntry) bool {
	return a.cpu < b.cpu || (a.cpu == b.cpu && a.s.name < b.s.name)
}

// destIndex returns the nodes that may take plain pods — taking pods, not going, nothing bound
// that inter-pod terms or host ports care about (those need the solver) — sorted by free cpu.
// It is rebuilt after every commit.
func (p *planner) destIndex() []destEntry {
	if p.dests != nil && p.destsAt == p.version {
		return p.dests
	}
	eligible := func(s *nstate) bool { return s.dest && !s.gone && len(s.sched.Pods) == 0 && s.free.cpu > 0 }
	if p.dests == nil {
		p.dests = []destEntry{}
		for _, s := range p.nodes {
			if eligible(s) {
				p.dests = append(p.dests, destEntry{s, s.free.cpu})
			}
		}
		slices.SortFunc(p.dests, func(a, b destEntry) int {
			switch {
			case destLess(a, b):
				return -1
			case destLess(b, a):
				return 1
			}
			return 0
		})
	} else {
		// A commit only removes nodes and shrinks others' room, and never makes a node
		// eligible: drop what left, and move what shrank to its new place.
		var moved []destEntry
		kept := p.dests[:0]
		for _, e := range p.dests {
			switch {
			case !eligible(e.s):
			case e.s.free.cpu != e.cpu:
				moved = append(moved, destEntry{e.s, e.s.free.cpu})
			default:
				kept = append(kept, e)
			}
		}
		for _, e := range moved {
			i := sort.Search(len(kept), func(i int) bool { return !destLess(kept[i], e) })
			kept = slices.Insert(kept, i, e)
		}
		p.dests = kept
	}
	p.destsAt = p.version
	return p.dests
}
