package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
)

// terminate drains a claim's node and deletes it, in the background:
//
//  1. a graceful termination (see [gracefulTermination]) first checks its rules again, as they
//     stand now rather than when the command was planned: the node's and its pods'
//     karpenter.sh/do-not-disrupt and the PodDisruptionBudgets. A node that became blocked is
//     left alone and the command reported cancelled;
//  2. taint the node karpenter.sh/disrupted:NoSchedule and annotate it as terminating, so no
//     new pod lands and a restart resumes the drain;
//  3. evict its pods through the Eviction API, which enforces PodDisruptionBudgets (a 429 is
//     retried every EvictionRetry). Each pod is read again just before its eviction: a
//     do-not-disrupt found then cancels a graceful drain (the node is untainted) and holds a
//     forceful one until the deadline;
//  4. with a terminationGracePeriod, each pod still there is deleted its own
//     terminationGracePeriodSeconds before the node's deadline, so it can shut down
//     gracefully, PDBs and do-not-disrupt notwithstanding; at the deadline the drain ends;
//  5. Provider.Delete until the instance is gone, then delete the Node object.
//
// DaemonSet and mirror pods are left: they go with the node.
func (c *Controller) terminate(ctx context.Context, cl *Claim, reason string) {
	c.terminateAs(ctx, cl, reason, gracefulTermination(reason, cl))
}

// terminateAs is terminate with the class given: a disruption command's (its Mode), or for a
// termination no command started, [gracefulTermination]'s.
func (c *Controller) terminateAs(ctx context.Context, cl *Claim, reason string, graceful bool) {
	if !c.claimBusy("terminate/" + cl.Name) {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.release("terminate/" + cl.Name)
		started := c.now()
		hasNode := cl.Status.NodeName != "" && c.node(cl.Status.NodeName) != nil
		if graceful && hasNode {
			if why := c.drainBlocker(ctx, cl.Status.NodeName); why != "" {
				c.cancelDrain(ctx, cl, reason, why)
				return
			}
		}
		c.tracker.StartTermination(cl.Name, reason)
		if hasNode {
			if c.drain(ctx, cl, reason, graceful) != drained {
				return
			}
		}
		c.finishNow(ctx, cl, reason, started)
	}()
}

// gracefulTermination reports whether a termination no disruption command started (a deleted
// NodeClaim or Node, a resumed drain, a static pool's scale-down or drift) respects
// do-not-disrupt and PDBs throughout (and is cancelled when they block it), or only until the
// node's terminationGracePeriod. It follows the planner's modes (disruption.Command.Mode):
// emptiness and consolidation are graceful; drift is graceful unless the claim has a
// terminationGracePeriod to bound it; interruption, expiration, a deleted Node and every
// other reason are forceful.
func gracefulTermination(reason string, cl *Claim) bool {
	switch nodeplan.DisruptionReason(reason) {
	case nodeplan.ReasonEmpty, nodeplan.ReasonUnderutilized:
		return true
	case nodeplan.ReasonDrifted:
		return cl.TerminationGracePeriod <= 0
	}
	return false
}

// drainOutcome is how a drain ended.
type drainOutcome int

const (
	// drained: no pod left to wait for; the instance can go.
	drained drainOutcome = iota
	// drainStopped: ctx ended; a restart resumes the drain from the node's annotations.
	drainStopped
	// drainCancelled: a graceful drain found the node blocked and released it.
	drainCancelled
)

// finishNow deletes the instance, then the Node, then the claim; started is when the
// termination began, for the termination-duration series.
func (c *Controller) finishNow(ctx context.Context, cl *Claim, reason string, started time.Time) {
	if cl.Status.ProviderID != "" && !c.deleteInstance(ctx, cl.Status.ProviderID) {
		return
	}
	// The claim is forgotten only once its Node is gone: a Node left behind would stay for
	// ever, with no claim to clean it up. On shutdown the claim's object stays, and the next
	// run finishes the termination.
	if !c.deleteNodeUntilGone(ctx, cl.Status.NodeName) {
		return
	}
	if cl.Status.NodeName != "" {
		c.Metrics.NodeTerminated(cl.NodePool, c.now().Sub(started).Seconds())
	}
	// A Node that registered while the instance was being deleted (a claim interrupted before
	// its Node came) would otherwise stay for ever, NotReady, with no claim to clean it up.
	if cl.Status.NodeName == "" && !c.deleteLateNodes(ctx, cl.Status.ProviderID, "") {
		return
	}
	c.tracker.Forget(cl.Name)
	c.deleteClaimObject(ctx, cl.Name)
	c.log().Info("deleted nodeclaim", "nodeclaim", cl.Name, "node", cl.Status.NodeName, "reason", reason,
		"provider-id", cl.Status.ProviderID)
	c.emit(Event{Kind: EventNodeClaimDeleted, NodeClaim: cl.Name, NodePool: cl.NodePool, Node: cl.Status.NodeName, Reason: reason})
	if c.Metrics != nil {
		c.Metrics.NodeClaimTerminated(&cl.NodeClaim)
		c.Metrics.NodeClaimTerminationDuration(cl.NodePool, c.now().Sub(started).Seconds())
	}
}

