package controller

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/pricing"
	"github.com/nodeplan/nodeplan/scheduling"
)

// batcher groups pending-pod events so one solve sees a whole scale-up: a batch opens at the
// first event and closes after idle without events, or max after it opened.
type batcher struct {
	idle, max time.Duration

	mu          sync.Mutex
	open        bool
	first, last time.Time
}

func (b *batcher) trigger(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		b.open, b.first = true, now
	}
	if now.After(b.last) {
		b.last = now
	}
}

// ready reports whether the open batch has closed at now, and resets it if so.
func (b *batcher) ready(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open || (now.Sub(b.last) < b.idle && now.Sub(b.first) < b.max) {
		return false
	}
	b.open = false
	return true
}

// claimAlphabet is Karpenter's generateName alphabet: no vowels, so names never spell words.
const claimAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func (c *Controller) newClaimName(pool string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		var b strings.Builder
		b.WriteString(pool)
		b.WriteByte('-')
		for range 5 {
			b.WriteByte(claimAlphabet[c.rnd.IntN(len(claimAlphabet))])
		}
		if c.tracker.Get(b.String()) == nil {
			return b.String()
		}
	}
}

// instanceTypes asks the provider for each pool's instance types, priced by the cost model and
// the NodeOverlays, and returns them with what a node of each pool costs beyond its instance
// ([Controller.NodeCost] and its class's volumes). A pool whose types or volumes cannot be
// priced is left out, with a log line.
func (c *Controller) instanceTypes(ctx context.Context, pools []nodeplan.NodePool) (map[string][]nodeplan.InstanceType, scheduling.NodeCost) {
	out := map[string][]nodeplan.InstanceType{}
	cost := scheduling.NodeCost{PerNode: c.NodeCost.PerNode}
	for i := range pools {
		its, err := c.Provider.InstanceTypes(ctx, &pools[i])
		if err != nil {
			c.log().Error("could not get instance types", "nodepool", pools[i].Name, "err", err)
			continue
		}
		its, conflicts, err := pricing.Adjust(its, c.CostModel, c.NodeOverlays)
		if err != nil {
			c.log().Error("could not apply the cost model", "nodepool", pools[i].Name, "err", err)
			continue
		}
		for _, cf := range conflicts {
			c.log().Debug("nodeoverlay conflict", "nodepool", pools[i].Name, "message", cf.String())
		}
		volumes, err := c.volumeCost(&pools[i])
		if err != nil {
			// Unpriced is never free: without its volumes' price the pool is left out.
			c.log().Error("could not price the node class's volumes", "nodepool", pools[i].Name, "err", err)
			continue
		}
		if extra := c.NodeCost.Pools[pools[i].Name] + volumes; extra != 0 {
			if cost.Pools == nil {
				cost.Pools = map[string]float64{}
			}
			cost.Pools[pools[i].Name] = extra
		}
		out[pools[i].Name] = its
	}
	c.Metrics.Offerings(out)
	return out, cost
}

// volumeCost is what the EBS volumes of the pool's EC2NodeClass cost per node and hour: zero
// without [Controller.NodeClass], for a class of another kind, or one not found (the provider
// launches nothing for it).
func (c *Controller) volumeCost(pool *nodeplan.NodePool) (float64, error) {
	ref := pool.Template.NodeClassRef
	if c.NodeClass == nil || ref.Kind != "" && ref.Kind != ec2.KindNodeClass {
		return 0, nil
	}
	class, ok := c.NodeClass(ref.Name)
	if !ok || class == nil {
		return 0, nil
	}
	return class.VolumeCost(c.EBSPrices)
}

