package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// snapshot flags for the example cluster in testdata, relative to this directory.
var (
	pods      = []string{"--pods", "testdata/pods.yaml"}
	nodes     = []string{"--nodes", "testdata/nodes.yaml"}
	nodePools = []string{"--nodepools", "testdata/nodepools.yaml"}
	// nodeClaims are in flight: one launched whose Node has not registered, one that is a node.
	nodeClaims = []string{"--nodeclaims", "testdata/inflight/nodeclaims.yaml"}
	catalog    = []string{"--catalog", "testdata/catalog.json"}
	ds         = []string{"--daemonsets", "testdata/ds.yaml"}
)

func args(parts ...[]string) []string { return slices.Concat(parts...) }

// timing is what varies between runs; goldens hold a placeholder instead.
var timing = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`"solveSeconds": [0-9.e+-]+`), `"solveSeconds": 0`},
	{regexp.MustCompile(`(solved|planned) in [0-9.]+(ns|µs|ms|s|m[0-9.]+s)`), `$1 in 0s`},
}

func normalize(out string) string {
	for _, t := range timing {
		out = t.re.ReplaceAllString(out, t.repl)
	}
	return out
}

// runPlan runs the tool in-process and returns its exit status and output.
func runPlan(t *testing.T, argv []string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(argv, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"provision", args([]string{"provision"}, pods, nodePools, catalog, ds, nodes)},
		{"provision-no-nodes", args([]string{"provision"}, pods, nodePools, catalog, ds)},
		{"disrupt", args([]string{"disrupt"}, pods, nodes, nodePools, catalog, ds, pdbs, now)},
		// The node class's volume makes every node dear: one large node instead of two.
		{"provision-node-cost", args([]string{"provision"}, nodeCostFiles, catalog,
			[]string{"--ec2nodeclasses", "testdata/nodecost/ec2nodeclasses.yaml", "--node-cost", "0.005"})},
	}
	for _, tt := range tests {
		for _, format := range []string{"json", "text"} {
			t.Run(tt.name+"/"+format, func(t *testing.T) {
				code, stdout, stderr := runPlan(t, append(slices.Clone(tt.args), "-o", format))
				if code != exitOK {
					t.Fatalf("run(%q) = %d, want 0; stderr:\n%s", tt.args, code, stderr)
				}
				if format == "json" {
					var v map[string]any
					if err := json.Unmarshal([]byte(stdout), &v); err != nil {
						t.Fatalf("output is not JSON: %v\n%s", err, stdout)
					}
				}
				ext := map[string]string{"json": ".json", "text": ".txt"}[format]
				golden := filepath.Join("testdata", "golden", tt.name+ext)
				got := normalize(stdout)
				if *update {
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if diff := cmp.Diff(string(want), got); diff != "" {
					t.Errorf("run(%q) output differs from %s (-want +got); if the solver changed on purpose, run go test ./examples/plan -run TestGolden -update and review the diff:\n%s", tt.args, golden, diff)
				}
			})
		}
	}
}

// TestProvisionJSONShape checks the documented keys, so a renamed field cannot slip into the
// goldens unnoticed.
func TestProvisionJSONShape(t *testing.T) {
	code, stdout, stderr := runPlan(t, args([]string{"provision"}, pods, nodePools, catalog, ds, nodes, []string{"-o", "json"}))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatal(err)
	}
	keysOf := func(raw json.RawMessage) []string {
		var objs []map[string]any
		if err := json.Unmarshal(raw, &objs); err != nil {
			var obj map[string]any // an object rather than an array of them
			if err := json.Unmarshal(raw, &obj); err != nil {
				t.Fatal(err)
			}
			objs = append(objs, obj)
		}
		if len(objs) == 0 {
			t.Fatalf("%s is empty; the example snapshot should exercise it", raw)
		}
		var keys []string
		for k := range objs[0] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return keys
	}
	var top []string
	for k := range v {
		top = append(top, k)
	}
	slices.Sort(top)
	for _, c := range []struct {
		what string
		got  []string
		want []string
	}{
		{"top level", top, []string{"apiVersion", "comparison", "existingNodes", "inFlightNodeClaims", "kind", "lowerBound", "nodeClaims", "nodeCost", "notices", "solveSeconds", "totalPrice", "unschedulable"}},
		{"comparison", keysOf(v["comparison"]), []string{"currentCost", "currentNodes", "lowerBound", "replannedCost", "replannedNodes", "unplaced", "unpriced", "withPlanCost", "withPlanNodes"}},
		{"nodeClaims", keysOf(v["nodeClaims"]), []string{"capacityType", "instanceType", "instanceTypeOptions", "labels", "nodePool", "pods", "price", "requirements", "zone"}},
		{"existingNodes", keysOf(v["existingNodes"]), []string{"node", "pods"}},
		{"unschedulable", keysOf(v["unschedulable"]), []string{"code", "pod", "reason"}},
	} {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("keys of %s (-want +got):\n%s", c.what, diff)
		}
	}
}

