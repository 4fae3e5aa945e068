package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
)

// invalidEdit makes the lab pool invalid with an edit the CRD accepts (a cron schedule out of
// range) and checks that the pool reports it while a second pool launches.
func (w *world) invalidEdit(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	doc, _, _ := strings.Cut(string(sim.NodePoolsYAML()), "\n---")
	other := strings.Replace(strings.Replace(doc, "name: default\nspec:", "name: other\nspec:", 1), "eks-team: my-team", "eks-team: other-team", 1)
	if err := sim.Apply(ctx, w.dyn, []byte(other)); err != nil {
		t.Fatal(err)
	}
	if err := w.deps.Create(ctx, w.labDeployment("other", "other-team")); err != nil {
		t.Fatal(err)
	}
	labClaim := w.nodeClaimsOf(labPoolName)

	pools := w.dyn.Resource(controller.NodePoolGVR)
	u, err := pools.Get(ctx, labPoolName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	budgets := []any{map[string]any{"nodes": "10%", "schedule": "0 25 * * *", "duration": "10m"}}
	if err := unstructured.SetNestedSlice(u.Object, budgets, "spec", "disruption", "budgets"); err != nil {
		t.Fatal(err)
	}
	if _, err := pools.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("the API server refused the edit (it must pass Karpenter's CRD): %v", err)
	}
	defer func() {
		// Fixed: the pool is valid again without a restart.
		u, err := pools.Get(ctx, labPoolName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		unstructured.RemoveNestedField(u.Object, "spec", "disruption", "budgets")
		if _, err := pools.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		w.waitFor(30*time.Second, "ValidationSucceeded=True again", func() bool {
			return w.poolCondition(labPoolName, "ValidationSucceeded").Status == metav1.ConditionTrue
		})
		w.scale("other", 0)
	}()
	const path = "spec.disruption.budgets[0].schedule"
	var msg string
	w.waitFor(30*time.Second, "ValidationSucceeded=False on NodePool default", func() bool {
		c := w.poolCondition(labPoolName, "ValidationSucceeded")
		msg = c.Message
		return c.Status == metav1.ConditionFalse
	})
	edited := time.Now()
	if !strings.Contains(msg, path) {
		t.Errorf("ValidationSucceeded message %q does not name %s", msg, path)
	}
	if c := w.poolCondition(labPoolName, "Ready"); c.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %s, want False while the pool is invalid", c.Status)
	}
	w.waitFor(30*time.Second, "a Warning event on NodePool default naming "+path, func() bool {
		return w.eventCount(metav1.NamespaceDefault, labPoolName, "NodePoolValidationFailed") > 0 ||
			w.eventCount(corev1.NamespaceAll, labPoolName, "NodePoolValidationFailed") > 0
	})

	w.scale("other", 1)
	w.waitRunning("other", 1, 90*time.Second)
	if n := len(w.nodeClaimsOf("other")); n != 1 {
		t.Errorf("NodeClaims of pool other = %d, want 1", n)
	}
	// The invalid pool's node is kept: an edit that does not decode leaves the pool out of
	// provisioning, it does not delete the pool. The controller gives up a pool's nodes after
	// Timeouts.Collect (10s here) of the pool missing; hold until two of them have passed.
	hold := 2*10*time.Second - time.Since(edited)
	deadline := time.Now().Add(hold)
	for time.Now().Before(deadline) {
		for _, c := range w.nodeClaimsOf(labPoolName) {
			if c.Deleting || slices.ContainsFunc(c.Conditions, func(x metav1.Condition) bool { return x.Type == controller.CondDisruptionReason }) {
				t.Fatalf("NodeClaim %s of the invalid pool is being deleted: an invalid edit drained the pool's nodes\n%s", c.Name, w.dump())
			}
		}
		if n := w.running(labDeployment); n != 5 {
			t.Fatalf("lab pods running = %d while the pool is invalid, want 5\n%s", n, w.dump())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := w.nodeClaimsOf(labPoolName); len(got) != len(labClaim) {
		t.Errorf("NodeClaims of the invalid pool = %d, was %d", len(got), len(labClaim))
	}

}
