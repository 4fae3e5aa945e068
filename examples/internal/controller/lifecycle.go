package controller

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
)

// AnnotationTerminating marks a node whose drain has begun; its value is the reason. It is the
// controller's durable record of a termination: after a restart, nodes carrying it are drained
// and deleted, and nodes carrying the disrupted taint without it are untainted (their command
// was lost before it committed).
const AnnotationTerminating = "nodeplan.io/terminating"

// syncClaims advances the claim table against the Nodes and carries out what it asks.
func (c *Controller) syncClaims(ctx context.Context, now time.Time) {
	c.watchDeletions(ctx)
	c.sweepBootstrapTokens(ctx, now) // bootstrap.go: tokens of registered, gone or expired claims
	for _, a := range c.tracker.Sync(c.nodes(), now) {
		cl := a.Claim
		switch a.Kind {
		case ActRegister:
			if !a.Repeat {
				c.log().Info("registered nodeclaim", "nodeclaim", cl.Name, "node", a.Node, "provider-id", cl.Status.ProviderID)
				c.emit(Event{Kind: EventNodeClaimRegistered, NodeClaim: cl.Name, NodePool: cl.NodePool, Node: a.Node})
				c.Metrics.NodeRegistered(&cl.NodeClaim)
			}
			if err := c.updateNode(ctx, a.Node, func(n *corev1.Node) { registerNode(n, cl) }); err != nil {
				c.log().Error("could not sync nodeclaim onto node", "nodeclaim", cl.Name, "node", a.Node, "err", err)
			}
			if !a.Repeat {
				c.writeClaim(ctx, cl.Name)
			}
		case ActInitialize:
			c.writeClaim(ctx, cl.Name)
			c.log().Info("initialized nodeclaim", "nodeclaim", cl.Name, "node", a.Node,
				"allocatable", Resources(cl.Status.Allocatable))
			c.emit(Event{Kind: EventNodeClaimInitialized, NodeClaim: cl.Name, NodePool: cl.NodePool, Node: a.Node,
				Allocatable: cl.Status.Allocatable})
			if err := c.updateNode(ctx, a.Node, func(n *corev1.Node) {
				setLabel(n, nodeplan.LabelInitialized, "true")
			}); err != nil {
				c.log().Error("could not label node initialized", "node", a.Node, "err", err)
			}
		case ActRegistrationTimeout:
			c.log().Error("nodeclaim did not register in time; deleting its instance", "nodeclaim", cl.Name,
				"provider-id", cl.Status.ProviderID, "timeout", c.Timeouts.registration())
			c.Metrics.NodeClaimDisrupted(&cl.NodeClaim, "registration_timeout")
			c.finish(ctx, cl, "registration_timeout")
		case ActLaunchTimeout:
			c.log().Error("nodeclaim launch timed out", "nodeclaim", cl.Name, "timeout", c.Timeouts.launch())
			c.deleteClaimObject(ctx, cl.Name)
			if c.Metrics != nil {
				c.Metrics.NodeClaimDisrupted(&cl.NodeClaim, "launch_timeout")
			}
		case ActNodeGone:
			c.log().Info("node was deleted; deleting its instance", "nodeclaim", cl.Name, "node", a.Node)
			c.finish(ctx, cl, "node_deleted")
		}
	}
}

