package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
)

func objectConditions(t *testing.T, d dynamic.Interface, gvr schema.GroupVersionResource, name string) map[string]string {
	t.Helper()
	u, err := d.Resource(gvr).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m := c.(map[string]any)
		s := m["status"].(string)
		if s != "True" {
			s += " " + m["reason"].(string) + ": " + m["message"].(string)
		}
		out[m["type"].(string)] = s
	}
	return out
}

func poolNames(t *testing.T, s *controller.ClusterNodePools) []string {
	t.Helper()
	pools, err := s.NodePools()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pools {
		out = append(out, p.Name)
	}
	return out
}

// TestClusterNodePools: NodePools and EC2NodeClasses read from the cluster, each decoded on its
// own by nodeplan's decoder. An invalid pool, or one whose class is missing, gets Karpenter's
// conditions (the field path in the message) and is left out while the others work; an edit
// that fixes it takes effect on the next read.
func TestClusterNodePools(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := sim.NewDynamic()
	if err := sim.Apply(ctx, d, sim.NodePoolsYAML()); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(strings.Replace(string(sim.NodePoolsYAML()), "name: default\nspec:\n  template:",
		"name: bad\nspec:\n  weight: 500\n  template:", 1), "kind: EC2NodeClass\n        name: default", "kind: EC2NodeClass\n        name: default", 1)
	bad = bad[:strings.Index(bad, "\n---")]
	orphan := strings.Replace(bad, "name: bad\nspec:\n  weight: 500", "name: orphan\nspec:", 1)
	orphan = strings.Replace(orphan, "kind: EC2NodeClass\n        name: default", "kind: EC2NodeClass\n        name: missing", 1)
	if err := sim.Apply(ctx, d, []byte(bad+"\n---\n"+orphan)); err != nil {
		t.Fatal(err)
	}
	var classes map[string]*ec2.NodeClass
	s := &controller.ClusterNodePools{Dynamic: d, OnClasses: func(m map[string]*ec2.NodeClass) { classes = m }}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"default"}, poolNames(t, s)); diff != "" {
		t.Errorf("pools (-want +got):\n%s", diff)
	}
	if classes["default"] == nil || len(classes) != 1 {
		t.Errorf("classes = %v, want default", classes)
	}
	if known, ok := s.Known(); !ok || !cmp.Equal(known, []string{"bad", "default", "orphan"}) {
		t.Errorf("Known() = %v, %v; want every NodePool object, valid or not", known, ok)
	}
	if s.UID("default") == "" {
		t.Errorf("no UID for the default pool")
	}
	got := map[string]map[string]string{
		"default": objectConditions(t, d, controller.NodePoolGVR, "default"),
		"bad":     objectConditions(t, d, controller.NodePoolGVR, "bad"),
		"orphan":  objectConditions(t, d, controller.NodePoolGVR, "orphan"),
		"class":   objectConditions(t, d, controller.EC2NodeClassGVR, "default"),
	}
	want := map[string]map[string]string{
		"default": {"Ready": "True", "ValidationSucceeded": "True", "NodeClassReady": "True"},
		"bad": {"Ready": "False UnhealthyDependents: ValidationSucceeded=False, NodeClassReady=Unknown",
			"ValidationSucceeded": "False NodePoolValidationFailed: " + got["bad"]["ValidationSucceeded"][len("False NodePoolValidationFailed: "):],
			"NodeClassReady":      "Unknown AwaitingReconciliation: object is awaiting reconciliation"},
		"orphan": {"Ready": "False UnhealthyDependents: NodeClassReady=False", "ValidationSucceeded": "True",
			"NodeClassReady": "False NodeClassNotFound: NodeClass not found on cluster"},
		"class": {"Ready": "True", "ValidationSucceeded": "True"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if msg := got["bad"]["ValidationSucceeded"]; !strings.Contains(msg, "spec.weight") {
		t.Errorf("validation message %q does not name the field spec.weight", msg)
	}
	// Fix the bad pool: it is picked up without a restart.
	u, err := d.Resource(controller.NodePoolGVR).Get(ctx, "bad", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.SetNestedField(u.Object, int64(50), "spec", "weight")
	if _, err := d.Resource(controller.NodePoolGVR).Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // an informer's update on a loaded machine, not a timing assertion
	for len(poolNames(t, s)) != 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if diff := cmp.Diff([]string{"bad", "default"}, poolNames(t, s)); diff != "" {
		t.Errorf("pools after the fix (-want +got):\n%s", diff)
	}
	if c := objectConditions(t, d, controller.NodePoolGVR, "bad")["ValidationSucceeded"]; c != "True" {
		t.Errorf("ValidationSucceeded after the fix = %q, want True", c)
	}
}

// TestInvalidEditKeepsNodes: a NodePool edit the decoder refuses leaves the pool out of
// provisioning, but its nodes are not those of a deleted pool: nothing is drained.
func TestInvalidEditKeepsNodes(t *testing.T) {
	h := newHarness(t)
	// A second, valid pool: with none left the source is an error and nothing is judged.
	lab := string(sim.NodePoolsYAML())
	other := strings.Replace(lab[:strings.Index(lab, "\n---")], "name: default\nspec:", "name: other\nspec:", 1)
	if err := sim.Apply(context.Background(), h.w.Dynamic, []byte(lab+"\n---\n"+other)); err != nil {
		t.Fatal(err)
	}
	h.startOnCluster("a", func(c *controller.Controller) {
		c.Timeouts.Collect = 30 * time.Second
	})
	h.deploy("inflate", 2, 0)
	h.until(time.Minute, "2 pods running", func() bool { return h.running() == 2 })
	h.editPool("default", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"nodes": "10%", "schedule": "0 25 * * *", "duration": "10m"}},
			"spec", "disruption", "budgets")
	})
	h.until(10*time.Second, "ValidationSucceeded=False", func() bool {
		return strings.HasPrefix(objectConditions(t, h.w.Dynamic, controller.NodePoolGVR, "default")["ValidationSucceeded"], "False")
	})
	if err := h.w.Advance(context.Background(), 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := h.logs.count("nodepool of nodeclaim is gone; draining its node"); n > 0 || len(h.instances()) != 1 || h.running() != 2 {
		t.Errorf("after an invalid edit: %d drains, %d instances, %d pods running; want 0, 1, 2", n, len(h.instances()), h.running())
	}
}
