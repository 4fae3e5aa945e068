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

	"github.com/nodeplan/nodeplan"
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
	var classes map[string]*nodeplan.EC2NodeClass
	s := &controller.ClusterNodePools{Dynamic: d, OnClasses: func(m map[string]*nodeplan.EC2NodeClass) { classes = m }}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"default"}, poolNames(t, s)); diff != "" {
		t.Errorf("pools (-want +got):\n%s", diff)
	}
	if classes["default"] == nil || len(classes) != 1 {
		t.Errorf("classes = %v, want default", classes)
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
	deadline := time.Now().Add(5 * time.Second)
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
