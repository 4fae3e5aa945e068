package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/examples/internal/controller/poolhash"
)

// Drift reasons found from the NodePool, as Karpenter names them. The provider adds its own
// (cloudprovider.DriftImage, ...).
const (
	// DriftNodePool: the pool's template (labels, annotations, taints, startup taints, node
	// class, expireAfter, terminationGracePeriod) changed since the claim was launched: its
	// karpenter.sh/nodepool-hash differs from the pool's.
	DriftNodePool = "NodePoolDrifted"
	// DriftRequirements: the claim's labels no longer satisfy the pool's requirements.
	DriftRequirements = "RequirementsDrifted"
)

// templateHasher is a NodePoolSource that knows each pool's template hash
// ([ClusterNodePools]). Pools from other sources are not checked for NodePoolDrifted.
type templateHasher interface {
	TemplateHash(pool string) string
	TemplateByHash(hash string) (poolhash.NodeClaimTemplate, bool)
}

// poolHash returns the pool's template hash, or "" when the source does not hash.
func (c *Controller) poolHash(pool string) string {
	if h, ok := c.NodePools.(templateHasher); ok {
		return h.TemplateHash(pool)
	}
	return ""
}

// stampPoolHash puts the pool's template hash on a claim about to launch, as Karpenter does,
// so a later edit of the template shows as drift. The NodeClaim carries it, and its Node.
func (c *Controller) stampPoolHash(claim *nodeplan.NodeClaim) {
	h := c.poolHash(claim.NodePool)
	if h == "" {
		return
	}
	claim.Annotations = maps.Clone(claim.Annotations)
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	claim.Annotations[poolhash.AnnotationHash] = h
	claim.Annotations[poolhash.AnnotationVersion] = poolhash.Version
}

func poolOf(pools []nodeplan.NodePool, name string) (nodeplan.NodePool, bool) {
	for _, p := range pools {
		if p.Name == name {
			return p, true
		}
	}
	return nodeplan.NodePool{}, false
}

// checkDrift decides, for every launched claim, whether it has drifted — in Karpenter's
// order, the first that applies: NodePoolDrifted (the template hash on the claim is not the
// pool's), RequirementsDrifted (its labels no longer meet the pool's requirements), then the
// provider's verdict (AMI, subnet, security groups, node class) — and whether it is
// Consolidatable, and writes the claims whose verdict changed.
func (c *Controller) checkDrift(ctx context.Context, pools []nodeplan.NodePool) {
	now := c.now()
	for _, cl := range c.tracker.List() {
		if cl.Status.ProviderID == "" || cl.Phase == PhaseLaunching || cl.Phase == PhaseTerminating {
			continue
		}
		pool, ok := poolOf(pools, cl.NodePool)
		if !ok {
			continue // a pool that is gone is handled by Reconcile
		}
		obj := c.claimObject(cl.Name)
		drift := c.driftOf(ctx, cl, pool, obj)
		cons := consolidatable(cl, pool, now)
		c.mu.Lock()
		was, wasCons := c.drifted[cl.Name], c.consolidatable[cl.Name]
		if drift == "" {
			delete(c.drifted, cl.Name)
		} else {
			c.drifted[cl.Name] = drift
		}
		if cons {
			c.consolidatable[cl.Name] = true
		} else {
			delete(c.consolidatable, cl.Name)
		}
		c.mu.Unlock()
		if drift != "" && was == "" {
			reason, message, _ := strings.Cut(drift, ": ")
			c.log().Info("marking drifted", "nodeclaim", cl.Name, "node", cl.Status.NodeName, "reason", reason, "message", message)
			c.emit(Event{Kind: EventDrifted, NodeClaim: cl.Name, NodePool: cl.NodePool, Node: cl.Status.NodeName, Reason: reason, Message: message})
		}
		if cons != wasCons {
			c.log().Debug(map[bool]string{true: "marking consolidatable", false: "removing consolidatable status condition"}[cons],
				"nodeclaim", cl.Name, "node", cl.Status.NodeName)
		}
		if drift != was || cons != wasCons {
			c.writeClaim(ctx, cl.Name)
		}
	}
}

// consolidatable is Karpenter's Consolidatable condition: an initialized claim of a dynamic
// pool whose consolidateAfter (not Never) has passed since a pod last arrived or left.
func consolidatable(cl *Claim, pool nodeplan.NodePool, now time.Time) bool {
	after := pool.Disruption.ConsolidateAfter
	if pool.Replicas != nil || after == nodeplan.Never || cl.Phase != PhaseInitialized {
		return false
	}
	since := cl.Initialized
	if cl.LastPodEvent.After(since) {
		since = cl.LastPodEvent
	}
	return !now.Before(since.Add(after))
}

// claimObject returns the NodeClaim object from the cache, or nil.
func (c *Controller) claimObject(name string) *unstructured.Unstructured {
	o, ok, _ := c.claimLister.GetByKey(name)
	if !ok {
		return nil
	}
	u, _ := o.(*unstructured.Unstructured)
	return u
}

