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

	"github.com/nodeplan/nodeplan"
)

// terminate drains a claim's node and deletes it, in the background:
//
//  1. taint the node karpenter.sh/disrupted:NoSchedule and annotate it as terminating, so no
//     new pod lands and a restart resumes the drain;
//  2. evict its pods through the Eviction API, which honours PodDisruptionBudgets: a 429 is
//     retried every EvictionRetry;
//  3. once the claim's terminationGracePeriod has passed since the drain began, delete the
//     pods still there without waiting for PDBs (a zero period waits for ever);
//  4. Provider.Delete until the instance is gone, then delete the Node object.
//
// DaemonSet and mirror pods are left: they go with the node.
func (c *Controller) terminate(ctx context.Context, cl *Claim, reason string) {
	if !c.claimBusy("terminate/" + cl.Name) {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.release("terminate/" + cl.Name)
		c.tracker.StartTermination(cl.Name, reason)
		if cl.Status.NodeName != "" && c.node(cl.Status.NodeName) != nil {
			if !c.drain(ctx, cl, reason) {
				return
			}
		}
		c.finishNow(ctx, cl, reason)
	}()
}

func (c *Controller) finishNow(ctx context.Context, cl *Claim, reason string) {
	if cl.Status.ProviderID != "" && !c.deleteInstance(ctx, cl.Status.ProviderID) {
		return
	}
	c.deleteNodeObject(ctx, cl.Status.NodeName)
	c.tracker.Forget(cl.Name)
	c.log().Info("deleted nodeclaim", "nodeclaim", cl.Name, "node", cl.Status.NodeName, "reason", reason,
		"provider-id", cl.Status.ProviderID)
	if c.Metrics != nil {
		c.Metrics.ClaimsTerminated.WithLabelValues(cl.NodePool, reason).Inc()
	}
}

// drain taints the node and evicts its pods; it reports false when ctx ended first.
func (c *Controller) drain(ctx context.Context, cl *Claim, reason string) bool {
	node := cl.Status.NodeName
	start := c.now()
	err := c.updateNode(ctx, node, func(n *corev1.Node) {
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
	})
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		c.log().Error("could not taint node", "node", node, "err", err)
	} else {
		c.log().Info("tainted node", "node", node, "taint", nodeplan.TaintDisrupted+":NoSchedule")
	}
	var forceAt time.Time
	if cl.TerminationGracePeriod > 0 {
		forceAt = start.Add(cl.TerminationGracePeriod)
	}
	evicted := map[string]time.Time{} // pod key → when to try again
	blockedLogged := map[string]bool{}
	for {
		pods := drainable(c.podsOn(node))
		if len(pods) == 0 {
			return true
		}
		now := c.now()
		force := !forceAt.IsZero() && !now.Before(forceAt)
		for _, p := range pods {
			key := nodeplan.PodKey(p)
			if force {
				if p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0 {
					continue
				}
				zero := int64(0)
				err := c.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
				if err == nil || apierrors.IsNotFound(err) {
					c.log().Info("deleted pod: terminationGracePeriod elapsed", "pod", key, "node", node,
						"terminationGracePeriod", cl.TerminationGracePeriod)
					c.event(p, corev1.EventTypeWarning, "Disrupted", "Deleted pod: node %s reached its terminationGracePeriod", node)
				}
				continue
			}
			if p.DeletionTimestamp != nil || now.Before(evicted[key]) {
				continue
			}
			err := c.Client.PolicyV1().Evictions(p.Namespace).Evict(ctx, &policyv1.Eviction{
				ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
			})
			switch {
			case err == nil:
				c.log().Debug("evicted pod", "pod", key, "node", node)
				c.event(p, corev1.EventTypeNormal, "Evicted", "Evicted pod: node %s is being disrupted (%s)", node, reason)
				evicted[key] = now.Add(orDefault(c.EvictionRetry, 5*time.Second))
			case apierrors.IsTooManyRequests(err):
				// A PodDisruptionBudget allows no disruption now; try again later.
				if !blockedLogged[key] {
					c.log().Info("eviction refused by a PodDisruptionBudget; will retry", "pod", key, "node", node)
					c.event(c.node(node), corev1.EventTypeWarning, "FailedDraining",
						"Failed to drain node, pod %s is protected by a PodDisruptionBudget", key)
					blockedLogged[key] = true
				}
				evicted[key] = now.Add(orDefault(c.EvictionRetry, 5*time.Second))
			case apierrors.IsNotFound(err):
			default:
				if ctx.Err() != nil {
					return false
				}
				c.log().Error("could not evict pod", "pod", key, "node", node, "err", err)
				evicted[key] = now.Add(orDefault(c.EvictionRetry, 5*time.Second))
			}
		}
		if c.sleep(ctx, drainPoll) != nil {
			return false
		}
	}
}

// annotationTerminatingSince records when the drain began, so the terminationGracePeriod
// survives a restart.
const annotationTerminatingSince = "nodeplan.io/terminating-since"

const drainPoll = 500 * time.Millisecond

// drainable returns the pods a drain must remove: not DaemonSet or mirror pods, not finished.
func drainable(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if isDaemonSetPod(p) || isMirrorPod(p) || podTerminal(p) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func describeNodes(names []string) string {
	return fmt.Sprint(names)
}
