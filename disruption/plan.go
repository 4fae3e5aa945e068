package disruption

import (
	"context"
	"fmt"
	"strings"
	"time"

	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// Plan decides one pass: which nodes to delete or replace and why every other managed node
// stays. It is pure: it reads in, never modifies it, and equal inputs give results cmp.Diff finds
// equal. The error is non-nil only for invalid input (see [Input.Validate]) or when ctx ends;
// then the Result is empty.
func Plan(ctx context.Context, in Input) (Result, error) {
	if err := in.Validate(); err != nil {
		return Result{}, err
	}
	p := newPlanner(&in)
	if err := p.run(ctx); err != nil {
		return Result{}, err
	}
	return p.result(), nil
}

// run plans the pass: the pending pods first, then each method on the nodes it takes.
func (p *planner) run(ctx context.Context) error {
	if err := p.reservePending(ctx); err != nil {
		return err
	}
	ms := registered()
	byMethod := p.classify(ms)
	for _, m := range ms {
		nodes := byMethod[m.kind()]
		if !p.opts.Methods.Has(m.kind()) {
			p.notRun(m.kind(), nodes)
			continue
		}
		if err := m.plan(ctx, p, nodes); err != nil {
			return err
		}
	}
	return nil
}

// notRun explains the nodes of a method the pass leaves out (Options.Methods).
func (p *planner) notRun(m Methods, nodes []*nstate) {
	for _, s := range nodes {
		s.blocked = &Blocked{Code: CodeMethodNotRun, Message: fmt.Sprintf(
			"only %s run in this pass (Options.Methods), and %s would consider this node", p.opts.Methods, m)}
	}
}

// reservePending places the pending pods first, as the scheduler would, so consolidation does
// not count on the room they will take; nodes they land on count as nominated.
func (p *planner) reservePending(ctx context.Context) error {
	if len(p.in.Pending) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("disruption: %w", err)
	}
	var nodes []scheduling.Node
	for _, s := range p.nodes {
		if s.dest {
			nodes = append(nodes, s.sched)
		} else if len(s.sched.Pods) > 0 {
			nodes = append(nodes, s.countOnly())
		}
	}
	p.sims++
	res, err := scheduling.Solve(ctx, scheduling.Input{
		Pods: p.in.Pending, NodePools: p.in.NodePools, InstanceTypes: p.in.InstanceTypes,
		PoolInstanceTypes: p.in.PoolInstanceTypes, DaemonSets: p.in.DaemonSets, Nodes: nodes,
		Namespaces: p.in.Namespaces, VolumeZones: p.in.VolumeZones, Options: p.schedulingOptions(),
	})
	if err != nil {
		return fmt.Errorf("disruption: placing pending pods: %w", err)
	}
	byKey := map[string]*corev1.Pod{}
	for _, pod := range p.in.Pending {
		byKey[nodeplan.PodKey(pod)] = pod
	}
	for _, pl := range res.Existing {
		s := p.byName[pl.Name]
		if s == nil || len(pl.Pods) == 0 {
			continue
		}
		pods := make([]*corev1.Pod, 0, len(pl.Pods))
		for _, k := range pl.Pods {
			if pod := byKey[k]; pod != nil {
				pods = append(pods, pod)
			}
		}
		p.place(s, pods)
		p.recordPlaced(s.name, false, true, pods)
		s.receives = false
		s.nominated = pl.Pods[0]
	}
	return nil
}

// podBlocker returns why the node's pods keep graceful disruption away: an active
// do-not-disrupt, a pod nothing would recreate, or a PDB that cannot take all its evictions.
func (p *planner) podBlocker(s *nstate) *Blocked {
	for _, pod := range s.movable {
		if nodeplan.DoNotDisrupt(pod, p.now) {
			v := pod.Annotations[nodeplan.AnnotationDoNotDisrupt]
			msg := fmt.Sprintf("pod %s is annotated %s: %q", nodeplan.PodKey(pod), nodeplan.AnnotationDoNotDisrupt, v)
			if d, err := time.ParseDuration(strings.TrimSpace(v)); err == nil {
				msg += fmt.Sprintf(", which protects it until %s", nodeplan.PodStart(pod).Add(d).UTC().Format(time.RFC3339))
			}
			return &Blocked{Code: CodeDoNotDisruptPod, Object: nodeplan.PodKey(pod), Message: msg}
		}
	}
	if !p.opts.AllowUnownedPods {
		for _, pod := range s.movable {
			if !owned(pod) {
				return &Blocked{Code: CodeUnreschedulable, Object: nodeplan.PodKey(pod), Message: fmt.Sprintf(
					"pod %s has no controller to recreate it after eviction; give it one, or set Options.AllowUnownedPods", nodeplan.PodKey(pod))}
			}
		}
	}
	need, bl := p.pdbs.need(s.movable)
	if bl != nil {
		return bl
	}
	if bl := p.pdbs.check(need); bl != nil {
		return bl
	}
	return nil
}

