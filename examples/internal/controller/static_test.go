package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/examples/internal/controller/poolhash"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
)

// staticPoolYAML is the lab's pool made static: three nodes labelled tier=static (the lab's
// pods select eks-team, so they never need these), at most five.
func staticPoolYAML() string {
	lab := string(sim.NodePoolsYAML())
	p := lab[:strings.Index(lab, "\n---")]
	p = strings.Replace(p, "name: default\nspec:", "name: static\nspec:\n  replicas: 3", 1)
	p = strings.Replace(p, "eks-team: my-team", "tier: static", 1)
	p = strings.Replace(p, "  limits:\n    cpu: 100\n", "  limits:\n    nodes: \"5\"\n", 1)
	return p
}

// staticClaims returns the pool's NodeClaim objects not being deleted.
func (h *harness) poolClaims(pool string) []unstructured.Unstructured {
	var out []unstructured.Unstructured
	for _, u := range h.claimObjects() {
		if u.GetLabels()[nodeplan.LabelNodePool] == pool && u.GetDeletionTimestamp() == nil {
			out = append(out, u)
		}
	}
	return out
}

func (h *harness) readyClaims(pool string) int {
	n := 0
	for _, u := range h.poolClaims(pool) {
		if conditions(u)[controller.CondReady] == "True" {
			n++
		}
	}
	return n
}

// TestStaticNodePool: a pool with spec.replicas holds that many nodes with no pod asking; the
// pending pods go to the dynamic pool; its empty nodes are never consolidated (no
// Consolidatable condition); scaling it down removes the surplus; a template edit replaces its
// nodes, replacement first, one at a time (its Drifted budget), back to the replica count.
func TestStaticNodePool(t *testing.T) {
	h := newHarness(t)
	if err := sim.Apply(context.Background(), h.w.Dynamic, []byte(string(sim.NodePoolsYAML())+"\n---\n"+staticPoolYAML())); err != nil {
		t.Fatal(err)
	}
	h.editPool("static", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"nodes": "1"}}, "spec", "disruption", "budgets")
	})
	h.startOnCluster("a", nil)
	h.until(2*time.Minute, "three static nodes ready", func() bool { return h.readyClaims("static") == 3 })
	if n := len(h.poolClaims("default")); n != 0 {
		t.Errorf("%d default-pool NodeClaims with no pod pending, want 0", n)
	}

	h.deploy("inflate", 2, 0)
	h.until(time.Minute, "2 pods running", func() bool { return h.running() == 2 })
	if n := len(h.poolClaims("default")); n != 1 {
		t.Errorf("%d default-pool NodeClaims for the pods, want 1", n)
	}
	if err := h.w.Advance(context.Background(), 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	static := h.poolClaims("static")
	if len(static) != 3 {
		t.Fatalf("%d static NodeClaims after 2 idle minutes, want 3 (never consolidated)", len(static))
	}
	for _, u := range static {
		if c := condition(u, controller.CondConsolidatable); c != "" {
			t.Errorf("static NodeClaim %s has Consolidatable %q", u.GetName(), c)
		}
	}

	h.editPool("static", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(1), "spec", "replicas")
	})
	h.until(2*time.Minute, "scaled down to one", func() bool {
		return len(h.poolClaims("static")) == 1 && len(h.instances()) == 2
	})
	if n := h.logs.count("deprovisioning nodeclaims to satisfy replica count"); n == 0 {
		t.Errorf("no 'deprovisioning nodeclaims to satisfy replica count' line")
	}

	old := h.poolClaims("static")[0].GetName()
	h.editPool("static", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedStringMap(u.Object, map[string]string{"example.com/revision": "2"}, "spec", "template", "metadata", "annotations")
	})
	h.until(3*time.Minute, "the drifted static node replaced", func() bool {
		c := h.poolClaims("static")
		return len(c) == 1 && c[0].GetName() != old && h.readyClaims("static") == 1 && len(h.instances()) == 2
	})
	repl := h.poolClaims("static")[0]
	if got, want := repl.GetAnnotations()[poolhash.AnnotationHash], h.poolObject("static").GetAnnotations()[poolhash.AnnotationHash]; got != want {
		t.Errorf("replacement hash %s, pool hash %s; want equal", got, want)
	}
	if h.running() != 2 {
		t.Errorf("running pods = %d, want 2", h.running())
	}
	if testing.Verbose() {
		t.Log(h.logs.String())
	}
}
