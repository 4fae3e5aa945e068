package disruption

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeplan/nodeplan"

	"github.com/nodeplan/nodeplan/scheduling"
)

// simulation is what the solver says would happen to the pods of a set of nodes.
type simulation struct {
	done   bool // false when the pass could not afford it
	result scheduling.Result
	// broken says why the moves would leave a pod placed earlier in the pass unable to bind
	// (see together.go); nil when they would not.
	broken *Blocked
}

// maxDestinations bounds the nodes a simulation offers the solver to place pods on: the ones
// with the most free room. A plan on fewer nodes is still valid on all of them; it may only miss
// a tighter packing.
const maxDestinations = 128

// canSimulate reports whether the pass may run another simulation.
func (p *planner) canSimulate() bool { return p.sims < p.maxSims }

// simulate asks the solver where the movable pods of set would go if set were removed: onto the
// nodes that stay (their free room net of everything bound and already moved this pass) or onto
// new nodes from the NodePools. Nodes that are going, disrupting or not initialized take nothing.
// When the moves found change what a pod placed earlier in the pass counts (see together.go),
// it simulates again with that pod re-placed, pinned to its node; if it would no longer bind
// there, the simulation is broken and its result is the first one, made around the earlier
// moves as they are (what a forceful command, which goes ahead anyway, may use).
func (p *planner) simulate(ctx context.Context, set []*nstate) (simulation, error) {
	sim, err := p.simulateAlone(ctx, set)
	if err != nil || len(p.placed) == 0 {
		return sim, err
	}
	var deps []placedPod
	for _, d := range p.dependents(podsOf(set)) {
		if p.affected(d, set, sim.result) {
			deps = append(deps, d)
		}
	}
	if len(deps) == 0 {
		return sim, nil
	}
	pins := make([]*corev1.Pod, 0, len(deps))
	for _, d := range deps {
		q, ok := d.pinned()
		if !ok {
			sim.broken = brokenDependent(d, "")
			return sim, nil
		}
		pins = append(pins, q)
	}
	if err := ctx.Err(); err != nil {
		return simulation{}, fmt.Errorf("disruption: %w", err)
	}
	orig := podsOf(set)
	moving := slices.Clone(orig)
	for _, d := range deps {
		moving = append(moving, d.pod)
	}
	// The re-check belongs to this simulation: it does not count against MaxSimulations, or
	// the earlier moves would use up the pass.
	res, broken, err := p.solve(ctx, set, orig, p.mattersTo(moving), deps, pins)
	if err != nil {
		return simulation{}, err
	}
	if broken != nil {
		sim.broken = broken
		return sim, nil
	}
	return simulation{done: true, result: res}, nil
}

// simulateAlone is simulate for set's pods alone, the pods placed earlier in the pass staying
// where they were put.
func (p *planner) simulateAlone(ctx context.Context, set []*nstate) (simulation, error) {
	if err := ctx.Err(); err != nil {
		return simulation{}, fmt.Errorf("disruption: %w", err)
	}
	orig := podsOf(set)
	if len(orig) == 0 {
		return simulation{done: true}, nil
	}
	if moves, ok := p.fastDelete(set); ok {
		return simulation{done: true, result: scheduling.Result{Existing: moves}}, nil
	}
	// Pods that are plain and that no inter-pod term of the others selects need no solver: the
	// solver places the rest, and the plain ones go best fit onto the room left.
	keep := p.mattersTo(orig)
	var plainOrig, restOrig []*corev1.Pod
	for _, pod := range orig {
		if _, ok := p.plain(pod); ok && !keep(pod) {
			plainOrig = append(plainOrig, pod)
		} else {
			restOrig = append(restOrig, pod)
		}
	}
	if len(plainOrig) > 0 && len(restOrig) > 0 {
		p.sims++
		res, _, err := p.solve(ctx, set, restOrig, keep, nil, nil)
		if err != nil {
			return simulation{}, err
		}
		if len(res.Unschedulable) > 0 {
			return simulation{done: true, result: res}, nil
		}
		taken := map[*nstate]vec{}
		for _, pl := range res.Existing {
			d := p.byName[pl.Name]
			for _, k := range pl.Pods {
				taken[d] = taken[d].add(p.reqOf(k, restOrig))
			}
		}
		if moves, ok := p.fastPlace(set, plainOrig, taken); ok {
			res.Existing = mergePlacements(res.Existing, moves)
			return simulation{done: true, result: res}, nil
		}
		// The solver's packing left the plain pods no room: let it place them all.
	}
	p.sims++
	res, _, err := p.solve(ctx, set, orig, keep, nil, nil)
	if err != nil {
		return simulation{}, err
	}
	return simulation{done: true, result: res}, nil
}

