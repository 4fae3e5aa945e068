package controller

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/disruption"
)

// planner returns the configured planner or disruption.Plan.
func (c *Controller) planner() Planner {
	if c.Planner != nil {
		return c.Planner
	}
	return PlanFunc(disruption.Plan)
}

// planInput builds the planner's view from the caches, the claim table, the drift verdicts
// and the interruptions received.
func (c *Controller) planInput(ctx context.Context, pools []nodeplan.NodePool) disruption.Input {
	s := c.snapshot()
	now := c.now()
	in := disruption.Input{
		NodePools:  pools,
		DaemonSets: s.daemonSets,
		PDBs:       s.pdbs,
		Namespaces: s.namespaces,
		Now:        now,
	}
	for _, p := range s.pods {
		if p.Spec.NodeName == "" && !nodeplan.PodTerminal(p) && p.DeletionTimestamp == nil {
			in.Pending = append(in.Pending, p)
		}
	}
	// Buffer slots are pending pods to the planner: the room they would take is kept, and the
	// nodes holding it are not consolidated.
	in.Pending = append(in.Pending, c.bufferPods()...)
	claims := map[string]*Claim{}
	live := map[string]bool{}
	for _, cl := range c.tracker.List() {
		live[cl.Status.ProviderID] = true
		if cl.Status.NodeName != "" {
			claims[cl.Status.NodeName] = cl
		}
	}
	c.mu.Lock()
	for k, until := range c.nominated {
		if now.After(until) {
			delete(c.nominated, k)
		}
	}
	for id := range c.interruptions {
		if !live[id] {
			delete(c.interruptions, id)
		}
	}
	nominated := func(names ...string) bool {
		for _, n := range names {
			if _, ok := c.nominated[n]; ok {
				return true
			}
		}
		return false
	}
	for _, n := range s.nodes {
		node := disruption.Node{Node: n, Pods: s.podsByNode[n.Name]}
		if cl := claims[n.Name]; cl != nil {
			node.NodePool = cl.NodePool
			node.InstanceType = cl.Status.InstanceType
			node.Zone = cl.Status.Zone
			node.CapacityType = cl.Status.CapacityType
			node.Price = cl.Status.Price
			node.Created = cl.Created
			node.Initialized = cl.Initialized
			node.LastPodEvent = cl.LastPodEvent
			node.Nominated = nominated(n.Name, cl.Name)
			node.Disrupting = cl.Phase == PhaseTerminating || c.busy["command/"+n.Name]
			node.Drift = c.drifted[cl.Name]
			tgp := cl.TerminationGracePeriod
			node.TerminationGracePeriod = &tgp // the claim's, as the drain reads it
			if p, ok := poolOf(in.NodePools, cl.NodePool); ok && p.Replicas != nil {
				// Static pools are never consolidated, and their drifted nodes are replaced
				// by the static controller (static.go), not the planner.
				node.Drift = ""
			}
			if ev, ok := c.interruptions[cl.Status.ProviderID]; ok {
				node.Interruption = &disruption.Interruption{Kind: string(ev.Kind), Deadline: ev.Deadline}
			}
		}
		in.Nodes = append(in.Nodes, node)
	}
	c.mu.Unlock()
	in.PoolInstanceTypes, in.Options.Scheduling.NodeCost = c.instanceTypes(ctx, in.NodePools)
	in.Options.Scheduling.Preferences = c.Preferences
	in.Options.Scheduling.MinValues = c.MinValues
	if c.NoSpotToSpot {
		in.Options.SpotFlexibility = -1
	}
	return in
}

// disrupt runs one planning pass in the background and starts its commands. It reports false
// when a pass is already running.
func (c *Controller) disrupt(ctx context.Context) bool {
	if !c.claimBusy("disruption") {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.release("disruption")
		pools, err := c.NodePools.NodePools()
		if err != nil {
			// Without the pools every node would look like one of a deleted pool.
			c.log().Error("not disrupting: nodepools unavailable", "err", err)
			return
		}
		c.checkDrift(ctx, pools)
		in := c.planInput(ctx, plannerPools(pools))
		start := time.Now()
		res, err := c.planner().Plan(ctx, in)
		if c.Metrics != nil {
			c.Metrics.PlanDuration.Observe(time.Since(start).Seconds())
		}
		if err != nil {
			if ctx.Err() == nil {
				c.log().Error("could not plan disruption", "err", err)
			}
			return
		}
		c.Metrics.EligibleNodes(eligibleNodes(in, res))
		c.explain(res.Blocked)
		for _, cmd := range res.Commands {
			c.execute(ctx, cmd, costOf(cmd, in.Options.Scheduling.NodeCost))
		}
	}()
	return true
}