// registerNode copies what the claim promised onto its node: its labels (the kubelet may not
// have been given them), its taints, and the registered label; the unregistered taint goes.
// The node gets the termination finalizer, so `kubectl delete node` drains it first, and an
// owner reference to its NodeClaim.
func registerNode(n *corev1.Node, cl *Claim) {
	if !slices.Contains(n.Finalizers, FinalizerTermination) {
		n.Finalizers = append(n.Finalizers, FinalizerTermination)
	}
	if cl.UID != "" && !slices.ContainsFunc(n.OwnerReferences, func(r metav1.OwnerReference) bool { return string(r.UID) == cl.UID }) {
		n.OwnerReferences = append(n.OwnerReferences, metav1.OwnerReference{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim",
			Name: cl.Name, UID: types.UID(cl.UID), BlockOwnerDeletion: new(true)})
	}
	for k, v := range cl.Labels {
		if _, ok := n.Labels[k]; !ok {
			setLabel(n, k, v)
		}
	}
	if cl.NodePool != "" {
		setLabel(n, nodeplan.LabelNodePool, cl.NodePool)
	}
	// The claim's annotations (the template's, the nodepool hash) go onto the Node, as
	// Karpenter copies them; the kubelet cannot set annotations.
	for k, v := range cl.Annotations {
		if k == AnnotationInstallation {
			continue
		}
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		if _, ok := n.Annotations[k]; !ok {
			n.Annotations[k] = v
		}
	}
	setLabel(n, nodeplan.LabelRegistered, "true")
	n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == nodeplan.TaintUnregistered })
	for _, t := range cl.Taints {
		if !slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.MatchTaint(&t) }) {
			n.Spec.Taints = append(n.Spec.Taints, t)
		}
	}
}

func setLabel(n *corev1.Node, k, v string) {
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[k] = v
}

// updateNode reads the node, applies mutate and writes it back, retrying on conflicts.
func (c *Controller) updateNode(ctx context.Context, name string, mutate func(*corev1.Node)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(n)
		_, err = c.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// finish deletes a claim's instance and Node in the background and forgets the claim.
func (c *Controller) finish(ctx context.Context, cl *Claim, reason string) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.finishNow(ctx, cl, reason, c.now())
	}()
}

// deleteInstance calls Provider.Delete until the instance is gone, backing off from 1s to 30s
// between calls. It reports false when ctx ended first.
func (c *Controller) deleteInstance(ctx context.Context, providerID string) bool {
	var b backoff
	for {
		err := c.Provider.Delete(ctx, providerID)
		if cloudprovider.IsNotFound(err) {
			return true
		}
		if err != nil {
			if ctx.Err() != nil {
				return false
			}
			c.log().Error("could not delete instance", "provider-id", providerID, "err", err)
		}
		// nil means termination is under way: ask again until NotFound says it is done.
		if b.wait(ctx, c) != nil {
			return false
		}
	}
}

func (c *Controller) deleteNodeObject(ctx context.Context, name string) {
	if name == "" {
		return
	}
	err := c.updateNode(ctx, name, func(n *corev1.Node) {
		n.Finalizers = slices.DeleteFunc(n.Finalizers, func(f string) bool { return f == FinalizerTermination })
	})
	if err == nil {
		err = c.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		c.log().Error("could not delete node", "node", name, "err", err)
		return
	}
	if err == nil {
		c.log().Info("deleted node", "node", name)
		c.emit(Event{Kind: EventNodeDeleted, Node: name})
	}
}

// rebuild restores the claim table after a (re)start from the cloud's instances and the Nodes,
// resumes terminations that had begun, and lifts the taint of commands that had not.
func (c *Controller) rebuild(ctx context.Context) error {
	for _, a := range c.loadClaims(ctx) {
		c.log().Info("restored nodeclaim", "nodeclaim", a.Claim.Name, "nodepool", a.Claim.NodePool,
			"provider-id", a.Claim.Status.ProviderID, "node", a.Node, "phase", a.Claim.Phase.String())
		if a.Claim.Phase == PhaseTerminating {
			c.terminate(ctx, a.Claim, a.Claim.Reason)
		}
	}
	var insts []*nodeplan.NodeClaim
	for {
		listedAt := c.now()
		var err error
		insts, err = c.Provider.List(ctx)
		if err == nil {
			c.applyReconcile(ctx, c.tracker.Reconcile(insts, c.nodes(), c.poolNames(), listedAt, c.now()))
			break
		}
		c.log().Error("could not list instances; retrying", "err", err)
		if c.sleep(ctx, 5*time.Second) != nil {
			return nil
		}
	}
	for _, n := range c.nodes() {
		if n.Annotations[AnnotationTerminating] != "" || !slices.ContainsFunc(n.Spec.Taints, isDisruptedTaint) {
			continue
		}
		c.log().Info("removing disrupted taint left by an unfinished command", "node", n.Name)
		if err := c.updateNode(ctx, n.Name, func(n *corev1.Node) {
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, isDisruptedTaint)
		}); err != nil {
			c.log().Error("could not untaint node", "node", n.Name, "err", err)
		}
	}
	return nil
}

