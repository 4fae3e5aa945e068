package controller

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
)

// What the cloud leaves behind or hides. A launch can fail after the cloud made the instance:
// the answer to the fleet request was lost or timed out, or the provider's own clean-up could
// not find or terminate what it launched (EC2's DescribeInstances is eventually consistent).
// Such an instance carries its claim's name, so it is ours beyond doubt; this file makes sure it
// ends with a claim or terminated, never running unowned. And a listing can miss an instance
// that runs: before a claim is given up, the instance is looked up by its own id.

// launchMayHaveSucceeded reports whether a failed Provider.Create leaves open that an instance
// was made: every error but the cloud's definite refusals — insufficient capacity, a node
// class not ready, a launch error with a specific reason (unauthorized, no image, quota...).
func launchMayHaveSucceeded(err error) bool {
	if cloudprovider.IsInsufficientCapacity(err) || cloudprovider.IsNodeClassNotReady(err) {
		return false
	}
	r := cloudprovider.LaunchReason(err)
	return r == "" || r == cloudprovider.ReasonLaunchFailed
}

// awaitingInstance reports whether a launching claim has no Create running and waits for
// Reconcile to bind the instance the cloud may have made for it: restored from its object
// after a restart, or its Create failed without proof that nothing was launched.
func awaitingInstance(c *Claim) bool {
	return c.Phase == PhaseLaunching && (c.Adopted || !c.LaunchFailed.IsZero())
}

// LaunchUnknown records that the claim's Create failed at now without proving that nothing was
// launched. The claim stays in the table, reserving nothing and not offered to the solver, until
// [Tracker.Reconcile] binds the instance carrying its name or MissedListings listings begun
// after now over Timeouts.Collect show none (ActNoInstance). It reports false when the claim is
// not launching (gone, or already bound): the caller then treats the failure as final.
func (t *Tracker) LaunchUnknown(name string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.initLocked()
	c, ok := t.claims[name]
	if !ok || c.Phase != PhaseLaunching || c.Status.ProviderID != "" {
		return false
	}
	c.LaunchFailed = now
	c.Planned = nil // its pods are solved again; it keeps no room for them
	delete(t.missing, name)
	return true
}

// noInstanceLocked judges a claim whose launch failed without proof against a listing that did
// not show its instance (one that did has bound it already): listings begun before the failure
// prove nothing. It drops the claim once MissedListings listings over Timeouts.Collect missed
// it. t.mu must be held.
func (t *Tracker) noInstanceLocked(c *Claim, listedAt, now time.Time) (Action, bool) {
	if listedAt.Before(c.LaunchFailed) {
		return Action{}, false
	}
	m, ok := t.missing[c.Name]
	if !ok {
		m.since = listedAt
	}
	m.count++
	t.missing[c.Name] = m
	if m.count < MissedListings || now.Sub(m.since) < t.Timeouts.collect() {
		return Action{}, false
	}
	delete(t.claims, c.Name)
	delete(t.missing, c.Name)
	delete(t.poolGone, c.Name)
	t.abandoned[c.Name] = now
	return Action{Kind: ActNoInstance, Claim: copyClaim(c)}, true
}

// abandonedMemory is how long the name of a claim given up before its instance was seen is
// remembered: an instance that turns up later under that name is an orphan.
const abandonedMemory = time.Hour

// orphanLocked reports an instance no claim holds that is ours and of no use: its claim tag
// names a claim that is bound to another instance, or that this run gave up before an instance
// was seen, or it carries this installation's identity (t.Installation, set at launch) under a
// claim name the table does not hold — every claim of this installation is in the table from
// before its Create until its instance is gone, and a restart loads them all before the first
// listing. Each is reported once while it is listed. A Node that registered for it and was
// initialized by someone (no karpenter.sh/unregistered taint left) keeps it a stray: something
// else runs it. t.mu must be held.
func (t *Tracker) orphanLocked(inst *nodeplan.NodeClaim, n *corev1.Node, now time.Time) (Action, bool) {
	for name, at := range t.abandoned {
		if now.Sub(at) > abandonedMemory {
			delete(t.abandoned, name)
		}
	}
	id := inst.Status.ProviderID
	if inst.Name == "" {
		return Action{}, false
	}
	c := t.claims[inst.Name]
	_, gaveUp := t.abandoned[inst.Name]
	mine := t.Installation != "" && inst.Annotations[AnnotationInstallation] == t.Installation
	ours := (gaveUp || mine) && c == nil || c != nil && c.Status.ProviderID != "" && c.Status.ProviderID != id
	if !ours || (n != nil && !hasTaint(n, nodeplan.TaintUnregistered)) {
		return Action{}, false
	}
	if t.orphans[id] {
		return Action{}, true // reported; its termination is under way
	}
	t.orphans[id] = true
	a := Action{Kind: ActOrphan, ProviderID: id, Node: nodeName(n)}
	if c != nil {
		a.Claim = copyClaim(c)
	}
	return a, true
}