// schedulingInput builds the solver's view: initialized nodes with their pods, and every claim
// still on its way (launching, launched, registered) as in-flight capacity.
func (c *Controller) schedulingInput(s snapshot, pending []*corev1.Pod, pools []nodeplan.NodePool) scheduling.Input {
	in := scheduling.Input{
		Pods:       pending,
		NodePools:  pools,
		DaemonSets: s.daemonSets,
		Namespaces: s.namespaces,
	}
	inFlightNodes := map[string]bool{}
	pendingKeys := map[string]bool{}
	for _, p := range pending {
		pendingKeys[nodeplan.PodKey(p)] = true
	}
	for _, cl := range c.tracker.List() {
		switch cl.Phase {
		case PhaseLaunching, PhaseLaunched, PhaseRegistered:
			if awaitingInstance(cl) {
				continue // restored, or failed, without an instance: nothing to count on
			}
			nc := cl.NodeClaim
			nc.Resources = c.reserved(cl, pendingKeys)
			in.NodeClaims = append(in.NodeClaims, nc)
			if cl.Status.NodeName != "" {
				inFlightNodes[cl.Status.NodeName] = true
			}
		case PhaseTerminating:
			inFlightNodes[cl.Status.NodeName] = true // leaving: not room for anyone
		}
	}
	for _, n := range s.nodes {
		// A Node still carrying karpenter.sh/unregistered takes no pod until its claim's
		// controller registers it: one of ours is counted through its claim above, and one of
		// nobody's (its instance gone before it registered) never will.
		if inFlightNodes[n.Name] || n.DeletionTimestamp != nil || n.Annotations[AnnotationTerminating] != "" ||
			hasTaint(n, nodeplan.TaintUnregistered) {
			continue
		}
		in.Nodes = append(in.Nodes, scheduling.Node{Node: n, Pods: s.podsByNode[n.Name]})
	}
	return in
}

// reserved returns the room an in-flight claim keeps for the pods it was launched for: its
// Resources less the requests of planned pods that are pending again (the solver places them
// afresh) or gone (evicted and recreated under new names, or deleted). Pods still running
// elsewhere — a replacement's pods before they move — keep their room. An adopted claim
// reserves nothing: after a restart the pending pods are all there is to go on.
func (c *Controller) reserved(cl *Claim, pending map[string]bool) corev1.ResourceList {
	if cl.Adopted {
		return nil
	}
	out := cl.Resources
	for key, req := range cl.Planned {
		if _, exists, _ := c.podLister.GetByKey(key); pending[key] || !exists {
			out = nodeplan.SubtractResources(out, req)
		}
	}
	return out
}

