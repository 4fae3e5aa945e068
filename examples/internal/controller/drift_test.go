package controller_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/examples/internal/controller/poolhash"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
)

// startOnCluster applies the lab's NodePool and EC2NodeClass as objects and starts a
// controller that reads them from the cluster (as the e2e test and a real installation do).
func (h *harness) startOnCluster(name string, mutate func(*controller.Controller)) func() {
	h.t.Helper()
	if _, err := h.w.Dynamic.Resource(controller.NodePoolGVR).Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		if err := sim.Apply(context.Background(), h.w.Dynamic, sim.NodePoolsYAML()); err != nil {
			h.t.Fatal(err)
		}
	}
	return h.start(name, func(c *controller.Controller) {
		c.NodePools = &controller.ClusterNodePools{Dynamic: h.w.Dynamic, Now: h.w.Clock.Now}
		if mutate != nil {
			mutate(c)
		}
	})
}

// editPool changes the NodePool object as `kubectl edit nodepool` would.
func (h *harness) editPool(name string, mutate func(*unstructured.Unstructured)) {
	h.t.Helper()
	ctx := context.Background()
	u, err := h.w.Dynamic.Resource(controller.NodePoolGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	mutate(u)
	if _, err := h.w.Dynamic.Resource(controller.NodePoolGVR).Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) poolObject(name string) *unstructured.Unstructured {
	h.t.Helper()
	u, err := h.w.Dynamic.Resource(controller.NodePoolGVR).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return u
}

// condition returns "Status Reason: Message" of a NodeClaim condition, or "" when absent.
func condition(u unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m := c.(map[string]any)
		if m["type"] == typ {
			msg, _ := m["message"].(string)
			return m["status"].(string) + " " + m["reason"].(string) + ": " + msg
		}
	}
	return ""
}

func (h *harness) claimObject(name string) unstructured.Unstructured {
	h.t.Helper()
	for _, u := range h.claimObjects() {
		if u.GetName() == name {
			return u
		}
	}
	return unstructured.Unstructured{}
}

// TestNodePoolTemplateDrift: the NodePool carries Karpenter's template hash, every NodeClaim
// (and its Node) the hash at launch; a template edit marks the claim Drifted (NodePoolDrifted,
// the message naming the field with its old and new value) and the node is replaced; a
// requirements edit is RequirementsDrifted, not a hash change.
func TestNodePoolTemplateDrift(t *testing.T) {
	h := newHarness(t)
	h.startOnCluster("a", nil)
	h.deploy("inflate", 2, 0)
	h.until(time.Minute, "2 pods running", func() bool { return h.running() == 2 })

	want, err := poolhash.Template(h.poolObject("default").Object)
	if err != nil {
		t.Fatal(err)
	}
	h.until(10*time.Second, "the NodePool annotated with its hash", func() bool {
		return h.poolObject("default").GetAnnotations()[poolhash.AnnotationHash] == want
	})
	if v := h.poolObject("default").GetAnnotations()[poolhash.AnnotationVersion]; v != "v3" {
		t.Errorf("NodePool %s = %q, want v3", poolhash.AnnotationVersion, v)
	}
	claims := h.claimObjects()
	if len(claims) != 1 {
		t.Fatalf("%d NodeClaims, want 1", len(claims))
	}
	first := claims[0]
	got := map[string]string{
		"claim hash":    first.GetAnnotations()[poolhash.AnnotationHash],
		"claim version": first.GetAnnotations()[poolhash.AnnotationVersion],
		"node hash":     h.node(h.pods("test")[0].Spec.NodeName).Annotations[poolhash.AnnotationHash],
		"drifted":       condition(first, controller.CondDrifted),
	}
	if diff := cmp.Diff(map[string]string{"claim hash": want, "claim version": "v3", "node hash": want, "drifted": ""}, got); diff != "" {
		t.Errorf("before the edit (-want +got):\n%s", diff)
	}

	// A requirement the node's labels no longer meet (its category is "c"): RequirementsDrifted.
	// The hash stays.
	category := func(values ...any) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			reqs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "requirements")
			for _, r := range reqs {
				if m := r.(map[string]any); m["key"] == "karpenter.k8s.aws/instance-category" {
					m["values"] = values
				}
			}
			_ = unstructured.SetNestedSlice(u.Object, reqs, "spec", "template", "spec", "requirements")
		}
	}
	budget := func(nodes string) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"nodes": nodes}}, "spec", "disruption", "budgets")
		}
	}
	h.editPool("default", budget("0")) // nothing replaced while the verdict is read
	h.editPool("default", category("m", "r"))
	h.until(30*time.Second, "RequirementsDrifted", func() bool {
		return strings.HasPrefix(condition(h.claimObject(first.GetName()), controller.CondDrifted), "True RequirementsDrifted: ")
	})
	if msg := condition(h.claimObject(first.GetName()), controller.CondDrifted); !strings.Contains(msg, "karpenter.k8s.aws/instance-category") {
		t.Errorf("Drifted = %q; want the requirement named", msg)
	}
	if h.poolObject("default").GetAnnotations()[poolhash.AnnotationHash] != want {
		t.Errorf("a requirements edit changed the template hash")
	}
	// Undone at once, before the planner acts: the drift clears.
	h.editPool("default", category("c", "m", "r"))
	h.editPool("default", budget("10%"))
	h.until(30*time.Second, "the drift cleared", func() bool {
		return condition(h.claimObject(first.GetName()), controller.CondDrifted) == ""
	})
	if len(h.claimObjects()) != 1 {
		t.Fatalf("%d NodeClaims after the requirements drift was undone, want 1 (first, not yet replaced)", len(h.claimObjects()))
	}

	// A template annotation: NodePoolDrifted, and the node is replaced.
	h.editPool("default", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"example.com/revision": "2"}, "spec", "template", "metadata", "annotations")
	})
	h.until(30*time.Second, "NodePoolDrifted", func() bool {
		return strings.HasPrefix(condition(h.claimObject(first.GetName()), controller.CondDrifted), "True NodePoolDrifted: ")
	})
	msg := condition(h.claimObject(first.GetName()), controller.CondDrifted)
	if wantMsg := `True NodePoolDrifted: NodePool default template changed since launch: annotations[example.com/revision]: (none) -> "2"`; msg != wantMsg {
		t.Errorf("Drifted = %q\nwant      %q", msg, wantMsg)
	}
	// The command's candidate shows its reason from the start, while its replacement boots.
	oldNode, _, _ := unstructured.NestedString(h.claimObject(first.GetName()).Object, "status", "nodeName")
	h.until(30*time.Second, "DisruptionReason=Drifted", func() bool {
		return condition(h.claimObject(first.GetName()), controller.CondDisruptionReason) == "True Drifted: Drifted"
	})
	if slices.ContainsFunc(h.node(oldNode).Spec.Taints, func(t corev1.Taint) bool { return t.Key == nodeplan.TaintDisrupted }) {
		t.Errorf("DisruptionReason appeared only once the node was tainted; want it while the replacement boots")
	}
	h.until(3*time.Minute, "the drifted node replaced", func() bool {
		objs := h.claimObjects()
		return len(objs) == 1 && objs[0].GetName() != first.GetName() && h.running() == 2 && len(h.instances()) == 1
	})
	newHash := h.poolObject("default").GetAnnotations()[poolhash.AnnotationHash]
	repl := h.claimObjects()[0]
	if newHash == want || repl.GetAnnotations()[poolhash.AnnotationHash] != newHash {
		t.Errorf("pool hash %s -> %s, replacement's %s; want a new hash on both", want, newHash, repl.GetAnnotations()[poolhash.AnnotationHash])
	}
	if c := condition(repl, controller.CondDrifted); c != "" {
		t.Errorf("the replacement is Drifted: %s", c)
	}
}

