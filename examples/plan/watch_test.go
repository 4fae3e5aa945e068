package main

import (
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodeplan/nodeplan"
)

// The test plays the incumbent autoscaler: between passes it launches a node (an expensive one,
// for the pods that were pending) and removes another. Shadow mode must list and nothing else,
// and report what nodeplan would have done instead.
func TestWatchIsReadOnlyAndReportsTheDifference(t *testing.T) {
	verbs, kube := fakeClusterClients(t)
	reg := prometheus.NewRegistry()
	var out, logs strings.Builder
	cfg := watchConfig{
		passes:  3,
		files:   inputFiles{catalog: "testdata/catalog.json"},
		log:     slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		metrics: newShadowMetrics(reg),
		now:     func() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) },
	}
	kubeIface, dyn, _, _ := connectCluster(nil)
	cfg.read = clusterReader{kube: kubeIface, dynamic: dyn}.read
	cfg.beforePass = func(pass int) {
		ctx := t.Context()
		switch pass {
		case 2: // the incumbent launches a big on-demand node
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "incumbent-1", Labels: map[string]string{
				nodeplan.LabelNodePool: "default", nodeplan.LabelInstanceType: "m5.4xlarge",
				nodeplan.LabelZone: "us-east-1a", nodeplan.LabelCapacityType: "on-demand",
			}}}
			if _, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		case 3: // and removes it again
			if err := kube.CoreV1().Nodes().Delete(ctx, "incumbent-1", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := len(*verbs)
	if err := runWatch(t.Context(), cfg, &out); err != nil {
		t.Fatal(err)
	}
	for _, v := range (*verbs)[before:] {
		if !strings.HasPrefix(v, "list ") && !strings.HasPrefix(v, "create nodes") && !strings.HasPrefix(v, "delete nodes") {
			t.Errorf("shadow mode asked the cluster to %q; it must only list", v)
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("output has %d lines, want one per pass:\n%s", len(lines), out.String())
	}
	for i, want := range []string{
		"pass 1: ",
		"pass 2: ", // launched 1 and the comparison with what nodeplan would have launched
		"pass 3: ",
	} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d = %q, want it to start %q", i+1, lines[i], want)
		}
	}
	if !strings.Contains(lines[1], "the incumbent launched 1 nodes") || !strings.Contains(lines[1], "nodeplan would have launched") {
		t.Errorf("pass 2 does not compare the incumbent's launch with nodeplan's: %q", lines[1])
	}
	if !strings.Contains(lines[2], "removed 1") {
		t.Errorf("pass 3 does not report the removal: %q", lines[2])
	}
	for name, want := range map[string]float64{
		"nodeplan_shadow_passes_total":                   3,
		"nodeplan_shadow_incumbent_launched_nodes_total": 1,
		"nodeplan_shadow_incumbent_removed_nodes_total":  1,
	} {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, mf := range mfs {
			if mf.GetName() == name {
				found = true
				if got := mf.GetMetric()[0].GetCounter().GetValue(); got != want {
					t.Errorf("%s = %v, want %v", name, got, want)
				}
			}
		}
		if !found {
			t.Errorf("metric %s not exported", name)
		}
	}
	if n := testutil.CollectAndCount(reg, "nodeplan_shadow_would_save_dollars_per_hour"); n != 1 {
		t.Errorf("nodeplan_shadow_would_save_dollars_per_hour series = %d, want 1", n)
	}
	t.Logf("output:\n%s", out.String())
	if !strings.Contains(logs.String(), "would launch nodeclaim") {
		t.Errorf("debug log lacks the per-decision detail:\n%s", logs.String())
	}
}

// The shipped ClusterRole grants reading and nothing else, and covers every list plan makes.
func TestShadowRBACIsReadOnlyAndSufficient(t *testing.T) {
	data, err := os.ReadFile("shadow-rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	granted := map[string]bool{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(doc), &role); err != nil {
			t.Fatal(err)
		}
		if role.Kind != "ClusterRole" {
			continue
		}
		for _, r := range role.Rules {
			for _, v := range r.Verbs {
				if v != "get" && v != "list" && v != "watch" {
					t.Errorf("ClusterRole grants %q on %v; shadow mode must be read-only", v, r.Resources)
				}
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					granted[g+"/"+res] = true
				}
			}
		}
	}
	verbs := fakeCluster(t)
	if code, _, stderr := runPlan(t, args([]string{"provision", "--kubeconfig", "fake"}, catalog)); code != exitOK {
		t.Fatalf("plan provision = %d: %s", code, stderr)
	}
	groups := map[string]string{"pods": "", "nodes": "", "daemonsets": "apps", "poddisruptionbudgets": "policy",
		"nodepools": "karpenter.sh", "nodeoverlays": "karpenter.sh", "nodeclaims": "karpenter.sh", "ec2nodeclasses": "karpenter.k8s.aws"}
	for _, v := range *verbs {
		res := strings.TrimPrefix(v, "list ")
		g, ok := groups[res]
		if !ok {
			t.Errorf("plan lists %s, which this test does not know the API group of", res)
			continue
		}
		if !granted[g+"/"+res] {
			t.Errorf("plan lists %s, which shadow-rbac.yaml does not grant", res)
		}
	}
}
