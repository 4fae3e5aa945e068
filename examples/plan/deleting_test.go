package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// A node being deleted (deletionTimestamp) and one tainted karpenter.sh/disrupted:NoSchedule:
// Karpenter provisions room for their pods before they are evicted, and launches nothing into
// a NodePool being deleted or not ready. Before, provision planned nothing (no pod is pending),
// and would have launched into the heavier pool "old".
func TestProvisionPlansForDeletingNodes(t *testing.T) {
	dir := "testdata/deleting/"
	code, stdout, stderr := runPlan(t, []string{"provision", "--pods", dir + "pods.yaml", "--nodes", dir + "nodes.yaml",
		"--nodepools", dir + "nodepools.yaml", "--catalog", "testdata/catalog.json", "-o", "json"})
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		NodeClaims []struct {
			NodePool string   `json:"nodePool"`
			Pods     []string `json:"pods"`
		} `json:"nodeClaims"`
		Notices []string `json:"notices"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	var pods []string
	for _, c := range rep.NodeClaims {
		if c.NodePool != "default" {
			t.Errorf("a claim of NodePool %s, which is being deleted; want default only", c.NodePool)
		}
		pods = append(pods, c.Pods...)
	}
	slices.Sort(pods)
	if want := []string{"shop/api-6d5f8b7c9-k2x4q", "shop/worker-7c9d6f5b4-p8m3z"}; !slices.Equal(pods, want) {
		t.Errorf("provision placed %v on new claims, want %v", pods, want)
	}
	if !slices.ContainsFunc(rep.Notices, func(n string) bool { return strings.HasPrefix(n, "2 pods on nodes being deleted") }) {
		t.Errorf("notices %q, want one saying 2 pods on nodes being deleted are planned for", rep.Notices)
	}
}
