package controller

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// Static NodePools (spec.replicas, Karpenter v1.14's StaticCapacity): the pool keeps exactly
// that many nodes whatever the pending pods. The solver never launches for them (provision.go
// leaves them out; their nodes are still room pods may use), the planner never consolidates
// them (they reach it with consolidateAfter Never and without drift), and this file:
//
//   - scales up: launches replicas − (claims not terminating) new claims from the template,
//     capped by limits.nodes (counting every claim of the pool, terminating ones included);
//   - scales down: terminates the surplus at once, without budgets, as Karpenter does —
//     claims not registered yet first, then empty nodes, then the ones running the fewest pods,
//     nodes annotated do-not-disrupt last;
//   - replaces drifted nodes: a replacement launched from the template first, the drifted node
//     terminated (reason Drifted) once it is initialized, as many at a time as the pool's
//     Drifted budget allows.
//
// A claim launched this way has no pods in mind: its instance type is the cheapest the pool
// allows (the options, cheapest first, go to the provider).

// staticInterval is how often static pools are brought to their replica count.
const staticInterval = 5 * time.Second

// reasonOverprovisioned is the termination reason of a static pool's surplus nodes.
const reasonOverprovisioned = "Overprovisioned"

// staticPass runs the static pools' scale and drift work in the background.
func (c *Controller) staticPass(ctx context.Context) {
	pools, err := c.NodePools.NodePools()
	if err != nil || !slices.ContainsFunc(pools, isStatic) || !c.claimBusy("static") {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.release("static")
		for _, p := range pools {
			if isStatic(p) {
				c.reconcileStatic(ctx, p)
			}
		}
	}()
}

func isStatic(p nodeplan.NodePool) bool { return p.Replicas != nil }

// staticPlan is what one pass decides for a static pool; pure, from the claims and time.
type staticPlan struct {
	// Launch is how many new claims to launch to reach the replica count.
	Launch int
	// Remove names the surplus claims to terminate.
	Remove []string
	// Replace names drifted claims to replace now (a replacement each).
	Replace []string
	// Retire names drifted claims whose replacement is initialized: terminate them.
	Retire []string
	// Forget names replacement pairs (by old claim) that ended: the replacement failed, or
	// the old claim is gone.
	Forget []string
	// LimitReached is true when limits.nodes held back a launch.
	LimitReached bool
}

// planStatic decides for one static pool. claims are the pool's; replacing maps a drifted
// claim to its replacement; drifted holds the drifted claims' names; pods counts the
// non-DaemonSet pods on each claim's node; doNotDisrupt says which claims' nodes carry the
// do-not-disrupt annotation; allowedDrift is the pool's Drifted budget for this pass.
func planStatic(pool nodeplan.NodePool, claims []*Claim, replacing map[string]string, drifted map[string]bool,
	pods map[string]int, doNotDisrupt map[string]bool, allowedDrift int) staticPlan {
	var plan staticPlan
	byName := map[string]*Claim{}
	for _, cl := range claims {
		byName[cl.Name] = cl
	}
	replacement := map[string]bool{}
	inFlight := 0
	for _, old := range sortedKeys(replacing) {
		repl, o := byName[replacing[old]], byName[old]
		switch {
		case repl == nil || o == nil || o.Phase == PhaseTerminating:
			plan.Forget = append(plan.Forget, old)
		case repl.Phase == PhaseInitialized:
			// Kept until the old claim is terminating: until then it must not count twice.
			plan.Retire = append(plan.Retire, old)
			replacement[repl.Name] = true
		default:
			replacement[repl.Name] = true
			inFlight++
		}
	}
	var active []*Claim
	total := 0
	for _, cl := range claims {
		total++
		if cl.Phase == PhaseTerminating || replacement[cl.Name] {
			continue
		}
		active = append(active, cl)
	}
	want := int(*pool.Replicas)
	limit := math.MaxInt
	if q, ok := pool.Limits[nodeplan.ResourceNodes]; ok {
		limit = int(q.Value())
	}
	switch n := len(active); {
	case n < want:
		plan.Launch = want - n
		if room := limit - total; plan.Launch > room {
			plan.Launch = max(room, 0)
			plan.LimitReached = true
		}
	case n > want:
		surplus := slices.Clone(active)
		rank := func(cl *Claim) int {
			switch {
			case cl.Phase < PhaseRegistered:
				return 0
			case pods[cl.Name] == 0 && !doNotDisrupt[cl.Name]:
				return 1
			case !doNotDisrupt[cl.Name]:
				return 2
			}
			return 3
		}
		slices.SortStableFunc(surplus, func(a, b *Claim) int {
			return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(pods[a.Name], pods[b.Name]), strings.Compare(a.Name, b.Name))
		})
		for _, cl := range surplus[:n-want] {
			plan.Remove = append(plan.Remove, cl.Name)
		}
	}
	removed := map[string]bool{}
	for _, n := range plan.Remove {
		removed[n] = true
	}
	// Drift: one replacement per drifted node, within the Drifted budget less the disruptions
	// already under way, and never while the pool is short or over its limit.
	budget := allowedDrift - inFlight
	for _, cl := range claims {
		if cl.Phase == PhaseTerminating && nodeplan.DisruptionReason(cl.Reason) == nodeplan.ReasonDrifted {
			budget--
		}
	}
	if plan.Launch > 0 || len(plan.Remove) > 0 {
		return plan
	}
	for _, cl := range active {
		if budget <= 0 || total >= limit {
			break
		}
		if !drifted[cl.Name] || removed[cl.Name] || cl.Phase != PhaseInitialized || doNotDisrupt[cl.Name] {
			continue
		}
		if _, busy := replacing[cl.Name]; busy {
			continue
		}
		plan.Replace = append(plan.Replace, cl.Name)
		budget--
		total++
	}
	return plan
}