// TestBadInput checks every class of bad input: exit status 2, nothing on stdout, and stderr
// naming the file and the object.
func TestBadInput(t *testing.T) {
	bad := func(name string) string { return filepath.Join("testdata", "bad", name) }
	tests := []struct {
		name string
		args []string
		want []string // substrings of stderr
	}{
		{"unreadable file", args([]string{"provision", "--pods", "testdata/no-such-file.yaml"}, nodePools, catalog),
			[]string{"plan: file testdata/no-such-file.yaml: cannot read: no such file or directory"}},
		{"wrong kind", args([]string{"provision", "--pods", bad("pods-kind.yaml")}, nodePools, catalog),
			[]string{"file " + bad("pods-kind.yaml") + ": document 3 (line 22): kind Deployment, want Pod"}},
		{"invalid quantity", args([]string{"provision", "--pods", bad("pods-quantity.yaml")}, nodePools, catalog),
			[]string{"file " + bad("pods-quantity.yaml") + ": document 1 (line 2), items[0]: Pod shop/cache-0: spec.containers[0].resources.requests.memory: \"3 gigs\" is not a valid quantity"}},
		{"unknown operator in a pod", args([]string{"provision", "--pods", bad("pods-operator.yaml")}, nodePools, catalog),
			[]string{"file " + bad("pods-operator.yaml") + ": document 1 (line 2): Pod default/zonal-1: spec.affinity.nodeAffinity", `unknown operator "Equals"`}},
		{"unknown operator in a NodePool", args([]string{"provision"}, pods, []string{"--nodepools", bad("nodepools-operator.yaml")}, catalog),
			[]string{"file " + bad("nodepools-operator.yaml") + ": ", `NodePool "default"`, "Equals"}},
		{"NodePool file holding pods", args([]string{"provision"}, pods, []string{"--nodepools", "testdata/pods.yaml"}, catalog),
			[]string{"file testdata/pods.yaml: ", `"Pod"`, "NodePool", "and 19 more problems"}},
		{"invalid YAML", args([]string{"provision", "--pods", bad("pods-yaml.yaml")}, nodePools, catalog),
			[]string{"file " + bad("pods-yaml.yaml") + ": document 1 (line 1): invalid YAML"}},
		{"unpriced offering", args([]string{"provision"}, pods, nodePools, []string{"--catalog", bad("catalog-price.json")}),
			[]string{"file " + bad("catalog-price.json") + ": catalog instanceTypes[0] (m5.large): offerings[0].price"}},
		{"bad capacity-type label", args([]string{"provision"}, pods, nodePools, catalog, []string{"--nodes", bad("nodes-capacity-type.yaml")}),
			[]string{"file " + bad("nodes-capacity-type.yaml") + `: Node ip-10-0-9-9.ec2.internal: label karpenter.sh/capacity-type: "SPOT" is not on-demand, spot or reserved`}},
		{"old DaemonSet API", args([]string{"provision"}, pods, nodePools, catalog, []string{"--daemonsets", bad("ds-apiversion.yaml")}),
			[]string{"file " + bad("ds-apiversion.yaml") + ": document 1 (line 2): DaemonSet logging/fluent-bit: apiVersion extensions/v1beta1, want apps/v1"}},
		{"problems in several files", args([]string{"provision", "--pods", bad("pods-quantity.yaml")}, nodePools, []string{"--catalog", bad("catalog-price.json")}),
			[]string{"file " + bad("pods-quantity.yaml"), "file " + bad("catalog-price.json")}},
		{"missing flag", []string{"provision", "--pods", "testdata/pods.yaml"}, []string{"plan: provision: missing --nodepools"}},
		{"unknown flag", args([]string{"provision", "--podz", "x"}), []string{"plan: provision: flag provided but not defined: -podz"}},
		{"bad output format", args([]string{"provision"}, pods, nodePools, catalog, []string{"-o", "xml"}), []string{`"xml" is not text, json, yaml or nodes`}},
		{"extra argument", args([]string{"provision"}, pods, nodePools, catalog, []string{"now"}), []string{`unexpected argument "now"`}},
		{"unknown command", []string{"consolidate"}, []string{`plan: unknown command "consolidate"`}},
		{"no command", nil, []string{"usage:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runPlan(t, tt.args)
			if code != exitBadInput {
				t.Errorf("run(%q) = %d, want %d; stderr:\n%s", tt.args, code, exitBadInput, stderr)
			}
			if stdout != "" {
				t.Errorf("run(%q) wrote to stdout:\n%s", tt.args, stdout)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("run(%q) stderr =\n%s\nwant it to contain %q", tt.args, stderr, w)
				}
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, argv := range [][]string{{"help"}, {"provision", "-h"}, {"disrupt", "-h"}} {
		code, _, _ := runPlan(t, argv)
		if code != exitOK {
			t.Errorf("run(%q) = %d, want 0", argv, code)
		}
	}
}

// TestDocumentedCommands runs every command in the README and in this package's doc that uses
// the example snapshot, from the repository root, exactly as written.
func TestDocumentedCommands(t *testing.T) {
	var cmds [][]string
	for _, file := range []string{"doc.go", filepath.Join("..", "..", "README.md")} {
		data, err := os.ReadFile(file)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, documentedCommands(string(data))...)
	}
	if len(cmds) == 0 {
		t.Fatal("found no documented command using examples/plan/testdata")
	}
	t.Chdir(filepath.Join("..", ".."))
	for _, argv := range cmds {
		code, stdout, stderr := runPlan(t, argv)
		if code != exitOK || stdout == "" {
			t.Errorf("go run ./examples/plan %s: exit %d, %d bytes of output; stderr:\n%s", strings.Join(argv, " "), code, len(stdout), stderr)
		}
	}
}

// documentedCommands finds "go run ./examples/plan ..." commands (continued over lines ending
// in a backslash) whose arguments name files of the example snapshot, and returns their
// arguments.
func documentedCommands(text string) [][]string {
	var cmds [][]string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		_, rest, ok := strings.Cut(lines[i], "go run ./examples/plan ")
		if !ok {
			continue
		}
		for strings.HasSuffix(strings.TrimSpace(rest), `\`) && i+1 < len(lines) {
			i++
			rest = strings.TrimSuffix(strings.TrimSpace(rest), `\`) + " " + strings.TrimPrefix(strings.TrimSpace(lines[i]), "//")
		}
		if !strings.Contains(rest, "examples/plan/testdata/") {
			continue
		}
		// An inline `code span` ends at its backtick; a pipeline's first command at the "|".
		if i := strings.IndexAny(rest, "`|>"); i >= 0 {
			rest = rest[:i]
		}
		cmds = append(cmds, strings.Fields(rest))
	}
	return cmds
}

func TestDocumentedCommandsParsing(t *testing.T) {
	text := "Try `go run ./examples/plan provision --pods examples/plan/testdata/pods.yaml -o json` now.\n" +
		"    go run ./examples/plan disrupt --pods examples/plan/testdata/pods.yaml \\\n" +
		"        --nodes examples/plan/testdata/nodes.yaml | jq .\n" +
		"    go run ./examples/plan provision --pods pods.yaml\n"
	want := [][]string{
		{"provision", "--pods", "examples/plan/testdata/pods.yaml", "-o", "json"},
		{"disrupt", "--pods", "examples/plan/testdata/pods.yaml", "--nodes", "examples/plan/testdata/nodes.yaml"},
	}
	if diff := cmp.Diff(want, documentedCommands(text)); diff != "" {
		t.Errorf("documentedCommands() (-want +got):\n%s", diff)
	}
}