// deleteLateNodes deletes, once providerID's instance is gone, the Nodes with that provider ID
// other than known (already handled), read from the API server rather than the cache: the
// cache may not have seen a registration that raced with the deletion.
// It reports false when ctx ended first.
func (c *Controller) deleteLateNodes(ctx context.Context, providerID, known string) bool {
	if providerID == "" {
		return true
	}
	var b backoff
	for {
		nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, n := range nodes.Items {
				if n.Spec.ProviderID == providerID && n.Name != known {
					c.log().Info("deleting node registered for an instance already deleted", "node", n.Name, "provider-id", providerID)
					if !c.deleteNodeUntilGone(ctx, n.Name) {
						return false
					}
				}
			}
			return true
		}
		if ctx.Err() == nil {
			c.log().Error("could not list nodes to find one registered for a deleted instance; retrying", "provider-id", providerID, "err", err)
		}
		if b.wait(ctx, c) != nil {
			return false
		}
	}
}

// deleteNodeUntilGone deletes a Node object (its termination finalizer lifted first), retrying
// with backoff until it is gone. It reports false when ctx ended first.
func (c *Controller) deleteNodeUntilGone(ctx context.Context, name string) bool {
	if name == "" {
		return true
	}
	var b backoff
	for {
		err := c.updateNode(ctx, name, func(n *corev1.Node) {
			n.Finalizers = slices.DeleteFunc(n.Finalizers, func(f string) bool { return f == FinalizerTermination })
		})
		if err == nil {
			err = c.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
			if err == nil {
				c.log().Info("deleted node", "node", name)
				c.emit(Event{Kind: EventNodeDeleted, Node: name})
				return true
			}
		}
		if apierrors.IsNotFound(err) {
			return true
		}
		if ctx.Err() == nil {
			c.log().Error("could not delete node; retrying", "node", name, "err", err)
		}
		if b.wait(ctx, c) != nil {
			return false
		}
	}
}