// plannerPools returns the pools as the planner must see them: static pools with
// consolidateAfter Never, since they are never consolidated (their drift and scale are
// static.go's).
func plannerPools(pools []nodeplan.NodePool) []nodeplan.NodePool {
	out := slices.Clone(pools)
	for i := range out {
		if isStatic(out[i]) {
			out[i].Disruption.ConsolidateAfter = nodeplan.Never
		}
	}
	return out
}

// explain records a DisruptionBlocked event on each node the planner would not touch, once
// per distinct message, so `kubectl describe node` says why it stays.
func (c *Controller) explain(blocked []disruption.Blocked) {
	for _, b := range blocked {
		if b.Code == disruption.CodeConsolidationDisabled {
			if p, ok := c.pool(b.NodePool); ok && isStatic(p) {
				continue // a static pool's nodes: never consolidated, by design
			}
		}
		switch b.Code {
		case disruption.CodeConsolidateAfter, disruption.CodeNotInitialized, disruption.CodeDisrupting,
			disruption.CodeNotEvaluated, disruption.CodeOutranked, disruption.CodeDependsOnPass:
			continue // transient: an event would be noise
		case disruption.CodeMethodNotRun:
			continue // the planner's configuration (--planner emptiness), the same on every node
		}
		reason, msg := blockedEvent(b)
		c.mu.Lock()
		same := c.lastBlock[b.Node] == msg
		c.lastBlock[b.Node] = msg
		c.mu.Unlock()
		if same {
			continue
		}
		c.log().Debug("node not disrupted", "node", b.Node, "nodepool", b.NodePool, "code", string(b.Code), "reason", b.Message)
		claim := ""
		if cl := c.tracker.ByNode(b.Node); cl != nil {
			claim = cl.Name
		}
		c.eventOnBoth(claim, b.Node, corev1.EventTypeNormal, reason, msg, msg)
	}
}

// execute carries out one command in the background, as the disruption package's execution
// contract says: replacements launched and initialized first (an interrupted node does not
// wait for them), then each node tainted, drained and deleted. cost is what it logs and
// counts as the command's saving.
func (c *Controller) execute(ctx context.Context, cmd disruption.Command, cost commandCost) {
	for _, n := range cmd.Nodes {
		if !c.claimBusy("command/" + n) {
			c.log().Info("skipping command: node already being disrupted", "node", n, "reason", string(cmd.Reason))
			for _, m := range cmd.Nodes {
				if m == n {
					break
				}
				c.release("command/" + m)
			}
			return
		}
	}
	change, amount := PriceChange(cost.Savings)
	attrs := []any{"command", commandString(cmd, cost.Savings), "reason", strings.ToLower(string(cmd.Reason)),
		"decision", decision(cmd), change, amount, "disrupted-node-count", len(cmd.Nodes),
		"replacement-node-count", len(cmd.Replacements), "pod-count", len(cmd.Pods), "disrupted-nodes", cmd.Nodes}
	if cost.worstCaseDiffers() {
		// What the replacements would cost at the dearest offering their options allow:
		// the bar the planner judged the command by.
		attrs = append(attrs, "replacement-worst-case", Dollars(cost.WorstCase))
	}
	c.log().Info("disrupting node(s)", attrs...)
	c.Metrics.DisruptionDecision(cmd, cost.Savings)
	c.emit(Event{Kind: EventDisrupting, Reason: string(cmd.Reason), Nodes: cmd.Nodes, Replacements: len(cmd.Replacements),
		Pods: len(cmd.Pods), Savings: cost.Savings})
	// The candidates show the command's reason (DisruptionReason) from now, as Karpenter's
	// queue marks them, and lose it if the command is dropped before they terminate.
	var candidates []string
	for _, n := range cmd.Nodes {
		if cl := c.tracker.ByNode(n); cl != nil {
			candidates = append(candidates, cl.Name)
		}
	}
	c.mu.Lock()
	for _, name := range candidates {
		c.disrupting[name] = string(cmd.Reason)
	}
	c.mu.Unlock()
	for _, name := range candidates {
		c.writeClaim(ctx, name)
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() {
			for _, n := range cmd.Nodes {
				c.release("command/" + n)
			}
			c.mu.Lock()
			for _, name := range candidates {
				delete(c.disrupting, name)
			}
			c.mu.Unlock()
			for _, name := range candidates {
				if cl := c.tracker.Get(name); cl != nil && cl.Phase != PhaseTerminating {
					c.writeClaim(ctx, name) // dropped: the reason goes
				}
			}
		}()
		if len(cmd.Replacements) > 0 {
			if cmd.Mode == disruption.ModeImmediate {
				for _, r := range cmd.Replacements {
					c.launch(ctx, r, replacementWhy(cmd))
				}
			} else if !c.launchReplacements(ctx, cmd, cost) {
				return
			}
		}
		for _, n := range cmd.Nodes {
			cl := c.tracker.ByNode(n)
			if cl == nil {
				continue
			}
			if c.Metrics != nil {
				c.Metrics.NodeClaimDisrupted(&cl.NodeClaim, c.disruptedReason(cmd.Reason, cl))
			}
			c.terminatingEvent(cl, cmd.Reason)
			c.terminateAs(ctx, cl, string(cmd.Reason), !cmd.Forceful())
		}
	}()
}

