package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// claimTypes runs provision on the example snapshot with extra flags and returns the instance
// types of the nodes it launches.
func claimTypes(t *testing.T, extra ...string) []string {
	t.Helper()
	code, out, stderr := runPlan(t, args([]string{"provision"}, pods, nodePools, catalog, ds, nodes, extra, []string{"-o", "json"}))
	if code != exitOK {
		t.Fatalf("plan provision %v = %d; stderr:\n%s", extra, code, stderr)
	}
	var rep provisionReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, c := range rep.NodeClaims {
		types = append(types, c.InstanceType)
	}
	return types
}

func TestCostModelAndNodeOverlayChangeTheChosenType(t *testing.T) {
	base := claimTypes(t)
	target := base[0]
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	model := write("costmodel.yaml", fmt.Sprintf("prices:\n- instanceType: %s\n  price: 50\n", target))
	overlay := write("overlay.yaml", fmt.Sprintf(`apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: avoid-%s}
spec:
  requirements:
  - {key: node.kubernetes.io/instance-type, operator: In, values: [%s]}
  priceAdjustment: "+1000%%"
`, strings.ReplaceAll(target, ".", "-"), target))
	for name, extra := range map[string][]string{
		"cost model":  {"--cost-model", model},
		"NodeOverlay": {"--nodeoverlays", overlay},
	} {
		got := claimTypes(t, extra...)
		if slices.Contains(got, target) {
			t.Errorf("with a %s pricing %s far above the rest, the plan still launches it: %v (without: %v)", name, target, got, base)
		}
	}
}

func TestNodeOverlayConflictIsANotice(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "overlays.yaml")
	doc := func(name, adj string) string {
		return fmt.Sprintf("apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: %s}\nspec:\n  priceAdjustment: %q\n", name, adj)
	}
	if err := os.WriteFile(p, []byte(doc("a", "-10%")+"---\n"+doc("b", "+10%")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runPlan(t, args([]string{"provision"}, pods, nodePools, catalog, ds, []string{"--nodeoverlays", p}))
	if code != exitOK {
		t.Fatalf("plan provision = %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(out, "NOTE: NodeOverlays a and b have the same weight and both price") {
		t.Errorf("output does not report the conflict:\n%s", out)
	}
}