// solve runs the solver for pods of set's nodes, offering it the destinations and counted nodes
// described in simulate, and re-placing the pinned copies (pins) of the pods placed earlier in
// the pass that depend on them (deps); the result leaves those out, and the blocker says when
// one of them would no longer bind.
func (p *planner) solve(ctx context.Context, set []*nstate, orig []*corev1.Pod, keep func(*corev1.Pod) bool, deps []placedPod, pins []*corev1.Pod) (scheduling.Result, *Blocked, error) {
	in := set
	pods := make([]*corev1.Pod, len(orig))
	for i, pod := range orig {
		q := *pod
		q.Spec.NodeName = ""
		pods[i] = &q
	}
	pods = append(pods, pins...)
	pinnedAt := map[string][]*corev1.Pod{}
	var pinTo map[string]string
	for _, d := range deps {
		pinnedAt[d.node] = append(pinnedAt[d.node], d.pod)
		if pinTo == nil {
			pinTo = map[string]string{}
		}
		pinTo[nodeplan.PodKey(d.pod)] = d.node
	}
	skip := make(map[*nstate]bool, len(in))
	for _, s := range in {
		skip[s] = true
	}
	shapes := minimalShapes(p, orig)
	// Destinations: the roomiest nodes that fit some pod of the set. Every other node whose pods
	// matter to inter-pod terms is offered for counting only — merged, when no term is per node,
	// into one stand-in per distinct set of labels, so a simulation's size does not grow with
	// the cluster.
	var dests, counted, leaving, pinned []*nstate
	for _, s := range p.nodes {
		if s.gone || skip[s] {
			leaving = append(leaving, s)
			continue
		}
		if pinnedAt[s.name] != nil {
			pinned = append(pinned, s)
			continue
		}
		if s.dest && fitsAny(s.free, shapes) {
			dests = append(dests, s)
		} else {
			counted = append(counted, s)
		}
	}
	if len(dests) > maxDestinations {
		slices.SortStableFunc(dests, func(a, b *nstate) int { return cmp.Compare(b.free.cpu, a.free.cpu) })
		counted = append(counted, dests[maxDestinations:]...)
		dests = dests[:maxDestinations]
		slices.SortStableFunc(dests, func(a, b *nstate) int { return strings.Compare(a.name, b.name) })
		slices.SortStableFunc(counted, func(a, b *nstate) int { return strings.Compare(a.name, b.name) })
	}
	nodes := make([]scheduling.Node, 0, len(dests)+len(counted)+len(p.virtual))
	for _, s := range dests {
		nodes = append(nodes, s.view(keep))
	}
	for _, s := range pinned {
		nodes = append(nodes, p.unplace(s.view(keep), pinnedAt[s.name]))
	}
	if p.aggregate {
		nodes = append(nodes, p.standIns(counted, keep)...)
	} else {
		// Nodes without a pod that matters count as domains all the same: one such node per
		// set of labels and taints stands for the others, which are the same domains' zeros.
		empty := map[string]bool{}
		for _, s := range counted {
			v := s.countOnly()
			v.Pods = filterPods(v.Pods, keep)
			if len(v.Pods) == 0 {
				if empty[s.groupKey()] {
					continue
				}
				empty[s.groupKey()] = true
			}
			nodes = append(nodes, v)
		}
	}
	nodes = append(nodes, leavingDomains(leaving)...)
	for _, v := range p.virtual {
		v.Pods = filterPods(v.Pods, keep)
		nodes = append(nodes, v)
	}
	res, err := scheduling.Solve(ctx, scheduling.Input{
		Pods:              pods,
		NodePools:         p.in.NodePools,
		InstanceTypes:     p.in.InstanceTypes,
		PoolInstanceTypes: p.in.PoolInstanceTypes,
		DaemonSets:        p.in.DaemonSets,
		Nodes:             nodes,
		Namespaces:        p.in.Namespaces,
		VolumeZones:       p.in.VolumeZones,
		Pins:              pinTo,
		Options:           p.schedulingOptions(),
	})
	if err != nil {
		return scheduling.Result{}, nil, fmt.Errorf("disruption: simulating %s: %w", names(set), err)
	}
	if len(deps) == 0 {
		return res, nil, nil
	}
	res, broken := dropPinned(res, deps)
	return res, broken, nil
}

