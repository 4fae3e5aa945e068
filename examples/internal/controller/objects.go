package controller

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
)

// The NodeClaim objects are the controller's record: one is created before each launch's
// cloud call, its status follows the claim, and it goes only after the instance is gone. The
// claim table is a cache of them; on start it is rebuilt from them ([Tracker.Load]) and from
// Provider.List.

func (c *Controller) installation() string {
	if c.Installation != "" {
		return c.Installation
	}
	return "nodeplan"
}

func (c *Controller) claimClient() dynamic.NamespaceableResourceInterface {
	return c.Dynamic.Resource(NodeClaimGVR)
}

// createClaimObject writes the NodeClaim of a claim about to launch. The launch must not start
// unless it succeeded: an instance without its object would have no owner.
func (c *Controller) createClaimObject(ctx context.Context, cl *Claim) error {
	var owner *metav1.OwnerReference
	if uid := c.poolUID(cl.NodePool); uid != "" {
		owner = &metav1.OwnerReference{APIVersion: "karpenter.sh/v1", Kind: "NodePool", Name: cl.NodePool,
			UID: types.UID(uid), BlockOwnerDeletion: new(true)}
	}
	u, err := newClaimObject(cl, c.installation(), owner)
	if err != nil {
		return err
	}
	if err := setClaimStatus(u, cl, claimMarks{}, c.now()); err != nil {
		return err
	}
	status := u.Object["status"]
	created, err := c.claimClient().Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating NodeClaim %s: %w", cl.Name, err)
	}
	c.tracker.SetUID(cl.Name, string(created.GetUID()))
	created.Object["status"] = status
	if _, err := c.claimClient().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		c.log().Error("could not write nodeclaim status", "nodeclaim", cl.Name, "err", err)
	}
	return nil
}

// writeClaim brings the claim's NodeClaim object up to date with the table: labels of what was
// launched, then the status. A claim no longer in the table, or an object gone, is skipped.
func (c *Controller) writeClaim(ctx context.Context, name string) {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cl := c.tracker.Get(name)
		if cl == nil {
			return nil
		}
		u, err := c.claimClient().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		before := u.GetLabels()
		c.mu.Lock()
		marks := claimMarks{Drift: c.drifted[name], Consolidatable: c.consolidatable[name], Disrupting: c.disrupting[name]}
		c.mu.Unlock()
		if err := setClaimStatus(u, cl, marks, c.now()); err != nil {
			return err
		}
		status := u.Object["status"]
		if !mapsEqual(before, u.GetLabels()) {
			if u, err = c.claimClient().Update(ctx, u, metav1.UpdateOptions{}); err != nil {
				return err
			}
			u.Object["status"] = status
		}
		_, err = c.claimClient().UpdateStatus(ctx, u, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		c.log().Error("could not update nodeclaim", "nodeclaim", name, "err", err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// deleteClaimObject removes the NodeClaim once its instance is gone: the termination finalizer
// first, then the object.
func (c *Controller) deleteClaimObject(ctx context.Context, name string) {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := c.claimClient().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if fs := u.GetFinalizers(); slices.Contains(fs, FinalizerTermination) {
			u.SetFinalizers(slices.DeleteFunc(fs, func(f string) bool { return f == FinalizerTermination }))
			if _, err := c.claimClient().Update(ctx, u, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = c.claimClient().Delete(ctx, name, metav1.DeleteOptions{})
	}
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		c.log().Error("could not delete nodeclaim object", "nodeclaim", name, "err", err)
	}
}

// claimObjects lists the NodeClaims in the informer's cache.
func (c *Controller) claimObjects() []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range c.claimLister.List() {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int {
		switch {
		case a.GetName() < b.GetName():
			return -1
		case a.GetName() > b.GetName():
			return 1
		}
		return 0
	})
	return out
}

// loadClaims reads this installation's NodeClaims into the table — and, with Adopt, those of
// a Karpenter controller or another installation, which are marked as this one's. Others are
// reported once and left alone. It returns the claims loaded.
func (c *Controller) loadClaims(ctx context.Context) []Action {
	var claims []*Claim
	for _, u := range c.claimObjects() {
		owner := u.GetAnnotations()[AnnotationInstallation]
		if owner != c.installation() {
			if !c.Adopt {
				c.log().Info("nodeclaim belongs to another installation; leaving it alone", "nodeclaim", u.GetName(),
					"installation", owner)
				continue
			}
			if err := c.markOurs(ctx, u.GetName()); err != nil {
				c.log().Error("could not adopt nodeclaim", "nodeclaim", u.GetName(), "err", err)
				continue
			}
			c.log().Info("adopting nodeclaim", "nodeclaim", u.GetName(), "installation", owner)
		}
		cl, err := claimFromObject(u)
		if err != nil {
			c.log().Error("could not read nodeclaim; leaving it alone", "nodeclaim", u.GetName(), "err", err)
			continue
		}
		claims = append(claims, cl)
	}
	return c.tracker.Load(claims, c.nodes(), c.now())
}

func (c *Controller) markOurs(ctx context.Context, name string) error {
	return c.annotateClaim(ctx, name, map[string]string{AnnotationInstallation: c.installation()})
}

// annotateClaim sets annotations on the NodeClaim object, re-reading it on a conflict.
func (c *Controller) annotateClaim(ctx context.Context, name string, set map[string]string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := c.claimClient().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		maps.Copy(ann, set)
		u.SetAnnotations(ann)
		_, err = c.claimClient().Update(ctx, u, metav1.UpdateOptions{})
		return err
	})
}

