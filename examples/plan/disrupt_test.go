package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeplan/nodeplan/examples/plan/internal/load"
)

var (
	pdbs = []string{"--pdbs", "testdata/pdbs.yaml"}
	now  = []string{"--now", "2026-11-22T10:00:00Z"}
)

// TestDisruptAccountsForEveryNode checks issue 7's promise: every managed node is in a command
// or in blocked, and in only one of them.
func TestDisruptAccountsForEveryNode(t *testing.T) {
	code, stdout, stderr := runPlan(t, args([]string{"disrupt"}, pods, nodes, nodePools, catalog, ds, pdbs, now, []string{"-o", "json"}))
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	var rep disruptReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range rep.Commands {
		got = append(got, c.Nodes...)
	}
	for _, b := range rep.Blocked {
		got = append(got, b.Node)
	}
	slices.Sort(got)

	all, err := (&load.Loader{}).Nodes("testdata/nodes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var managed []string
	for _, n := range all {
		if n.Labels["karpenter.sh/nodepool"] != "" {
			managed = append(managed, n.Name)
		}
	}
	slices.Sort(managed)
	if diff := cmp.Diff(managed, got); diff != "" {
		t.Errorf("nodes in commands and blocked (-want managed nodes +got):\n%s", diff)
	}
	if len(rep.Commands) == 0 {
		t.Errorf("no commands; the example snapshot should have a node to consolidate")
	}
}

func TestDisruptBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad --now", args([]string{"disrupt"}, pods, nodes, nodePools, catalog, []string{"--now", "tomorrow"}), `--now "tomorrow" is not an RFC 3339 time`},
		{"no nodes", args([]string{"disrupt"}, pods, nodePools, catalog), "plan: disrupt: missing --nodes"},
		{"bad PDB file", args([]string{"disrupt"}, pods, nodes, nodePools, catalog, []string{"--pdbs", "testdata/nodes.yaml"}),
			"file testdata/nodes.yaml: document 1 (line 1), items[0]: kind Node, want PodDisruptionBudget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runPlan(t, tt.args)
			if code != exitBadInput || stdout != "" || !strings.Contains(stderr, tt.want) {
				t.Errorf("run(%q) = %d, stdout %q, stderr %q; want %d, no stdout, stderr containing %q", tt.args, code, stdout, stderr, exitBadInput, tt.want)
			}
		})
	}
}