// launchReplacements launches a command's replacements and waits until all are initialized.
// It reports false when one failed or ReplacementTimeout passed: the command is then dropped
// and its nodes stay (the replacements, if any came up, are consolidated later).
func (c *Controller) launchReplacements(ctx context.Context, cmd disruption.Command, cost commandCost) bool {
	names := make([]string, len(cmd.Replacements))
	for i, r := range cmd.Replacements {
		names[i] = c.launch(ctx, r, replacementWhy(cmd))
	}
	deadline := c.now().Add(orDefault(c.ReplacementTimeout, 10*time.Minute))
	for {
		ready := 0
		for _, name := range names {
			cl := c.tracker.Get(name)
			if cl == nil {
				c.log().Error("abandoning disruption command: a replacement failed", "command", commandString(cmd, cost.Savings), "nodeclaim", name)
				return false
			}
			if cl.Phase == PhaseInitialized {
				ready++
			}
		}
		if ready == len(names) {
			return true
		}
		if c.now().After(deadline) {
			c.log().Error("abandoning disruption command: replacements did not initialize in time", "command", commandString(cmd, cost.Savings))
			return false
		}
		if c.sleep(ctx, time.Second) != nil {
			return false
		}
	}
}

// pollInterruptions reads the provider's interruption events, if it has any, in the
// background. A disruptive event is handed to the planner at once (outside budgets, it
// replaces the node); the node is drained without waiting for its replacement.
func (c *Controller) pollInterruptions(ctx context.Context) {
	src, ok := c.Provider.(cloudprovider.InterruptionSource)
	if !ok || !c.claimBusy("interruptions") {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.release("interruptions")
		evs, err := src.Interruptions(ctx)
		if err != nil {
			if ctx.Err() == nil {
				c.log().Error("could not read interruptions", "err", err)
			}
			return
		}
		for _, ev := range evs {
			c.Metrics.InterruptionReceived(ev, c.now().Sub(ev.Time).Seconds())
			c.interrupted(ev)
		}
	}()
}

// disruptedReason is karpenter_nodeclaims_disrupted_total's reason for cl disrupted for r:
// Karpenter's name of the interruption's kind (spot_interrupted, scheduled_change,
// instance_stopped, instance_terminated) for an interruption, else the reason lower-cased.
func (c *Controller) disruptedReason(r nodeplan.DisruptionReason, cl *Claim) string {
	if r == nodeplan.ReasonInterrupted {
		c.mu.Lock()
		ev, ok := c.interruptions[cl.Status.ProviderID]
		c.mu.Unlock()
		if ok {
			return interruptionReason(ev)
		}
	}
	return strings.ToLower(string(r))
}

func (c *Controller) interrupted(ev cloudprovider.Interruption) {
	cl := c.tracker.ByProviderID(ev.ProviderID)
	if cl == nil {
		c.log().Info("interruption for an instance no nodeclaim owns", "provider-id", ev.ProviderID, "kind", string(ev.Kind))
		return
	}
	attrs := []any{"nodeclaim", cl.Name, "node", cl.Status.NodeName, "provider-id", ev.ProviderID, "kind", string(ev.Kind)}
	if !ev.Deadline.IsZero() {
		attrs = append(attrs, "time-until-interruption", ev.Deadline.Sub(c.now()).Round(time.Second).String())
	}
	if !ev.Kind.Disruptive() {
		c.log().Info("received rebalance recommendation", attrs...)
		typ, reason, msg := interruptionEvent(ev)
		c.eventOnBoth(cl.Name, cl.Status.NodeName, typ, reason, msg, msg)
		return
	}
	msg := "received interruption"
	if ev.Kind == cloudprovider.InterruptionSpot {
		msg = "received spot interruption warning"
	}
	c.log().Info(msg, attrs...)
	c.emit(Event{Kind: EventInterrupted, NodeClaim: cl.Name, NodePool: cl.NodePool, Node: cl.Status.NodeName, Reason: string(ev.Kind)})
	typ, reason, emsg := interruptionEvent(ev)
	c.eventOnBoth(cl.Name, cl.Status.NodeName, typ, reason, emsg, emsg)
	c.mu.Lock()
	c.interruptions[ev.ProviderID] = ev
	c.mu.Unlock()
	c.disruptNow.Store(true)
}