// reconcileStatic carries out one pass's plan for a static pool.
func (c *Controller) reconcileStatic(ctx context.Context, pool nodeplan.NodePool) {
	var claims []*Claim
	pods, dnd := map[string]int{}, map[string]bool{}
	for _, cl := range c.tracker.List() {
		if cl.NodePool != pool.Name {
			continue
		}
		claims = append(claims, cl)
		if cl.Status.NodeName == "" {
			continue
		}
		for _, p := range c.podsOn(cl.Status.NodeName) {
			if !nodeplan.PodBelongsToNode(p) {
				pods[cl.Name]++
			}
		}
		if n := c.node(cl.Status.NodeName); n != nil && nodeplan.NodeDoNotDisrupt(n.Annotations) {
			dnd[cl.Name] = true
		}
	}
	now := c.now()
	c.mu.Lock()
	replacing := map[string]string{}
	for old, repl := range c.staticReplacing {
		replacing[old] = repl
	}
	drifted := map[string]bool{}
	for name := range c.drifted {
		drifted[name] = true
	}
	c.mu.Unlock()
	initialized := 0
	for _, cl := range claims {
		if cl.Phase == PhaseInitialized {
			initialized++
		}
	}
	allowed := pool.Disruption.AllowedDisruptions(nodeplan.ReasonDrifted, initialized, now)
	plan := planStatic(pool, claims, replacing, drifted, pods, dnd, allowed)

	c.mu.Lock()
	for _, old := range plan.Forget {
		delete(c.staticReplacing, old)
	}
	c.mu.Unlock()
	if plan.Launch > 0 || plan.LimitReached {
		current := len(claims) - len(plan.Remove)
		if plan.LimitReached {
			c.log().Info("nodepool node limit reached", "nodepool", pool.Name, "current", current, "desired", *pool.Replicas)
		}
		if plan.Launch > 0 {
			c.log().Info("provisioning nodeclaims to satisfy replica count", "nodepool", pool.Name, "current", current,
				"desired", *pool.Replicas, "provision-count", plan.Launch)
			c.emit(Event{Kind: EventStaticScale, NodePool: pool.Name, Count: current, Replicas: int(*pool.Replicas), Delta: plan.Launch})
		}
	}
	for range plan.Launch {
		if nc, ok := c.staticClaim(ctx, pool); ok {
			c.launch(ctx, nc, "provisioning")
		}
	}
	if len(plan.Remove) > 0 {
		c.log().Info("deprovisioning nodeclaims to satisfy replica count", "nodepool", pool.Name, "current", len(claims),
			"desired", *pool.Replicas, "deprovision-count", len(plan.Remove), "nodeclaims", plan.Remove)
		c.emit(Event{Kind: EventStaticScale, NodePool: pool.Name, Count: len(claims), Replicas: int(*pool.Replicas), Delta: -len(plan.Remove)})
	}
	for _, name := range plan.Remove {
		if cl := c.tracker.Get(name); cl != nil {
			c.terminate(ctx, cl, reasonOverprovisioned)
		}
	}
	for _, old := range plan.Replace {
		cl := c.tracker.Get(old)
		if cl == nil {
			continue
		}
		nc, ok := c.staticClaim(ctx, pool)
		if !ok {
			continue
		}
		c.log().Info("disrupting node(s)", "command", "Drifted: replace: nodepools=["+pool.Name+"]: ["+cl.Status.NodeName+"] (static)",
			"reason", string(nodeplan.ReasonDrifted), "decision", "replace", "disrupted-node-count", 1, "replacement-node-count", 1,
			"disrupted-nodes", []string{cl.Status.NodeName})
		c.emit(Event{Kind: EventDisrupting, NodePool: pool.Name, Reason: string(nodeplan.ReasonDrifted), Nodes: []string{cl.Status.NodeName},
			Replacements: 1, Pods: pods[cl.Name]})
		name := c.launch(ctx, nc, string(nodeplan.ReasonDrifted)+" replacement of "+cl.Status.NodeName)
		c.mu.Lock()
		c.staticReplacing[old] = name
		c.mu.Unlock()
	}
	for _, old := range plan.Retire {
		if cl := c.tracker.Get(old); cl != nil {
			if c.Metrics != nil {
				c.Metrics.NodeClaimDisrupted(&cl.NodeClaim, string(nodeplan.ReasonDrifted))
			}
			c.terminatingEvent(cl, nodeplan.ReasonDrifted)
			c.terminate(ctx, cl, string(nodeplan.ReasonDrifted))
		}
	}
}

