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