// result assembles the Result: the commands, and a blocker for every managed node not in one.
func (p *planner) result() Result {
	r := Result{Commands: p.commands, Simulations: p.sims}
	for _, c := range p.commands {
		r.Savings += c.Savings
	}
	for _, s := range p.nodes {
		if s.in.NodePool == "" || s.gone {
			continue
		}
		bl := s.blocked
		if bl == nil {
			bl = &Blocked{Code: CodeNotEvaluated, Message: "the pass ran out of simulations before it reached this node; a later pass will"}
		}
		b := *bl
		b.Node, b.NodePool = s.name, s.in.NodePool
		r.Blocked = append(r.Blocked, b)
	}
	return r
}

// commit adds a command for set and updates the pass: the nodes go, moved pods take room on
// their destinations (which must then stay). Budgets and PDB allowances are the caller's.
func (p *planner) commit(c Command, set []*nstate) {
	byKey := map[string]*corev1.Pod{}
	for _, s := range set {
		s.gone = true
		for _, pod := range s.movable {
			byKey[nodeplan.PodKey(pod)] = pod
			if interPod(pod) {
				p.interPodMvd = true
			}
		}
	}
	for _, pl := range c.Moves {
		if dst := p.byName[pl.Name]; dst != nil {
			pods := make([]*corev1.Pod, 0, len(pl.Pods))
			for _, k := range pl.Pods {
				if pod := byKey[k]; pod != nil {
					pods = append(pods, pod)
				}
			}
			p.place(dst, pods)
			p.recordPlaced(dst.name, false, false, pods)
			dst.changedAt = p.version + 1
		}
	}
	for _, rc := range c.Replacements {
		p.addVirtual(rc, byKey)
		var pods []*corev1.Pod
		for _, k := range rc.Pods {
			if pod := byKey[k]; pod != nil {
				pods = append(pods, pod)
			}
		}
		p.recordPlaced(rc.Name, true, false, pods)
	}
	p.version++
	p.commands = append(p.commands, c)
}

// addVirtual makes a replacement visible to later simulations as a full node carrying the
// moved pods that inter-pod terms care about: spread and affinity must count them, but no other
// command may put pods on a node it does not own.
func (p *planner) addVirtual(rc scheduling.NewNodeClaim, byKey map[string]*corev1.Pod) {
	var kept []*corev1.Pod
	for _, k := range rc.Pods {
		if pod := byKey[k]; pod != nil && p.relevant(pod) {
			bound := pod.DeepCopy()
			bound.Spec.NodeName = rc.Name
			kept = append(kept, bound)
		}
	}
	if len(kept) == 0 {
		return
	}
	labels := map[string]string{}
	if it := p.prices.typesFor(rc.NodePool)[rc.InstanceType]; it != nil {
		for k, v := range it.Labels {
			labels[k] = v
		}
	}
	for k, v := range rc.Requirements.Labels() {
		labels[k] = v
	}
	for k, v := range rc.Labels {
		labels[k] = v
	}
	labels[nodeplan.LabelZone] = rc.Offering.Zone
	labels[nodeplan.LabelCapacityType] = string(rc.Offering.CapacityType)
	labels[nodeplan.LabelNodePool] = rc.NodePool
	labels[nodeplan.LabelHostname] = rc.Name
	node := &corev1.Node{}
	node.Name = rc.Name
	node.Labels = labels
	node.Spec.Taints = slices.Clone(rc.Taints)
	// Other commands' replacements count for topology but take no more pods.
	p.virtual = append(p.virtual, scheduling.Node{Node: node, Pods: kept, NoNewPods: true})
}