// provision runs one batch: solve for the provisionable pods and launch what the solver asks.
func (c *Controller) provision(ctx context.Context) {
	s := c.snapshot()
	var pending []*corev1.Pod
	for _, p := range s.pods {
		if provisionable(p) {
			pending = append(pending, p)
		}
	}
	if c.Metrics != nil {
		c.Metrics.PodsPending.Set(float64(len(pending)))
	}
	// CapacityBuffers' slots are solved with the real pods, after them (buffers.go).
	virtual := c.bufferPods()
	pending = append(pending, virtual...)
	if len(pending) == 0 {
		return
	}
	pools, err := c.NodePools.NodePools()
	if err != nil {
		c.log().Error("could not provision: nodepools unavailable", "pods", len(pending), "err", err)
		return
	}
	// Static pools keep their replica count whatever the pods: the solver never launches
	// for them (their nodes are still room pods may use).
	pools = slices.DeleteFunc(slices.Clone(pools), isStatic)
	if len(pools) == 0 {
		c.log().Error("could not provision: every NodePool is static (spec.replicas)", "pods", len(pending))
		return
	}
	// Volumes pin pods to zones (a bound volume's, a StorageClass's allowed topology); pods
	// kube-scheduler will not place because of their volumes are reported, not solved.
	vols := scheduling.ResolveVolumes(pending, s.volumes)
	if len(vols.Problems) > 0 {
		bad := map[string]bool{}
		for _, pr := range vols.Problems {
			bad[pr.Pod] = true
			c.log().Error("could not schedule pod", "pod", pr.Pod, "reason", "VolumeProblem", "message", pr.Reason)
		}
		for _, p := range pending {
			if bad[nodeplan.PodKey(p)] {
				c.event(p, corev1.EventTypeWarning, "FailedScheduling", "Failed to schedule pod, %s",
					vols.Problems[slices.IndexFunc(vols.Problems, func(v scheduling.VolumeProblem) bool { return v.Pod == nodeplan.PodKey(p) })].Reason)
			}
		}
		pending = slices.DeleteFunc(pending, func(p *corev1.Pod) bool { return bad[nodeplan.PodKey(p)] })
		if len(pending) == 0 {
			return
		}
	}
	in := c.schedulingInput(s, pending, pools)
	in.VolumeZones = vols.Zones
	scheduling.AttachLimits(in.Nodes, s.volumes.CSINodes)
	in.PoolInstanceTypes, in.Options.NodeCost = c.instanceTypes(ctx, in.NodePools)
	in.Options.Preferences = c.Preferences
	in.Options.MinValues = c.MinValues
	start := time.Now() // the solver's own cost, in real time even on a simulated clock
	queue := c.Metrics.SchedulingStarted(len(in.Pods))
	res, err := c.Solve(ctx, in)
	if err == nil {
		c.Metrics.SchedulingDone(queue, len(res.Unschedulable))
	}
	if c.Metrics != nil {
		c.Metrics.SolveDuration.Observe(time.Since(start).Seconds())
	}
	if err != nil {
		c.log().Error("could not solve", "pods", len(pending), "err", err)
		return
	}
	c.Metrics.ProvisioningSolved(res.Cost, res.LowerBound, unplacedByCode(res.Unschedulable))
	c.noteBufferPlacement(virtual, res)
	level := slog.LevelInfo
	if len(res.NodeClaims) == 0 && len(res.Unschedulable) == 0 {
		level = slog.LevelDebug // the pods wait for nodes already on their way: nothing new to say
	}
	attrs := []any{"pods", len(pending) - len(virtual)}
	if len(virtual) > 0 {
		attrs = append(attrs, "buffer-pods", len(virtual))
	}
	attrs = append(attrs, "nodeclaims", len(res.NodeClaims), "cost", Dollars(res.Cost))
	if res.NodeCost != 0 {
		// The part of cost that is the nodes' own (NodeCost), not their instances' prices.
		attrs = append(attrs, "node-cost", Dollars(res.NodeCost))
	}
	c.log().Log(ctx, level, "found provisionable pod(s)", append(attrs,
		"lower-bound", Dollars(res.LowerBound), "duration", time.Since(start).Round(time.Microsecond))...)
	if level == slog.LevelInfo {
		c.emit(Event{Kind: EventSolved, Pods: len(pending) - len(virtual), BufferPods: len(virtual), NodeClaims: len(res.NodeClaims),
			Cost: res.Cost, NodeCost: res.NodeCost})
	}

	byKey := map[string]*corev1.Pod{}
	for _, p := range pending {
		byKey[nodeplan.PodKey(p)] = p
	}
	now := c.now()
	nominate := func(name, kind string, pods []string) {
		c.mu.Lock()
		c.nominated[name] = now.Add(nominationTTL)
		c.mu.Unlock()
		for _, k := range pods {
			c.event(byKey[k], corev1.EventTypeNormal, "Nominated", "Pod should schedule on: %s/%s", kind, name)
		}
	}
	for _, pl := range res.Existing {
		nominate(pl.Name, "node", pl.Pods)
	}
	for _, pl := range res.InFlight {
		nominate(pl.Name, "nodeclaim", pl.Pods)
	}
	for _, u := range res.Unschedulable {
		c.log().Error("could not schedule pod", "pod", u.Pod, "reason", string(u.Code), "error", u.Message)
		c.emit(Event{Kind: EventPodUnschedulable, Pod: u.Pod, Reason: string(u.Code), Message: u.Message})
		c.event(byKey[u.Pod], corev1.EventTypeWarning, "FailedScheduling", "Failed to schedule pod, %s", u.Message)
	}
	if len(res.NodeClaims) > 0 {
		c.log().Info("computed new nodeclaim(s) to fit pod(s)", "nodeclaims", len(res.NodeClaims), "pods", countPods(res.NodeClaims))
	}
	for _, nc := range res.NodeClaims {
		name := c.launchFor(ctx, nc, "provisioning", byKey)
		nominate(name, "nodeclaim", nc.Pods)
	}
}