// driftOf returns "Reason: message" when the claim has drifted, "" when not (or when it
// cannot tell: an unknown answer is not drift).
func (c *Controller) driftOf(ctx context.Context, cl *Claim, pool nodeplan.NodePool, obj *unstructured.Unstructured) string {
	labels := cl.Labels
	if obj != nil {
		labels = obj.GetLabels()
		ann := obj.GetAnnotations()
		now := c.poolHash(pool.Name)
		switch old := ann[poolhash.AnnotationHash]; {
		case now == "":
		case old == "" || ann[poolhash.AnnotationVersion] != poolhash.Version:
			// Launched before hashing, or under other hashing rules: nothing to compare
			// with. Karpenter stamps the current hash; so do we.
			c.stampClaimHash(ctx, cl.Name, now)
		case old != now:
			return DriftNodePool + ": " + c.templateChange(pool.Name, old, now)
		}
	}
	if err := nodeplan.RequirementsFromLabels(labels).Compatible(pool.Template.Requirements); err != nil {
		return fmt.Sprintf("%s: NodePool %s %s", DriftRequirements, pool.Name, err)
	}
	r, err := c.Provider.IsDrifted(ctx, &cl.NodeClaim)
	if err != nil || r == "" {
		return ""
	}
	return string(r) + ": " + c.providerDriftMessage(ctx, cl, r)
}

// stampClaimHash writes the pool's current template hash onto a NodeClaim that has none.
func (c *Controller) stampClaimHash(ctx context.Context, name, hash string) {
	err := c.annotateClaim(ctx, name, map[string]string{poolhash.AnnotationHash: hash, poolhash.AnnotationVersion: poolhash.Version})
	if err != nil && ctx.Err() == nil {
		c.log().Error("could not annotate nodeclaim with its nodepool hash", "nodeclaim", name, "err", err)
	}
}

// templateChange says what changed in the pool's template: each changed field with its old and
// new value when this run saw the old template, else the two hashes.
func (c *Controller) templateChange(pool, old, now string) string {
	h, _ := c.NodePools.(templateHasher)
	before, ok1 := h.TemplateByHash(old)
	after, ok2 := h.TemplateByHash(now)
	if ok1 && ok2 {
		if diffs := templateDiff(before, after); len(diffs) > 0 {
			return fmt.Sprintf("NodePool %s template changed since launch: %s", pool, strings.Join(diffs, "; "))
		}
	}
	return fmt.Sprintf("NodePool %s template changed since launch: %s %s -> %s", pool, poolhash.AnnotationHash, old, now)
}

// templateDiff lists the hashed fields that differ, "field: old -> new", in a stable order.
func templateDiff(a, b poolhash.NodeClaimTemplate) []string {
	var out []string
	mapDiff := func(field string, x, y map[string]string) {
		keys := slices.Sorted(maps.Keys(x))
		for k := range y {
			if _, ok := x[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range slices.Compact(keys) {
			xv, xok := x[k]
			yv, yok := y[k]
			switch {
			case xok && yok && xv != yv:
				out = append(out, fmt.Sprintf("%s[%s]: %q -> %q", field, k, xv, yv))
			case xok && !yok:
				out = append(out, fmt.Sprintf("%s[%s]: %q -> (removed)", field, k, xv))
			case !xok && yok:
				out = append(out, fmt.Sprintf("%s[%s]: (none) -> %q", field, k, yv))
			}
		}
	}
	mapDiff("labels", a.ObjectMeta.Labels, b.ObjectMeta.Labels)
	mapDiff("annotations", a.ObjectMeta.Annotations, b.ObjectMeta.Annotations)
	taints := func(field string, x, y []corev1.Taint) {
		if xs, ys := taintSet(x), taintSet(y); xs != ys {
			out = append(out, fmt.Sprintf("%s: [%s] -> [%s]", field, xs, ys))
		}
	}
	taints("taints", a.Spec.Taints, b.Spec.Taints)
	taints("startupTaints", a.Spec.StartupTaints, b.Spec.StartupTaints)
	ref := func(r *poolhash.NodeClassReference) string {
		if r == nil {
			return "(none)"
		}
		return r.Group + "/" + r.Kind + "/" + r.Name
	}
	if x, y := ref(a.Spec.NodeClassRef), ref(b.Spec.NodeClassRef); x != y {
		out = append(out, fmt.Sprintf("nodeClassRef: %s -> %s", x, y))
	}
	dur := func(d *time.Duration) string {
		if d == nil {
			return "Never"
		}
		return d.String()
	}
	if x, y := dur(a.Spec.ExpireAfter.Duration), dur(b.Spec.ExpireAfter.Duration); x != y {
		out = append(out, fmt.Sprintf("expireAfter: %s -> %s", x, y))
	}
	tgp := func(d *metav1.Duration) string {
		if d == nil {
			return "(none)"
		}
		return d.Duration.String()
	}
	if x, y := tgp(a.Spec.TerminationGracePeriod), tgp(b.Spec.TerminationGracePeriod); x != y {
		out = append(out, fmt.Sprintf("terminationGracePeriod: %s -> %s", x, y))
	}
	return out
}

func taintSet(ts []corev1.Taint) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.ToString()
	}
	slices.Sort(s)
	return strings.Join(s, ",")
}

// providerDriftMessage explains a provider's drift reason with what it knows: for an image, the
// node's image and those its node class selects now (when the provider can say).
func (c *Controller) providerDriftMessage(ctx context.Context, cl *Claim, r cloudprovider.DriftReason) string {
	class := cl.NodeClassRef.Name
	switch r {
	case cloudprovider.DriftImage:
		msg := fmt.Sprintf("the node's image %s is no longer selected by its node class %s", orNone(cl.Status.ImageID), class)
		if now := c.currentImages(ctx, class); len(now) > 0 {
			msg += fmt.Sprintf(" (it selects %s now)", strings.Join(now, ", "))
		}
		return msg
	case cloudprovider.DriftSubnet:
		return fmt.Sprintf("the node's subnet is no longer selected by its node class %s", class)
	case cloudprovider.DriftSecurityGroup:
		return fmt.Sprintf("the node's security groups differ from those its node class %s selects", class)
	case cloudprovider.DriftNodeClass:
		return fmt.Sprintf("the launch settings of node class %s changed since the node was launched", class)
	}
	return string(r)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