// reqOf returns the requests of the pod with key k among pods.
func (p *planner) reqOf(k string, pods []*corev1.Pod) vec {
	for _, pod := range pods {
		if nodeplan.PodKey(pod) == k {
			return toVec(p.podRequests(pod))
		}
	}
	return vec{}
}

// mergePlacements merges two lists of placements sorted by name into one, pods sorted.
func mergePlacements(a, b []scheduling.Placement) []scheduling.Placement {
	byName := map[string][]string{}
	for _, pl := range a {
		byName[pl.Name] = append(byName[pl.Name], pl.Pods...)
	}
	for _, pl := range b {
		byName[pl.Name] = append(byName[pl.Name], pl.Pods...)
	}
	out := make([]scheduling.Placement, 0, len(byName))
	for _, name := range sortedMapKeys(byName) {
		pods := slices.Clone(byName[name])
		slices.Sort(pods)
		out = append(out, scheduling.Placement{Name: name, Pods: pods})
	}
	return out
}

// minimalShapes returns the pods' distinct requests that no other request is below in every
// dimension: a node that fits none of them fits none of the pods.
func minimalShapes(p *planner, pods []*corev1.Pod) []vec {
	var out []vec
	seen := map[vec]bool{}
	for _, pod := range pods {
		v := toVec(p.podRequests(pod))
		v.pods = max(v.pods, 1)
		if seen[v] {
			continue
		}
		seen[v] = true
		dominated := false
		for _, o := range out {
			if o.leq(v) {
				dominated = true
				break
			}
		}
		if dominated {
			continue
		}
		kept := out[:0]
		for _, o := range out {
			if !v.leq(o) {
				kept = append(kept, o)
			}
		}
		out = append(kept, v)
	}
	return out
}

func fitsAny(free vec, shapes []vec) bool {
	for _, s := range shapes {
		if s.leq(free) {
			return true
		}
	}
	return false
}

func names(set []*nstate) string {
	out := make([]string, len(set))
	for i, s := range set {
		out[i] = s.name
	}
	sortStrings(out)
	return joinSorted(out)
}

// countOnly is the node as a simulation sees it when it may not take pods (not initialized,
// disrupting, drifted, going away, full): its pods still count for spread and affinity, with
// the node's own labels and taints, but it takes no new ones.
func (s *nstate) countOnly() scheduling.Node {
	v := s.sched
	v.NoNewPods = true
	return v
}

// standIns merges count-only nodes with the same labels and taints (hostname aside) into one
// node each that carries all their pods that inter-pod terms care about. Valid only when no
// term's topology key is the hostname: every other domain is the same for the merged nodes.
func (p *planner) standIns(list []*nstate, keep func(*corev1.Pod) bool) []scheduling.Node {
	var out []scheduling.Node
	index := map[string]int{}
	for _, s := range list {
		key := s.groupKey()
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			name := fmt.Sprintf("stand-in-%d", i)
			n := &corev1.Node{}
			n.Name = name
			n.Labels = make(map[string]string, len(s.sched.Node.Labels))
			for k, v := range s.sched.Node.Labels {
				n.Labels[k] = v
			}
			n.Labels[nodeplan.LabelHostname] = name
			n.Spec.Taints = slices.Clone(s.sched.Node.Spec.Taints)
			out = append(out, scheduling.Node{Node: n, NoNewPods: true})
		}
		for _, pod := range s.sched.Pods {
			if keep(pod) {
				out[i].Pods = append(out[i].Pods, pod)
			}
		}
	}
	return out
}