func isDisruptedTaint(t corev1.Taint) bool { return t.Key == nodeplan.TaintDisrupted }

// reconcile compares claims with Provider.List in the background.
func (c *Controller) reconcile(ctx context.Context) {
	if !c.claimBusy("reconcile") {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.release("reconcile")
		listedAt := c.now()
		insts, err := c.Provider.List(ctx)
		if err != nil {
			if ctx.Err() == nil {
				c.log().Error("could not list instances", "err", err)
			}
			return
		}
		c.applyReconcile(ctx, c.tracker.Reconcile(insts, c.nodes(), c.poolNames(), listedAt, c.now()))
		c.sweepUnregisteredNodes(ctx, insts) // leftovers.go
	}()
}

func (c *Controller) applyReconcile(ctx context.Context, acts []Action) {
	for _, a := range acts {
		switch a.Kind {
		case ActAdopt:
			c.log().Info("found the instance of a nodeclaim launched before a restart", "nodeclaim", a.Claim.Name,
				"nodepool", a.Claim.NodePool, "provider-id", a.Claim.Status.ProviderID, "node", a.Node, "phase", a.Claim.Phase.String())
			c.writeClaim(ctx, a.Claim.Name)
			if a.Claim.Phase == PhaseTerminating {
				c.terminate(ctx, a.Claim, a.Claim.Reason)
			}
		case ActStray:
			c.log().Info("instance has no nodeclaim; leaving it alone", "provider-id", a.ProviderID, "node", a.Node)
		case ActInstanceGone:
			if c.instanceStillThere(ctx, a.Claim) {
				continue
			}
			if a.Node == "" && a.Claim.Status.NodeName != "" {
				c.log().Error("instance is gone but its node is still Ready; deleting the nodeclaim and leaving the node",
					"nodeclaim", a.Claim.Name, "node", a.Claim.Status.NodeName, "provider-id", a.Claim.Status.ProviderID)
			} else {
				c.log().Info("instance is gone; deleting nodeclaim", "nodeclaim", a.Claim.Name, "node", a.Node,
					"provider-id", a.Claim.Status.ProviderID)
			}
			c.deleteNodeObject(ctx, a.Node)
			c.deleteClaimObject(ctx, a.Claim.Name)
			if c.Metrics != nil {
				c.Metrics.NodeClaimDisrupted(&a.Claim.NodeClaim, "garbage_collected")
			}
		case ActPoolGone:
			c.log().Info("nodepool of nodeclaim is gone; draining its node", "nodeclaim", a.Claim.Name,
				"nodepool", a.Claim.NodePool, "node", a.Node)
			c.terminate(ctx, a.Claim, "NodePoolDeleted")
		case ActNoInstance:
			c.log().Info("failed launch left no instance; deleting nodeclaim", "nodeclaim", a.Claim.Name, "nodepool", a.Claim.NodePool)
			c.deleteClaimObject(ctx, a.Claim.Name)
		case ActOrphan:
			c.collectOrphan(ctx, a)
		}
	}
}

// claimBusy marks key busy and reports whether it was free.
func (c *Controller) claimBusy(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy[key] {
		return false
	}
	c.busy[key] = true
	return true
}

func (c *Controller) release(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.busy, key)
}