// watchDeletions starts the termination of claims whose NodeClaim or Node someone deleted: the
// finalizer holds the object while the node is drained and the instance terminated.
func (c *Controller) watchDeletions(ctx context.Context) {
	deleting := map[string]string{}
	for _, u := range c.claimObjects() {
		if u.GetDeletionTimestamp() != nil {
			deleting[u.GetName()] = reasonNodeClaimDeleted
		}
	}
	for _, n := range c.nodes() {
		if n.DeletionTimestamp == nil {
			continue
		}
		if cl := c.tracker.ByNode(n.Name); cl != nil && deleting[cl.Name] == "" {
			deleting[cl.Name] = reasonNodeDeleted
		}
	}
	for name, reason := range deleting {
		if !c.tracker.MarkDeleting(name, reason) {
			continue
		}
		cl := c.tracker.Get(name)
		c.log().Info("deleting nodeclaim", "nodeclaim", name, "node", cl.Status.NodeName, "reason", reason)
		c.writeClaim(ctx, name)
		c.terminate(ctx, cl, reason)
	}
}

// poolUID returns the UID of the NodePool object, when the pool source knows it, for the
// owner reference Karpenter puts on a NodeClaim.
func (c *Controller) poolUID(pool string) string {
	if s, ok := c.NodePools.(interface{ UID(pool string) string }); ok {
		return s.UID(pool)
	}
	return ""
}

// poolStatusInterval is how often NodePool status.resources is brought up to date.
const poolStatusInterval = 10 * time.Second

// updatePoolStatus writes each NodePool object's status.resources — the capacity of its
// launched claims, what its limits are charged against, always with cpu, memory, pods,
// ephemeral-storage and nodes — and status.nodes, where they changed. Pools that are not
// objects in the cluster (a file or ConfigMap source) are skipped.
func (c *Controller) updatePoolStatus(ctx context.Context) {
	pools, err := c.NodePools.NodePools()
	if err != nil {
		return
	}
	inUse := map[string]corev1.ResourceList{}
	for _, p := range pools {
		inUse[p.Name] = corev1.ResourceList{}
	}
	for _, cl := range c.tracker.List() {
		sum, ok := inUse[cl.NodePool]
		if !ok || cl.Status.ProviderID == "" {
			continue
		}
		for name, q := range cl.Status.Capacity {
			t := sum[name]
			t.Add(q)
			sum[name] = t
		}
		n := sum["nodes"]
		n.Add(resource.MustParse("1"))
		sum["nodes"] = n
	}
	for _, p := range pools {
		sum := inUse[p.Name]
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage, "nodes"} {
			if _, ok := sum[name]; !ok {
				sum[name] = resource.MustParse("0")
			}
		}
		res := map[string]any{}
		for name, q := range sum {
			res[string(name)] = q.String()
		}
		nodes := sum["nodes"]
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			u, err := c.Dynamic.Resource(NodePoolGVR).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			old, _, _ := unstructured.NestedMap(u.Object, "status", "resources")
			oldNodes, _, _ := unstructured.NestedInt64(u.Object, "status", "nodes")
			if reflect.DeepEqual(old, res) && oldNodes == nodes.Value() {
				return nil
			}
			if err := unstructured.SetNestedMap(u.Object, res, "status", "resources"); err != nil {
				return err
			}
			if err := unstructured.SetNestedField(u.Object, nodes.Value(), "status", "nodes"); err != nil {
				return err
			}
			_, err = c.Dynamic.Resource(NodePoolGVR).UpdateStatus(ctx, u, metav1.UpdateOptions{})
			return err
		})
		if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			c.log().Error("could not update nodepool status", "nodepool", p.Name, "err", err)
		}
	}
}
