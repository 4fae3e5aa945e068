package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNodesView: -o nodes shows each planned node (pool, type, zone, capacity type, price),
// bars of its requested cpu and memory against its allocatable, its pods, the existing nodes
// that receive pods, the in-flight NodeClaims that do, and the fleet against the lower bound;
// every line within 100 columns. The golden holds the whole view of the example snapshot.
func TestNodesView(t *testing.T) {
	argv := args([]string{"provision"}, pods, nodePools, catalog, ds, nodes, nodeClaims, []string{"-o", "nodes"})
	code, stdout, stderr := runPlan(t, argv)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for i, line := range strings.Split(stdout, "\n") {
		if n := len([]rune(line)); n > viewWidth {
			t.Errorf("line %d is %d columns, want at most %d: %q", i+1, n, viewWidth, line)
		}
	}
	for _, want := range []*regexp.Regexp{
		// A new node's title and its bars: 1125m of r5.large's 1930m is 58%.
		regexp.MustCompile(`(?m)^default +r5\.large +us-east-1c +spot +\$0\.0375/h +1 pod\n` +
			` +cpu +\[█{17}░{13}\] +58% +1125m of 1930m\n` +
			` +memory +\[█+░+\] +\d+% +[0-9.]+Gi of [0-9.]+Gi\n` +
			` +pods +shop/cache-5d9f7b6c84-w9q2h\n`),
		regexp.MustCompile(`(?m)^ip-10-0-3-67\.ec2\.internal +default +c5\.xlarge +us-east-1c +on-demand +\$0\.1700/h +\d+ pods, 1 placed$`),
		regexp.MustCompile(`(?m)^in-flight NodeClaim \S+ receives \S+`),
		regexp.MustCompile(`(?m)^FLEET\n +\d+ new nodes, \$[0-9.]+/h; lower bound \$[0-9.]+/h \(cost/LB [0-9.]+\)\n +cpu +\[`),
		regexp.MustCompile(`(?m)^ +2 pods unschedulable \(-o text says why\): ml/embedder-arm-5c8d7f9b4-q7w8e, reports/backfill-8r2kd$`),
	} {
		if !want.MatchString(stdout) {
			t.Errorf("-o nodes lacks %s:\n%s", want, stdout)
		}
	}

	golden := filepath.Join("testdata", "golden", "provision.nodes")
	if *update {
		if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), stdout); diff != "" {
		t.Errorf("-o nodes differs from %s (-want +got); if the plan changed on purpose, run with -update and review:\n%s", golden, diff)
	}
}

// TestNodesViewNodeCost: the nodes' lines price their instances, so the fleet's total says how
// much of it is node cost, as provision's summary does.
func TestNodesViewNodeCost(t *testing.T) {
	code, stdout, stderr := runPlan(t, args([]string{"provision"}, nodeCostFiles, catalog,
		[]string{"--ec2nodeclasses", "testdata/nodecost/ec2nodeclasses.yaml", "--node-cost", "0.005", "-o", "nodes"}))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !regexp.MustCompile(`(?m)^ +1 new node, \$[0-9.]+/h \(\$[0-9.]+/h of it node cost\); lower bound`).MatchString(stdout) {
		t.Errorf("the fleet line does not say the node cost:\n%s", stdout)
	}
}

func TestBar(t *testing.T) {
	for _, tc := range []struct {
		used, total int64
		want        string
	}{
		{0, 1000, "[" + strings.Repeat("░", 30) + "]    0%"},
		{500, 1000, "[" + strings.Repeat("█", 15) + strings.Repeat("░", 15) + "]   50%"},
		{1, 1000, "[█" + strings.Repeat("░", 29) + "]    0%"}, // something on it never looks empty
		{3000, 1000, "[" + strings.Repeat("█", 30) + "]  300%"},
		{10, 0, "[" + strings.Repeat(" ", 30) + "]     -"},
	} {
		if got := bar(tc.used, tc.total); got != tc.want {
			t.Errorf("bar(%d, %d) = %q, want %q", tc.used, tc.total, got, tc.want)
		}
	}
}

func TestWriteWrapped(t *testing.T) {
	var b strings.Builder
	words := slices.Repeat([]string{"0123456789"}, 20)
	writeWrapped(&b, "NOTE: ", "      ", strings.Join(words, " "))
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("wrapped into %d lines, want 3:\n%s", len(lines), b.String())
	}
	for i, l := range lines {
		if len(l) > viewWidth || (i > 0 && !strings.HasPrefix(l, "      0")) {
			t.Errorf("line %d = %q: want at most %d columns, continued under the text", i, l, viewWidth)
		}
	}
}

// TestDisruptNodesView: disrupt -o nodes shows every node with its utilisation, its pods and
// its fate (the command that removes it, or why it stays), the replacements as provision's
// view shows new nodes, and the fleet; every line within 100 columns.
func TestDisruptNodesView(t *testing.T) {
	for _, tc := range []struct {
		name, golden string
		argv         []string
		want         []*regexp.Regexp
	}{
		{"example", "disrupt.nodes", args([]string{"disrupt"}, pods, nodes, nodePools, catalog, ds, pdbs, now, []string{"-o", "nodes"}),
			[]*regexp.Regexp{
				regexp.MustCompile(`(?m)^ip-10-0-1-23\.ec2\.internal +default +m5\.xlarge +us-east-1a +on-demand +\$0\.1920/h +3 pods\n` +
					` +cpu +\[█{16}░{14}\] +54% +2125m of 3920m\n +memory .*\n +pods .*\n +plan +delete \(Underutilized\): saves \$0\.1920/h$`),
				regexp.MustCompile(`(?m)^ +plan +stays \(Nominated\): pending pod default/inflate-66fb68585c-4tq8r`),
				regexp.MustCompile(`(?m)^ +plan +stays: no NodePool manages it$`),
				regexp.MustCompile(`(?m)^FLEET\n +4 nodes at \$0\.3892/h \(the instances whose price is known\); 1 command saving \$0\.1920/h$`),
			}},
		{"replace", "", args([]string{"disrupt"}, replaceSnapshot, []string{"-o", "nodes"}),
			[]*regexp.Regexp{
				regexp.MustCompile(`(?m)^ +plan +replace with 1 node \(Underutilized\): saves \$0\.3701/h$`),
				regexp.MustCompile(`(?m)^REPLACEMENTS\ndefault +t3\.medium +us-east-1c +spot +\$0\.0139/h +1 pod\n +cpu +\[█+░+\] +78% +1500m of 1930m\n` +
					`.*\n +pods +shop/api-6d5f8b7c9-r4t2w$`),
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runPlan(t, tc.argv)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for i, line := range strings.Split(stdout, "\n") {
				if n := len([]rune(line)); n > viewWidth {
					t.Errorf("line %d is %d columns, want at most %d: %q", i+1, n, viewWidth, line)
				}
			}
			for _, want := range tc.want {
				if !want.MatchString(stdout) {
					t.Errorf("-o nodes lacks %s:\n%s", want, stdout)
				}
			}
			if tc.golden == "" {
				return
			}
			golden := filepath.Join("testdata", "golden", tc.golden)
			if *update {
				if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), stdout); diff != "" {
				t.Errorf("-o nodes differs from %s (-want +got):\n%s", golden, diff)
			}
		})
	}
}
