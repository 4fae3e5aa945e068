package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// A NodeClaim launched but not registered is room pending pods use before any new node; one
// whose Node is in the snapshot is that node, not room twice.
func TestProvisionUsesInFlightNodeClaims(t *testing.T) {
	run := func(extra ...[]string) provisionReport {
		t.Helper()
		code, out, stderr := runPlan(t, args(append([][]string{{"provision"}, pods, nodePools, catalog, ds, nodes, {"-o", "json"}}, extra...)...))
		if code != exitOK {
			t.Fatalf("plan provision = %d, want 0; stderr:\n%s", code, stderr)
		}
		var rep provisionReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	without, with := run(), run(nodeClaims)
	if len(with.InFlightNodeClaims) != 1 || with.InFlightNodeClaims[0].NodeClaim != "default-inflight" || len(with.InFlightNodeClaims[0].Pods) == 0 {
		t.Fatalf("plan provision --nodeclaims: inFlightNodeClaims = %+v, want pods on default-inflight only", with.InFlightNodeClaims)
	}
	if len(with.NodeClaims) >= len(without.NodeClaims) || with.TotalPrice >= without.TotalPrice {
		t.Errorf("plan provision --nodeclaims launches %d nodes for $%v/h, without %d for $%v/h; want fewer, cheaper",
			len(with.NodeClaims), with.TotalPrice, len(without.NodeClaims), without.TotalPrice)
	}
	if !slices.ContainsFunc(with.Notices, func(n string) bool { return strings.Contains(n, "1 NodeClaim without a Node yet") }) {
		t.Errorf("notices = %q, want one counting the claim in flight", with.Notices)
	}
}

// --preference-policy takes Karpenter's PREFERENCE_POLICY words and nodeplan's CostAware, and
// says which environment variable it stands for.
func TestProvisionPreferencePolicyFlag(t *testing.T) {
	for _, p := range []string{"Respect", "Ignore", "CostAware"} {
		if code, _, stderr := runPlan(t, args([]string{"provision"}, pods, nodePools, catalog, []string{"--preference-policy", p})); code != exitOK {
			t.Errorf("plan provision --preference-policy %s = %d, want 0; stderr:\n%s", p, code, stderr)
		}
	}
	code, _, stderr := runPlan(t, args([]string{"provision"}, pods, nodePools, catalog, []string{"--preference-policy", "Strict"}))
	if code != exitBadInput || !strings.Contains(stderr, `"Strict" is not Respect, Ignore or CostAware`) {
		t.Errorf("plan provision --preference-policy Strict = %d, stderr %q; want 2 naming the words", code, stderr)
	}
	_, _, help := runPlan(t, []string{"provision", "-h"})
	if !strings.Contains(help, "PREFERENCE_POLICY") {
		t.Errorf("plan provision -h does not name PREFERENCE_POLICY:\n%s", help)
	}
}
