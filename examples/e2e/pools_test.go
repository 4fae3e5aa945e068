package e2e

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
)

// TestNodePoolFeatures: Karpenter v1.14's NodePool features on the real API server — a static
// pool holding its replicas, and a NodePool template edit that drifts the pool's nodes and
// replaces them one at a time under a budget of one.
func TestNodePoolFeatures(t *testing.T) {
	w := newWorld(t, "pools", "pools-lab")
	ctx := context.Background()
	w.applyLab()
	defer w.deleteLab(labPoolName, "static")
	history := w.watchClaims()
	stop := w.controller("a", false)
	defer stop()
	defer w.cleanUp("spread")

	w.run("a static pool with replicas: 3 holds three nodes", func(t *testing.T) {
		// The lab's pool made static: three nodes labelled tier=static (no lab pod selects
		// them), consolidateAfter 1s so that consolidation, were it to touch a static pool,
		// would within the hold below.
		doc, _, _ := strings.Cut(string(sim.NodePoolsYAML()), "\n---")
		doc = strings.Replace(doc, "name: default\nspec:", "name: static\nspec:\n  replicas: 3", 1)
		doc = strings.Replace(doc, "eks-team: my-team", "tier: static", 1)
		doc = strings.Replace(doc, "  limits:\n    cpu: 100\n", "  limits:\n    nodes: \"5\"\n", 1)
		doc = strings.Replace(doc, "consolidateAfter: 30s", "consolidateAfter: 1s", 1)
		if err := sim.Apply(ctx, w.dyn, []byte(doc)); err != nil {
			t.Fatalf("applying a static NodePool: %v", err)
		}
		ready := func() []nodeClaim {
			return slices.DeleteFunc(w.nodeClaimsOf("static"), func(c nodeClaim) bool { return c.Deleting || !c.is(controller.CondReady) })
		}
		w.waitFor(90*time.Second, "three static NodeClaims Ready", func() bool { return len(ready()) == 3 })
		// Held: empty, consolidatable in time, but never consolidated (six disruption passes).
		hold := time.Now().Add(12 * time.Second)
		for time.Now().Before(hold) {
			if n := len(w.nodeClaimsOf("static")); n != 3 {
				t.Fatalf("static NodeClaims = %d while idle, want 3\n%s", n, w.dump())
			}
			time.Sleep(200 * time.Millisecond)
		}
		for _, c := range w.nodeClaimsOf("static") {
			if c.Deleting || slices.ContainsFunc(c.Conditions, func(x metav1.Condition) bool {
				return x.Type == controller.CondConsolidatable || x.Type == controller.CondDisruptionReason
			}) {
				t.Errorf("static NodeClaim %s: deleting %v, conditions %v; want neither Consolidatable nor DisruptionReason", c.Name, c.Deleting, c.Conditions)
			}
		}
		// One deleted is made up for.
		gone := w.nodeClaimsOf("static")[0]
		if err := w.dyn.Resource(controller.NodeClaimGVR).Delete(ctx, gone.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		w.waitFor(90*time.Second, "three static NodeClaims Ready again, the deleted one gone", func() bool {
			r := ready()
			return len(r) == 3 && !slices.ContainsFunc(w.nodeClaims(), func(c nodeClaim) bool { return c.Name == gone.Name })
		})
		// Scaled down to one, through the CRD's scale subresource as kubectl scale does.
		scale, err := w.dyn.Resource(controller.NodePoolGVR).Get(ctx, "static", metav1.GetOptions{}, "scale")
		if err != nil {
			t.Fatalf("reading NodePool static's scale subresource: %v", err)
		}
		_ = unstructured.SetNestedField(scale.Object, int64(1), "spec", "replicas")
		if _, err := w.dyn.Resource(controller.NodePoolGVR).Update(ctx, scale, metav1.UpdateOptions{}, "scale"); err != nil {
			t.Fatalf("scaling NodePool static to 1: %v", err)
		}
		w.waitFor(60*time.Second, "one static NodeClaim left and two instances gone", func() bool {
			return len(w.nodeClaimsOf("static")) == 1 && len(w.liveInstances()) == 1
		})
		w.checkNoOrphans(t)
		if err := w.dyn.Resource(controller.NodePoolGVR).Delete(ctx, "static", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		w.waitFor(60*time.Second, "the deleted static pool's node drained and terminated", func() bool {
			return len(w.nodeClaimsOf("static")) == 0 && len(w.liveInstances()) == 0
		})
	})

	w.run("a NodePool template edit drifts its nodes and replaces them one at a time under a budget of one", func(t *testing.T) {
		pools := w.dyn.Resource(controller.NodePoolGVR)
		u, err := pools.Get(ctx, labPoolName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"nodes": "1"}}, "spec", "disruption", "budgets")
		if _, err := pools.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Three pods that may not share a node: three nodes.
		d := w.labDeployment("spread", "my-team")
		d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: nodeplan.LabelHostname,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}}}}}}
		if err := w.deps.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		w.scale("spread", 3)
		w.waitRunning("spread", 3, 90*time.Second)
		w.waitFor(30*time.Second, "three NodeClaims Ready", func() bool {
			return len(slices.DeleteFunc(w.nodeClaimsOf(labPoolName), func(c nodeClaim) bool { return !c.is(controller.CondReady) })) == 3
		})
		old := map[string]bool{}
		for _, c := range w.nodeClaimsOf(labPoolName) {
			old[c.Name] = true
		}

		// The most of the pool's nodes seen disrupted at once: a claim being deleted or carrying
		// a DisruptionReason, or a node tainted karpenter.sh/disrupted.
		var mu sync.Mutex
		most := 0
		stopPoll := w.background(func(bg context.Context) {
			for bg.Err() == nil {
				busy := map[string]bool{}
				if list, err := w.dyn.Resource(controller.NodeClaimGVR).List(bg, metav1.ListOptions{}); err == nil {
					for i := range list.Items {
						c := toNodeClaim(t, &list.Items[i])
						if c.Labels[nodeplan.LabelNodePool] == labPoolName && (c.Deleting || hasCondition(c, controller.CondDisruptionReason)) {
							busy[c.NodeName] = true
						}
					}
				}
				if nodes, err := w.client.CoreV1().Nodes().List(bg, metav1.ListOptions{LabelSelector: nodeplan.LabelNodePool + "=" + labPoolName}); err == nil {
					for _, n := range nodes.Items {
						if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == nodeplan.TaintDisrupted }) {
							busy[n.Name] = true
						}
					}
				}
				mu.Lock()
				most = max(most, len(busy))
				mu.Unlock()
				time.Sleep(100 * time.Millisecond)
			}
		})

		u, err = pools.Get(ctx, labPoolName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"example.com/revision": "2"}, "spec", "template", "metadata", "annotations")
		if _, err := pools.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		w.waitFor(180*time.Second, "every drifted node replaced: three new NodeClaims Ready, three pods running", func() bool {
			claims := w.nodeClaimsOf(labPoolName)
			if len(claims) != 3 || w.running("spread") != 3 {
				return false
			}
			for _, c := range claims {
				if old[c.Name] || !c.is(controller.CondReady) {
					return false
				}
			}
			return true
		})
		stopPoll()
		mu.Lock()
		defer mu.Unlock()
		if most > 1 {
			t.Errorf("%d of the pool's nodes disrupted at once; the budget allows 1", most)
		}
		for name := range old {
			var drifted *metav1.Condition
			for _, s := range history.of(name) {
				for _, c := range s.Conditions {
					if c.Type == controller.CondDrifted && c.Status == metav1.ConditionTrue {
						drifted = &c
					}
				}
			}
			if drifted == nil || drifted.Reason != "NodePoolDrifted" || !strings.Contains(drifted.Message, "example.com/revision") {
				t.Errorf("NodeClaim %s: Drifted condition %+v, want True, reason NodePoolDrifted, naming the changed annotation", name, drifted)
			}
		}
		u, err = pools.Get(ctx, labPoolName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hash := u.GetAnnotations()["karpenter.sh/nodepool-hash"]
		for _, c := range w.nodeClaimsOf(labPoolName) {
			if hash == "" || c.Annotations["karpenter.sh/nodepool-hash"] != hash {
				t.Errorf("replacement %s has karpenter.sh/nodepool-hash %q, the NodePool %q", c.Name, c.Annotations["karpenter.sh/nodepool-hash"], hash)
			}
		}
		t.Logf("drift rollout: at most %d node(s) disrupted at once", most)
	})
}

// hasCondition reports whether the claim carries the condition, whatever its status.
func hasCondition(c nodeClaim, typ string) bool {
	return slices.ContainsFunc(c.Conditions, func(x metav1.Condition) bool { return x.Type == typ })
}