// TestImageDriftMessage: a new image makes the claim Drifted with reason AMIDrift and a message
// naming the node's image and the one its node class selects now.
func TestImageDriftMessage(t *testing.T) {
	h := newHarness(t)
	h.w.Kubelet.SetBootTime(20 * time.Second)
	h.startOnCluster("a", func(c *controller.Controller) { c.Planner = controller.Emptiness{} })
	h.deploy("inflate", 1, 0)
	h.until(time.Minute, "1 pod running", func() bool { return h.running() == 1 })
	name := h.claimObjects()[0].GetName()
	classImages := func() []string {
		u, err := h.w.Dynamic.Resource(controller.EC2NodeClassGVR).Get(context.Background(), "default", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		amis, _, _ := unstructured.NestedSlice(u.Object, "status", "amis")
		var ids []string
		for _, a := range amis {
			ids = append(ids, a.(map[string]any)["id"].(string))
		}
		return ids
	}
	h.until(20*time.Second, "EC2NodeClass status.amis", func() bool { return len(classImages()) > 0 })
	if diff := cmp.Diff([]string{"img-1"}, classImages()); diff != "" {
		t.Errorf("EC2NodeClass status.amis (-want +got):\n%s", diff)
	}
	h.w.Cloud.SetImageID("img-2")
	h.until(30*time.Second, "AMIDrift", func() bool {
		return strings.HasPrefix(condition(h.claimObject(name), controller.CondDrifted), "True AMIDrift")
	})
	want := "True AMIDrift: the node's image img-1 is no longer selected by its node class default (it selects img-2 now)"
	if got := condition(h.claimObject(name), controller.CondDrifted); got != want {
		t.Errorf("Drifted = %q\nwant      %q", got, want)
	}
	h.until(20*time.Second, "EC2NodeClass status.amis updated", func() bool { return slices.Equal(classImages(), []string{"img-2"}) })
}

// TestConsolidatableCondition: Consolidatable appears once consolidateAfter has passed since
// the last pod event on an initialized node, and never on a pool with consolidateAfter Never.
func TestConsolidatableCondition(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after string
		want  string
	}{
		{"after 30s", "30s", "True Consolidatable: "},
		{"never", "Never", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if err := sim.Apply(context.Background(), h.w.Dynamic, sim.NodePoolsYAML()); err != nil {
				t.Fatal(err)
			}
			h.editPool("default", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, tc.after, "spec", "disruption", "consolidateAfter")
			})
			// Emptiness never moves pods: the node with its pod stays, and its condition can be read.
			h.startOnCluster("a", func(c *controller.Controller) { c.Planner = controller.Emptiness{} })
			h.deploy("inflate", 1, 0)
			h.until(time.Minute, "1 pod running", func() bool { return h.running() == 1 })
			name := h.claimObjects()[0].GetName()
			if got := condition(h.claimObject(name), controller.CondConsolidatable); got != "" {
				t.Errorf("Consolidatable right after the pod arrived = %q, want absent", got)
			}
			if err := h.w.Advance(context.Background(), 45*time.Second); err != nil {
				t.Fatal(err)
			}
			if got := condition(h.claimObject(name), controller.CondConsolidatable); got != tc.want {
				t.Errorf("Consolidatable after 45s = %q, want %q", got, tc.want)
			}
		})
	}
}