// drain taints the node and evicts its pods.
func (c *Controller) drain(ctx context.Context, cl *Claim, reason string, graceful bool) drainOutcome {
	node := cl.Status.NodeName
	start := c.now()
	taint := func(n *corev1.Node) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		if at, err := time.Parse(time.RFC3339, n.Annotations[annotationTerminatingSince]); err == nil {
			start = at // resuming after a restart: the grace period keeps counting
		} else {
			n.Annotations[annotationTerminatingSince] = start.UTC().Format(time.RFC3339)
		}
		n.Annotations[AnnotationTerminating] = reason
		if !slices.ContainsFunc(n.Spec.Taints, isDisruptedTaint) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: nodeplan.TaintDisrupted, Effect: corev1.TaintEffectNoSchedule})
		}
	}
	// No eviction before the taint holds: on an untainted node the scheduler would put the
	// evicted pods' replacements right back, and the drain would chase them.
	var b backoff
	for {
		err := c.updateNode(ctx, node, taint)
		if apierrors.IsNotFound(err) {
			return drained
		}
		if err == nil {
			break
		}
		if ctx.Err() == nil {
			c.log().Error("could not taint node; retrying", "node", node, "err", err)
		}
		if b.wait(ctx, c) != nil {
			return drainStopped
		}
	}
	c.log().Info("tainted node", "node", node, "taint", nodeplan.TaintDisrupted+":NoSchedule")
	c.emit(Event{Kind: EventNodeTainted, NodeClaim: cl.Name, NodePool: cl.NodePool, Node: node, Reason: reason})
	var deadline time.Time
	if cl.TerminationGracePeriod > 0 {
		deadline = start.Add(cl.TerminationGracePeriod)
	}
	retry := orDefault(c.EvictionRetry, 5*time.Second)
	retryAt := map[string]time.Time{} // pod key → when to try evicting again
	deleted := map[string]bool{}      // pods deleted ahead of the deadline
	logged := map[string]bool{}
	for {
		pods := drainable(c.podsOn(node))
		if len(pods) == 0 {
			return drained
		}
		now := c.now()
		if !deadline.IsZero() && !now.Before(deadline) {
			// Every pod was deleted its own grace period before now; those still shutting
			// down go with the instance, as they would with Karpenter.
			c.log().Info("terminationGracePeriod elapsed; terminating the node", "node", node,
				"terminationGracePeriod", cl.TerminationGracePeriod, "pods", len(pods))
			for _, p := range pods {
				if p.DeletionTimestamp == nil && !deleted[nodeplan.PodKey(p)] {
					c.deletePod(ctx, p, node, 0, cl.TerminationGracePeriod)
				}
			}
			return drained
		}
		if graceful {
			if n := c.node(node); n != nil && nodeplan.NodeDoNotDisrupt(n.Annotations) {
				c.cancelDrain(ctx, cl, reason, fmt.Sprintf("node %s is annotated %s", node, nodeplan.AnnotationDoNotDisrupt))
				return drainCancelled
			}
		}
		for _, p := range pods {
			key := nodeplan.PodKey(p)
			if p.DeletionTimestamp != nil || deleted[key] {
				continue
			}
			if !deadline.IsZero() {
				grace := podGracePeriod(p)
				if !now.Before(deadline.Add(-grace)) {
					// Karpenter's rule: a pod is deleted its terminationGracePeriodSeconds
					// before the node's deadline, with what is left of it.
					c.deletePod(ctx, p, node, min(grace, deadline.Sub(now)), cl.TerminationGracePeriod)
					deleted[key] = true
					continue
				}
			}
			if now.Before(retryAt[key]) {
				continue
			}
			// The rules as they stand at the moment of eviction, not as the cache had them.
			live, err := c.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				if ctx.Err() != nil {
					return drainStopped
				}
				c.log().Error("could not read pod before evicting it", "pod", key, "node", node, "err", err)
				retryAt[key] = now.Add(retry)
				continue
			}
			if live.Spec.NodeName != node || live.DeletionTimestamp != nil || nodeplan.PodTerminal(live) {
				continue
			}
			if nodeplan.DoNotDisrupt(live, now) {
				why := fmt.Sprintf("pod %s is annotated %s: %q", key, nodeplan.AnnotationDoNotDisrupt,
					live.Annotations[nodeplan.AnnotationDoNotDisrupt])
				if graceful {
					c.cancelDrain(ctx, cl, reason, why)
					return drainCancelled
				}
				if !logged["dnd/"+key] {
					c.log().Info("not evicting pod: do-not-disrupt; it waits for the node's terminationGracePeriod",
						"pod", key, "node", node, "terminationGracePeriod", cl.TerminationGracePeriod)
					logged["dnd/"+key] = true
				}
				retryAt[key] = now.Add(retry)
				continue
			}
			err = c.Client.PolicyV1().Evictions(p.Namespace).Evict(ctx, &policyv1.Eviction{
				ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
			})
			switch {
			case err == nil:
				c.log().Debug("evicted pod", "pod", key, "node", node)
				c.event(p, corev1.EventTypeNormal, "Evicted", "Evicted pod: node %s is being disrupted (%s)", node, reason)
				retryAt[key] = now.Add(retry)
			case apierrors.IsTooManyRequests(err):
				// A PodDisruptionBudget allows no disruption now; try again later.
				if !logged["pdb/"+key] {
					c.log().Info("eviction refused by a PodDisruptionBudget; will retry", "pod", key, "node", node)
					c.event(c.node(node), corev1.EventTypeWarning, "FailedDraining",
						"Failed to drain node, pod %s is protected by a PodDisruptionBudget", key)
					logged["pdb/"+key] = true
				}
				retryAt[key] = now.Add(retry)
			case apierrors.IsNotFound(err):
			default:
				if ctx.Err() != nil {
					return drainStopped
				}
				c.log().Error("could not evict pod", "pod", key, "node", node, "err", err)
				retryAt[key] = now.Add(retry)
			}
		}
		if c.sleep(ctx, drainPoll) != nil {
			return drainStopped
		}
	}
}

// deletePod deletes a pod with grace (rounded down to whole seconds) because the node's
// terminationGracePeriod runs out.
func (c *Controller) deletePod(ctx context.Context, p *corev1.Pod, node string, grace, nodeGrace time.Duration) {
	secs := max(int64(grace/time.Second), 0)
	err := c.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &secs})
	if err != nil && !apierrors.IsNotFound(err) {
		if ctx.Err() == nil {
			c.log().Error("could not delete pod", "pod", nodeplan.PodKey(p), "node", node, "err", err)
		}
		return
	}
	c.log().Info("deleted pod: the node's terminationGracePeriod is running out", "pod", nodeplan.PodKey(p), "node", node,
		"terminationGracePeriod", nodeGrace, "grace-period-seconds", secs)
	c.event(p, corev1.EventTypeWarning, "Disrupted",
		"Deleted pod with %ds of grace: node %s reaches the end of its terminationGracePeriod (%s)", secs, node, nodeGrace)
}