// leavingDomains stands for the nodes this pass disrupts as kube-scheduler sees them while
// the moved pods bind: still there, tainted karpenter.sh/disrupted:NoSchedule, their pods
// evicted. Such a node is a domain with no matching pod for every spread that does not honour
// taints, so it can lower a spread's minimum; one empty node per set of labels and taints
// stands for all of them.
func leavingDomains(list []*nstate) []scheduling.Node {
	var out []scheduling.Node
	seen := map[string]bool{}
	for _, s := range list {
		key := s.groupKey()
		if seen[key] {
			continue
		}
		seen[key] = true
		n := &corev1.Node{}
		n.Name = fmt.Sprintf("leaving-%d", len(out))
		n.Labels = make(map[string]string, len(s.sched.Node.Labels))
		for k, v := range s.sched.Node.Labels {
			n.Labels[k] = v
		}
		n.Labels[nodeplan.LabelHostname] = n.Name
		n.Spec.Taints = append(slices.Clone(s.sched.Node.Spec.Taints), corev1.Taint{Key: nodeplan.TaintDisrupted, Effect: corev1.TaintEffectNoSchedule})
		out = append(out, scheduling.Node{Node: n, NoNewPods: true})
	}
	return out
}

// groupKey is the node's labels but its hostname, and its taints, as a string.
func (s *nstate) groupKey() string {
	if s.group != "" {
		return s.group
	}
	n := s.sched.Node
	keys := make([]string, 0, len(n.Labels))
	for k := range n.Labels {
		if k != nodeplan.LabelHostname {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(n.Labels[k])
		b.WriteByte(0)
	}
	for _, t := range n.Spec.Taints {
		fmt.Fprintf(&b, "%s=%s:%s\x00", t.Key, t.Value, t.Effect)
	}
	s.group = b.String()
	return s.group
}

// mattersTo returns which bound pods can affect where the moving pods go: those their inter-pod
// terms select, those whose own required anti-affinity may repel them, and, when they claim
// host ports, those holding host ports.
func (p *planner) mattersTo(moving []*corev1.Pod) func(*corev1.Pod) bool {
	sels, keys := interPodSelectors(moving)
	want, indexed := p.selectorMask(keys)
	ports := false
	for _, pod := range moving {
		if hostPorts(pod) {
			ports = true
			break
		}
	}
	return func(pod *corev1.Pod) bool {
		if a := pod.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			return true
		}
		if ports && hostPorts(pod) {
			return true
		}
		if len(sels) == 0 {
			return false
		}
		if indexed {
			return p.maskOf(pod)&want != 0
		}
		set := labels.Set(pod.Labels)
		for _, s := range sels {
			if s.Matches(set) {
				return true
			}
		}
		return false
	}
}

func filterPods(pods []*corev1.Pod, keep func(*corev1.Pod) bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range pods {
		if keep(pod) {
			out = append(out, pod)
		}
	}
	return out
}

// view is the node as a simulation of particular pods sees it: only the bound pods that matter
// to them.
func (s *nstate) view(keep func(*corev1.Pod) bool) scheduling.Node {
	v := s.sched
	if len(v.Pods) > 0 {
		v.Pods = filterPods(v.Pods, keep)
	}
	return v
}

// schedulingOptions are the solver options for a simulation: the caller's, without the lower
// bound — a simulation needs the plan, not the proof of how good it is, and the proof is about
// half of a solve.
func (p *planner) schedulingOptions() scheduling.Options {
	o := p.opts.Scheduling
	o.SkipLowerBound = true
	return o
}