// staticClaim builds a claim from the pool's template: its labels, annotations, taints,
// requirements and node class, with every instance type the pool allows as options, cheapest
// first (by the cheapest available offering the requirements admit).
func (c *Controller) staticClaim(ctx context.Context, pool nodeplan.NodePool) (scheduling.NewNodeClaim, bool) {
	byPool, _ := c.instanceTypes(ctx, []nodeplan.NodePool{pool})
	types := byPool[pool.Name]
	t := pool.Template
	type option struct {
		name  string
		price float64
		off   nodeplan.Offering
	}
	var opts []option
	for _, it := range types {
		if !typeAllowed(t.Requirements, it.Labels) {
			continue
		}
		best := -1.0
		var bestOff nodeplan.Offering
		for _, o := range it.Offerings {
			if o.Available && o.Accepts(t.Requirements) && o.Price > 0 && (best < 0 || o.Price < best) {
				best, bestOff = o.Price, o
			}
		}
		if best >= 0 {
			opts = append(opts, option{it.Name, best, bestOff})
		}
	}
	if len(opts) == 0 {
		c.log().Error("could not provision static nodeclaim: no instance type of the pool has an available offering", "nodepool", pool.Name)
		return scheduling.NewNodeClaim{}, false
	}
	slices.SortStableFunc(opts, func(a, b option) int { return cmp.Or(cmp.Compare(a.price, b.price), strings.Compare(a.name, b.name)) })
	names := make([]string, 0, min(len(opts), 60))
	for _, o := range opts[:min(len(opts), 60)] {
		names = append(names, o.name)
	}
	labels := map[string]string{}
	for k, v := range t.Labels {
		labels[k] = v
	}
	for k, v := range t.Requirements.Labels() {
		labels[k] = v
	}
	labels[nodeplan.LabelNodePool] = pool.Name
	annotations := map[string]string{}
	for k, v := range t.Annotations {
		annotations[k] = v
	}
	nc := scheduling.NewNodeClaim{
		NodeClaim: nodeplan.NodeClaim{
			NodePool:               pool.Name,
			NodeClassRef:           t.NodeClassRef,
			Requirements:           t.Requirements,
			InstanceTypeOptions:    names,
			Labels:                 labels,
			Annotations:            annotations,
			Taints:                 slices.Clone(t.Taints),
			StartupTaints:          slices.Clone(t.StartupTaints),
			ExpireAfter:            t.ExpireAfter,
			TerminationGracePeriod: t.TerminationGracePeriod,
		},
		InstanceType: opts[0].name,
		Offering:     opts[0].off,
	}
	return nc, true
}

// typeAllowed reports whether an instance type's labels meet the pool's requirements on the
// keys the type describes; other keys (zone, capacity type: per offering; template labels:
// the node gets them) are left to the offering and the claim.
func typeAllowed(reqs nodeplan.Requirements, labels map[string]string) bool {
	for _, r := range reqs.All() {
		if v, ok := labels[r.Key]; ok && !r.Accepts(v, true) {
			return false
		}
	}
	return true
}
