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

// buckets sorts the managed nodes by what may happen to them this pass.
type buckets struct {
	interrupted, expired, drifted, empty, consolidate []*nstate
}

func (p *planner) run(ctx context.Context) error {
	if err := p.reservePending(ctx); err != nil {
		return err
	}
	b := p.classify()
	steps := []struct {
		method Methods
		nodes  []*nstate
		run    func(context.Context, *buckets) error
	}{
		{MethodInterruption, b.interrupted, p.interruption},
		{MethodExpiration, b.expired, p.expiration},
		{MethodEmptiness, b.empty, p.emptiness},
		{MethodDrift, b.drifted, p.drift},
		{MethodConsolidation, b.consolidate, p.consolidation},
	}
	for _, step := range steps {
		if !p.opts.Methods.Has(step.method) {
			p.notRun(step.method, step.nodes)
			continue
		}
		if err := step.run(ctx, b); err != nil {
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

// classify gives every managed node its bucket or its blocker.
func (p *planner) classify() *buckets {
	b := &buckets{}
	for _, s := range p.nodes {
		n := s.in
		if n.NodePool == "" {
			continue
		}
		if s.pool == nil {
			s.blocked = &Blocked{Code: CodeNoNodePool, Object: n.NodePool, Message: fmt.Sprintf(
				"NodePool %s is not in the input, so its disruption settings are unknown", n.NodePool)}
			continue
		}
		if n.Disrupting {
			s.blocked = &Blocked{Code: CodeDisrupting, Message: "the node is already being disrupted; it counts against its pool's budgets until it is gone"}
			continue
		}
		if n.Interruption != nil {
			s.dest = false
			b.interrupted = append(b.interrupted, s)
			continue
		}
		if p.expired(s) {
			s.dest = false
			b.expired = append(b.expired, s)
			continue
		}
		if n.Initialized.IsZero() {
			s.blocked = &Blocked{Code: CodeNotInitialized, Message: "the node has not finished initializing; it is disrupted only once it has"}
			continue
		}
		if n.Nominated {
			s.blocked = &Blocked{Code: CodeNominated, Message: "the node is nominated for a pending pod"}
			continue
		}
		if s.nominated != "" {
			s.blocked = &Blocked{Code: CodeNominated, Object: s.nominated, Message: fmt.Sprintf(
				"pending pod %s would be scheduled onto the node's free room", s.nominated)}
			continue
		}
		if nodeplan.NodeDoNotDisrupt(n.Node.Annotations) {
			s.blocked = &Blocked{Code: CodeDoNotDisruptNode, Message: fmt.Sprintf(
				"the node is annotated %s: \"true\"; remove the annotation to let it be disrupted", nodeplan.AnnotationDoNotDisrupt)}
			continue
		}
		if n.Drift != "" {
			s.dest = false // pods moved onto a drifted node would move again
			b.drifted = append(b.drifted, s)
			continue
		}
		after := s.pool.Disruption.ConsolidateAfter
		if after == nodeplan.Never {
			s.blocked = &Blocked{Code: CodeConsolidationDisabled, Object: s.pool.Name, Message: fmt.Sprintf(
				"NodePool %s has consolidateAfter: Never", s.pool.Name)}
			continue
		}
		since := n.Initialized
		if n.LastPodEvent.After(since) {
			since = n.LastPodEvent
		}
		if wait := since.Add(after).Sub(p.now); wait > 0 {
			s.blocked = &Blocked{Code: CodeConsolidateAfter, Object: s.pool.Name, Message: fmt.Sprintf(
				"a pod was scheduled or removed %s ago; NodePool %s waits consolidateAfter %s, %s more",
				p.now.Sub(since).Round(time.Second), s.pool.Name, after, wait.Round(time.Second))}
			continue
		}
		if len(s.movable) == 0 {
			b.empty = append(b.empty, s)
			continue
		}
		if s.pool.Disruption.Policy() == nodeplan.ConsolidateWhenEmpty {
			s.blocked = &Blocked{Code: CodeWhenEmpty, Object: s.pool.Name, Message: fmt.Sprintf(
				"NodePool %s consolidates only empty nodes (WhenEmpty) and the node runs %d pods", s.pool.Name, len(s.movable))}
			continue
		}
		if bl := p.podBlocker(s); bl != nil {
			s.blocked = bl
			continue
		}
		b.consolidate = append(b.consolidate, s)
	}
	return b
}

func (p *planner) expired(s *nstate) bool {
	ea := s.pool.Template.ExpireAfter
	if ea <= 0 || ea == nodeplan.Never || s.in.Created.IsZero() {
		return false
	}
	return !p.now.Before(s.in.Created.Add(ea))
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

// eventual reports whether drift of the node ignores pod blockers: Karpenter's rule for a
// NodeClaim with a terminationGracePeriod, which bounds the drain instead. Without the claim's
// (Node.TerminationGracePeriod nil), its pool's template's.
func eventual(s *nstate) bool {
	if t := s.in.TerminationGracePeriod; t != nil {
		return *t > 0
	}
	return s.pool.Template.TerminationGracePeriod > 0
}

// driftMode is the mode of a drift command for the node: forceful when eventual.
func driftMode(s *nstate) Mode {
	if eventual(s) {
		return ModeForceful
	}
	return ModeGraceful
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
