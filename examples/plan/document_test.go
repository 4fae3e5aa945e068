package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

// TestDocumentType: every document says what it is, in the words doc.go promises to keep.
func TestDocumentType(t *testing.T) {
	for _, tc := range []struct {
		args []string
		kind string
	}{
		{args([]string{"provision"}, pods, nodePools, catalog, ds, nodes), "ProvisionPlan"},
		{args([]string{"disrupt"}, pods, nodes, nodePools, catalog, ds, pdbs, now), "DisruptionPlan"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			code, stdout, stderr := runPlan(t, append(slices.Clone(tc.args), "-o", "json"))
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var got struct{ APIVersion, Kind string }
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatal(err)
			}
			if got.APIVersion != "plan.nodeplan.io/v1alpha1" || got.Kind != tc.kind {
				t.Errorf("apiVersion %q, kind %q; want plan.nodeplan.io/v1alpha1, %s", got.APIVersion, got.Kind, tc.kind)
			}
		})
	}
}

// TestNodeClaimRequirementsShape: each new NodeClaim carries its labels and its requirements as
// Karpenter's NodeClaim spec.requirements (key, operator, values), so a reader sees which value
// of a multi-valued requirement the node gets and which stay open.
func TestNodeClaimRequirementsShape(t *testing.T) {
	code, stdout, stderr := runPlan(t, args([]string{"provision"}, pods, nodePools, catalog, ds, nodes, []string{"-o", "json"}))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		NodeClaims []struct {
			NodePool     string
			Labels       map[string]string
			Requirements []map[string]any
		}
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.NodeClaims) == 0 {
		t.Fatal("no nodeClaims; the example snapshot should launch some")
	}
	for i, c := range rep.NodeClaims {
		if c.Labels["karpenter.sh/nodepool"] != c.NodePool {
			t.Errorf("nodeClaims[%d].labels = %v; want karpenter.sh/nodepool: %s among them", i, c.Labels, c.NodePool)
		}
		if len(c.Requirements) == 0 {
			t.Fatalf("nodeClaims[%d].requirements is empty", i)
		}
		var keys []string
		for k := range c.Requirements[0] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if diff := cmp.Diff([]string{"key", "operator", "values"}, keys); diff != "" {
			t.Errorf("keys of nodeClaims[%d].requirements[0] (-want +got):\n%s", i, diff)
		}
	}
}

// TestYAMLIsTheJSONDocument: -o yaml is -o json's document, field for field, so either can be
// read with the same promise.
func TestYAMLIsTheJSONDocument(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"provision", args([]string{"provision"}, pods, nodePools, catalog, ds, nodes)},
		{"disrupt", args([]string{"disrupt"}, pods, nodes, nodePools, catalog, ds, pdbs, now)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decode := func(format string) map[string]any {
				t.Helper()
				code, stdout, stderr := runPlan(t, append(slices.Clone(tc.args), "-o", format))
				if code != exitOK {
					t.Fatalf("-o %s: exit %d: %s", format, code, stderr)
				}
				data := []byte(stdout)
				if format == "yaml" {
					if json.Valid(data) {
						t.Fatalf("-o yaml printed JSON:\n%s", stdout)
					}
					var err error
					if data, err = yaml.YAMLToJSON(data); err != nil {
						t.Fatalf("-o yaml is not YAML: %v\n%s", err, stdout)
					}
				}
				var v map[string]any
				if err := json.Unmarshal(data, &v); err != nil {
					t.Fatalf("-o %s: %v", format, err)
				}
				delete(v, "solveSeconds") // the time taken differs between runs
				return v
			}
			want, got := decode("json"), decode("yaml")
			if got["apiVersion"] != planAPIVersion || got["kind"] == "" {
				t.Errorf("-o yaml: apiVersion %v, kind %v", got["apiVersion"], got["kind"])
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("-o yaml differs from -o json (-json +yaml):\n%s", diff)
			}
		})
	}
}

// TestPriceUnit: prices are per hour, "$/h", in every text table, as in the summary lines and
// Karpenter's words; never "$/H".
func TestPriceUnit(t *testing.T) {
	for _, argv := range [][]string{
		args([]string{"provision"}, pods, nodePools, catalog, ds, nodes),
		args([]string{"disrupt"}, pods, nodes, nodePools, catalog, ds, pdbs, now),
	} {
		code, stdout, stderr := runPlan(t, argv)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", argv[0], code, stderr)
		}
		if strings.Contains(stdout, "$/H") || !strings.Contains(stdout, "$/h") {
			t.Errorf("%s: want prices in $/h, never $/H:\n%s", argv[0], stdout)
		}
	}
}
