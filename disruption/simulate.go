package disruption

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan/scheduling"
)

// simulation is what the solver says would happen to the pods of a set of nodes.
type simulation struct {
	done   bool // false when the pass could not afford it
	result scheduling.Result
}

// maxOtherNodes bounds the nodes a simulation offers the solver besides those whose pods matter
// to inter-pod terms: the ones with the most free room. A plan on fewer nodes is still valid on
// all of them; it may only miss a tighter packing.
const maxOtherNodes = 256

// canSimulate reports whether the pass may run another simulation.
func (p *planner) canSimulate() bool { return p.sims < p.maxSims }

// simulate asks the solver where the movable pods of set would go if set were removed: onto the
// nodes that stay (their free room net of everything bound and already moved this pass) or onto
// new nodes from the NodePools. Nodes that are going, disrupting or not initialized take nothing.
func (p *planner) simulate(set []*nstate) (simulation, error) {
	if err := p.ctx.Err(); err != nil {
		return simulation{}, fmt.Errorf("disruption: %w", err)
	}
	in := set
	var pods, orig []*corev1.Pod
	for _, s := range set {
		orig = append(orig, s.movable...)
		for _, pod := range s.movable {
			q := *pod
			q.Spec.NodeName = ""
			pods = append(pods, &q)
		}
	}
	if len(pods) == 0 {
		return simulation{done: true}, nil
	}
	if moves, ok := p.fastDelete(set); ok {
		return simulation{done: true, result: scheduling.Result{Existing: moves}}, nil
	}
	p.sims++
	skip := make(map[*nstate]bool, len(in))
	for _, s := range in {
		skip[s] = true
	}
	shapes := minimalShapes(p, orig)
	var nodes []scheduling.Node
	var others []*nstate
	for _, s := range p.nodes {
		if s.gone || skip[s] {
			continue
		}
		if !s.dest {
			if len(s.sched.Pods) > 0 {
				nodes = append(nodes, s.countOnly())
			}
			continue
		}
		if len(s.sched.Pods) > 0 {
			nodes = append(nodes, s.sched)
		} else if fitsAny(s.free, shapes) {
			others = append(others, s)
		}
	}
	if len(others) > maxOtherNodes {
		slices.SortStableFunc(others, func(a, b *nstate) int { return cmp.Compare(b.free.cpu, a.free.cpu) })
		others = others[:maxOtherNodes]
		slices.SortStableFunc(others, func(a, b *nstate) int { return strings.Compare(a.name, b.name) })
	}
	for _, s := range others {
		nodes = append(nodes, s.sched)
	}
	nodes = append(nodes, p.virtual...)
	res, err := scheduling.Solve(p.ctx, scheduling.Input{
		Pods:              pods,
		NodePools:         p.in.NodePools,
		InstanceTypes:     p.in.InstanceTypes,
		PoolInstanceTypes: p.in.PoolInstanceTypes,
		DaemonSets:        p.in.DaemonSets,
		Nodes:             nodes,
		Namespaces:        p.in.Namespaces,
		VolumeZones:       p.in.VolumeZones,
		Options:           p.opts.Scheduling,
	})
	if err != nil {
		return simulation{}, fmt.Errorf("disruption: simulating %s: %w", names(set), err)
	}
	return simulation{done: true, result: res}, nil
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
// disrupting, drifted, going away): its pods still count for spread and affinity, but a taint no
// pod tolerates keeps new ones off.
func (s *nstate) countOnly() scheduling.Node {
	n := *s.sched.Node
	n.Spec.Taints = append(slices.Clone(n.Spec.Taints), corev1.Taint{Key: virtualTaint, Effect: corev1.TaintEffectNoSchedule})
	n.Status.Allocatable = corev1.ResourceList{}
	v := s.sched
	v.Node = &n
	return v
}