// nominationTTL is how long a node the solver picked for pending pods is kept from emptiness
// consolidation, so it is not removed while the scheduler is about to use it.
const nominationTTL = 30 * time.Second

// launchRetry is how long after a failed launch (other than for capacity) pods are solved again.
const launchRetry = 30 * time.Second

func countPods(ncs []scheduling.NewNodeClaim) int {
	n := 0
	for _, nc := range ncs {
		n += len(nc.Pods)
	}
	return n
}

// launch records a new claim and starts its launch in the background, bounded by
// LaunchConcurrency. It returns the claim's name.
func (c *Controller) launch(ctx context.Context, nc scheduling.NewNodeClaim, why string) string {
	return c.launchFor(ctx, nc, why, nil)
}

// launchFor is launch with the pods the claim is for at hand (pending, CapacityBuffer slots
// included): the room each takes is recorded, so a slot's room — a pod nobody will create —
// is released at the next solve ([Controller.reserved]) and the slot placed on it again
// rather than launched for twice.
func (c *Controller) launchFor(ctx context.Context, nc scheduling.NewNodeClaim, why string, pods map[string]*corev1.Pod) string {
	claim := nc.NodeClaim
	claim.Name = c.newClaimName(claim.NodePool)
	// The installation's identity goes with the launch (a provider that records annotations,
	// or tags by its own option as EC2 does), so an instance whose claim is lost is still
	// known as ours.
	claim.Annotations = maps.Clone(claim.Annotations)
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	claim.Annotations[AnnotationInstallation] = c.installation()
	c.stampPoolHash(&claim)
	if pool, ok := c.pool(claim.NodePool); ok {
		if claim.TerminationGracePeriod == 0 {
			claim.TerminationGracePeriod = pool.Template.TerminationGracePeriod
		}
	}
	planned := map[string]corev1.ResourceList{}
	for _, key := range nc.Pods {
		if p := pods[key]; p != nil {
			planned[key] = nodeplan.PodRequests(p)
		} else if o, ok, _ := c.podLister.GetByKey(key); ok {
			planned[key] = nodeplan.PodRequests(o.(*corev1.Pod))
		}
	}
	c.tracker.Begin(claim, why != "provisioning", planned, c.now())
	// The object comes first: a crash during the cloud call leaves a NodeClaim saying so,
	// which the next run binds to the instance, if there is one.
	if err := c.createClaimObject(ctx, c.tracker.Get(claim.Name)); err != nil {
		c.tracker.Forget(claim.Name)
		c.log().Error("could not create nodeclaim; not launching", "nodeclaim", claim.Name, "nodepool", claim.NodePool, "err", err)
		c.batch.trigger(c.now().Add(launchRetry))
		return claim.Name
	}
	if c.Metrics != nil {
		c.Metrics.NodeClaimCreated(claim.NodePool, why)
	}
	c.log().Info("created nodeclaim", "nodepool", claim.NodePool, "nodeclaim", claim.Name,
		"requests", Resources(claim.Resources), "instance-types", firstNames(claim.InstanceTypeOptions, 5))
	c.emit(Event{Kind: EventNodeClaimCreated, NodeClaim: claim.Name, NodePool: claim.NodePool, Requests: claim.Resources,
		InstanceTypes: claim.InstanceTypeOptions})
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		select {
		case c.launches <- struct{}{}:
		case <-ctx.Done():
			c.tracker.Forget(claim.Name)
			c.deleteClaimObject(context.WithoutCancel(ctx), claim.Name) // never launched
			return
		}
		defer func() { <-c.launches }()
		lctx, cancel := context.WithTimeout(ctx, c.Timeouts.launch())
		defer cancel()
		launched, err := c.createWithToken(lctx, &claim) // Provider.Create, with the launch's bootstrap token (bootstrap.go)
		if err != nil && launchMayHaveSucceeded(err) && c.tracker.LaunchUnknown(claim.Name, c.now()) {
			// The cloud may have made the instance anyway (a lost answer, a timeout): the
			// claim and its object stay until a listing shows the instance, which is then
			// bound to the claim, or shows there is none.
			if ctx.Err() != nil {
				return // the next run restores the claim from its object and does the same
			}
			c.log().Error("could not launch nodeclaim; keeping it until the cloud's listings show whether an instance was made",
				"nodeclaim", claim.Name, "nodepool", claim.NodePool, "err", err)
			if c.Metrics != nil {
				c.Metrics.NodeClaimDisrupted(&claim, launchFailureReason(err))
			}
			c.batch.trigger(c.now().Add(launchRetry))
			return
		}
		if err != nil {
			c.tracker.Forget(claim.Name)
			// A failed Create leaves no instance (the provider's contract), so the object goes.
			// Were the process killed instead, the object would stay for the next run.
			c.deleteClaimObject(context.WithoutCancel(ctx), claim.Name)
			if ctx.Err() != nil {
				return
			}
			c.log().Error("could not launch nodeclaim", "nodeclaim", claim.Name, "nodepool", claim.NodePool, "err", err)
			c.emit(Event{Kind: EventLaunchFailed, NodeClaim: claim.Name, NodePool: claim.NodePool,
				Reason: launchFailureReason(err), Message: err.Error()})
			if c.Metrics != nil {
				c.Metrics.NodeClaimDisrupted(&claim, launchFailureReason(err))
			}
			// The provider marks the offerings it could not buy unavailable; a new batch
			// solves again without them, so the pods fall back to the next-best offering.
			// Other failures are retried later, not in a tight loop.
			at := c.now()
			if !cloudprovider.IsInsufficientCapacity(err) {
				at = at.Add(launchRetry)
			}
			c.batch.trigger(at)
			return
		}
		if !c.tracker.Launched(claim.Name, launched) {
			// The claim was given up while Create ran: the instance has no owner. Delete it
			// now rather than wait for garbage collection.
			c.log().Error("launch returned after the claim was abandoned; deleting the instance",
				"nodeclaim", claim.Name, "provider-id", launched.Status.ProviderID)
			// Not past a shutdown: a deletion that cannot succeed would hold Run for ever. The
			// instance carries this installation's tags, so the next run finds it.
			c.deleteInstance(ctx, launched.Status.ProviderID)
			return
		}
		st := launched.Status
		attrs := []any{"nodeclaim", claim.Name, "nodepool", claim.NodePool, "provider-id", st.ProviderID,
			"instance-type", st.InstanceType, "zone", st.Zone, "capacity-type", string(st.CapacityType),
			"price", Dollars(st.Price), "allocatable", Resources(st.Allocatable), "pods", len(nc.Pods)}
		planned := ""
		if nc.InstanceType != "" && (nc.InstanceType != st.InstanceType || nc.Offering.Zone != st.Zone ||
			nc.Offering.CapacityType != st.CapacityType) {
			// The cloud fell back to a later option (capacity errors): say what was wanted.
			planned = fmt.Sprintf("%s/%s/%s", nc.InstanceType, nc.Offering.Zone, nc.Offering.CapacityType)
			attrs = append(attrs, "planned", planned)
		}
		if why != "provisioning" {
			attrs = append(attrs, "for", why)
		}
		c.log().Info("launched nodeclaim", attrs...)
		ev := Event{Kind: EventNodeClaimLaunched, NodeClaim: claim.Name, NodePool: claim.NodePool, InstanceType: st.InstanceType,
			Zone: st.Zone, CapacityType: st.CapacityType, Price: st.Price, Allocatable: st.Allocatable, Pods: len(nc.Pods),
			Planned: planned}
		if why != "provisioning" {
			ev.Reason = why
		}
		c.emit(ev)
		c.writeClaim(ctx, claim.Name)
		if c.Metrics != nil {
			c.Metrics.NodeClaimLaunched(launched)
		}
	}()
	return claim.Name
}

func launchFailureReason(err error) string {
	switch {
	case cloudprovider.IsInsufficientCapacity(err):
		return "insufficient_capacity"
	case cloudprovider.IsNodeClassNotReady(err):
		return "nodeclass_not_ready"
	}
	return "launch_failed"
}