// collectOrphan terminates an orphan instance in the background, then deletes its Node if one
// registered (never initialized, so no pod ran there). A shutdown stops the retries; the next
// run's listing shows the instance again.
func (c *Controller) collectOrphan(ctx context.Context, a Action) {
	if !c.claimBusy("orphan/" + a.ProviderID) {
		return
	}
	claim := ""
	if a.Claim != nil {
		claim = a.Claim.Name
	}
	c.log().Info("instance was launched for a nodeclaim that cannot use it; terminating it", "nodeclaim", claim,
		"provider-id", a.ProviderID, "node", a.Node)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.release("orphan/" + a.ProviderID)
		if !c.deleteInstance(ctx, a.ProviderID) {
			return
		}
		// Its Node, if one registered (now or while the instance was deleted), was never
		// initialized: orphanLocked leaves alone an instance whose Node someone initialized.
		c.deleteLateNodes(ctx, a.ProviderID, "")
	}()
}

// Restore puts back a claim that [Tracker.Reconcile] gave up (ActInstanceGone) when the instance
// turns out to be there after all, with its count of missed listings reset. It reports false
// when the name was taken meanwhile.
func (t *Tracker) Restore(c *Claim) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.initLocked()
	if _, ok := t.claims[c.Name]; ok {
		return false
	}
	t.claims[c.Name] = copyClaim(c)
	delete(t.missing, c.Name)
	return true
}

// instanceStillThere asks the provider for the instance of a claim the listings have missed
// long enough to give it up: a lookup by id does not depend on the listing's filters and
// pages. Only NotFound confirms the instance is gone; an instance found, or an error (the
// answer unknown), restores the claim, which the next listings judge again.
func (c *Controller) instanceStillThere(ctx context.Context, cl *Claim) bool {
	_, err := c.Provider.Get(ctx, cl.Status.ProviderID)
	if cloudprovider.IsNotFound(err) {
		return false
	}
	if c.tracker.Restore(cl) {
		if err != nil {
			c.log().Info("listings missed the instance of a nodeclaim and it could not be looked up; keeping the nodeclaim",
				"nodeclaim", cl.Name, "provider-id", cl.Status.ProviderID, "err", err)
		} else {
			c.log().Info("listings missed the instance of a nodeclaim, but it is there; keeping the nodeclaim",
				"nodeclaim", cl.Name, "provider-id", cl.Status.ProviderID)
		}
	}
	return true
}

// sweepUnregisteredNodes deletes the Nodes that can never be used: still carrying
// karpenter.sh/unregistered (no controller ever registered them, so no pod ran there), older
// than Timeouts.Collect, with a provider ID of the provider's scheme that is neither in the
// listing nor a claim's, and whose instance a lookup by id confirms gone — what a cloud's node
// lifecycle controller removes. An orphan's Node whose deletion a restart interrupted ends so.
// Nodes of live instances (another installation's, registering) are never touched.
func (c *Controller) sweepUnregisteredNodes(ctx context.Context, insts []*nodeplan.NodeClaim) {
	listed := map[string]bool{}
	schemes := map[string]bool{}
	for _, i := range insts {
		listed[i.Status.ProviderID] = true
		schemes[providerScheme(i.Status.ProviderID)] = true
	}
	for _, cl := range c.tracker.List() {
		listed[cl.Status.ProviderID] = true
		schemes[providerScheme(cl.Status.ProviderID)] = true
	}
	now := c.now()
	for _, n := range c.nodes() {
		id := n.Spec.ProviderID
		if id == "" || listed[id] || !schemes[providerScheme(id)] || !hasTaint(n, nodeplan.TaintUnregistered) ||
			now.Sub(n.CreationTimestamp.Time) < c.Timeouts.collect() || n.DeletionTimestamp != nil {
			continue
		}
		if _, err := c.Provider.Get(ctx, id); !cloudprovider.IsNotFound(err) {
			continue
		}
		c.log().Info("deleting node that never registered and whose instance is gone", "node", n.Name, "provider-id", id)
		c.deleteNodeUntilGone(ctx, n.Name)
	}
}

// providerScheme returns the scheme of a provider ID ("aws" of aws:///zone/i-…), or "".
func providerScheme(id string) string {
	scheme, _, ok := strings.Cut(id, "://")
	if !ok {
		return ""
	}
	return scheme
}