// podGracePeriod is the pod's terminationGracePeriodSeconds, or the API's default of 30s.
func podGracePeriod(p *corev1.Pod) time.Duration {
	if s := p.Spec.TerminationGracePeriodSeconds; s != nil && *s >= 0 {
		return time.Duration(*s) * time.Second
	}
	return corev1.DefaultTerminationGracePeriodSeconds * time.Second
}

// drainBlocker returns why a graceful drain of node must not start, or "": the node's
// do-not-disrupt annotation (read from the API server), a pod's active do-not-disrupt, or a
// PodDisruptionBudget covering one of its pods that allows no disruption now (Karpenter's
// test: one eviction per PDB must be possible).
func (c *Controller) drainBlocker(ctx context.Context, node string) string {
	now := c.now()
	n, err := c.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err == nil && nodeplan.NodeDoNotDisrupt(n.Annotations) {
		return fmt.Sprintf("node %s is annotated %s", node, nodeplan.AnnotationDoNotDisrupt)
	}
	pods := drainable(c.podsOn(node))
	for _, p := range pods {
		if nodeplan.DoNotDisrupt(p, now) {
			return fmt.Sprintf("pod %s is annotated %s: %q", nodeplan.PodKey(p), nodeplan.AnnotationDoNotDisrupt,
				p.Annotations[nodeplan.AnnotationDoNotDisrupt])
		}
	}
	if len(pods) == 0 {
		return ""
	}
	var all []*corev1.Pod
	for _, o := range c.podLister.List() {
		all = append(all, o.(*corev1.Pod))
	}
	pdbs := c.pdbLister.List()
	for _, o := range pdbs {
		pdb := o.(*policyv1.PodDisruptionBudget)
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		for _, p := range pods {
			if p.Namespace != pdb.Namespace || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			if allowed, healthy, desired := disruption.PDBAllowed(pdb, all); allowed < 1 {
				return fmt.Sprintf("PodDisruptionBudget %s/%s allows no disruption now (%d healthy, %d required), and covers pod %s",
					pdb.Namespace, pdb.Name, healthy, desired, nodeplan.PodKey(p))
			}
			break
		}
	}
	return ""
}

// cancelDrain releases a node whose graceful disruption became blocked: the disrupted taint and
// the terminating annotations go, the claim is initialized again, and the cancellation is
// logged and recorded as an event on the node.
func (c *Controller) cancelDrain(ctx context.Context, cl *Claim, reason, why string) {
	node := cl.Status.NodeName
	var b backoff
	for {
		err := c.updateNode(ctx, node, func(n *corev1.Node) {
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, isDisruptedTaint)
			delete(n.Annotations, AnnotationTerminating)
			delete(n.Annotations, annotationTerminatingSince)
		})
		if err == nil || apierrors.IsNotFound(err) {
			break
		}
		if ctx.Err() == nil {
			c.log().Error("could not untaint node; retrying", "node", node, "err", err)
		}
		// On shutdown the node stays tainted and annotated: the next run resumes the drain,
		// which finds the blocker again and releases the node.
		if b.wait(ctx, c) != nil {
			return
		}
	}
	c.tracker.CancelTermination(cl.Name)
	c.log().Info("disruption command cancelled", "nodeclaim", cl.Name, "node", node, "reason", reason, "blocked-by", why)
	c.emit(Event{Kind: EventDisruptionCancelled, NodeClaim: cl.Name, NodePool: cl.NodePool, Node: node, Reason: reason, Message: why})
	c.event(c.node(node), corev1.EventTypeWarning, "DisruptionBlocked",
		"Disruption (%s) cancelled before the node was drained: %s", reason, why)
}

// CancelTermination returns a terminating claim whose node registered to the initialized
// phase: its drain was cancelled. It reports whether the claim was terminating.
func (t *Tracker) CancelTermination(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.claims[name]
	if !ok || c.Phase != PhaseTerminating || c.Status.NodeName == "" {
		return false
	}
	c.Phase = PhaseInitialized
	c.Reason = ""
	return true
}

// annotationTerminatingSince records when the drain began, so the terminationGracePeriod
// survives a restart.
const annotationTerminatingSince = "nodeplan.io/terminating-since"

const drainPoll = 500 * time.Millisecond

// drainable returns the pods a drain must remove: not DaemonSet or mirror pods, not finished.
func drainable(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if nodeplan.PodBelongsToNode(p) || nodeplan.PodTerminal(p) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func describeNodes(names []string) string {
	return fmt.Sprint(names)
}
