package nodeplan

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sigsyaml "sigs.k8s.io/yaml"
)

// `kubectl get nodepools,ec2nodeclasses,nodeoverlays -o yaml` output — a List with status,
// managedFields, a static pool (spec.replicas), Gte/Lte requirements and a NodeOverlay — loads,
// as YAML, as JSON (-o json) and split into "---" documents with another provider's node class.
// The root registers no node-class kind, so the EC2NodeClass is skipped here; cloudprovider/ec2's
// tests read the same file with it.
func TestDecodeKubectlGetOutput(t *testing.T) {
	yamlOut, err := os.ReadFile("testdata/kubectl/get-nodepools-ec2nodeclasses-nodeoverlays.yaml")
	if err != nil {
		t.Fatal(err)
	}
	jsonOut, err := sigsyaml.YAMLToJSON(yamlOut)
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Items []json.RawMessage }
	if err := json.Unmarshal(jsonOut, &list); err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, it := range list.Items {
		y, err := sigsyaml.JSONToYAML(it)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(y))
	}
	docs = append(docs, "apiVersion: karpenter.azure.com/v1beta1\nkind: AKSNodeClass\nmetadata: {name: azure}\nspec: {imageFamily: Ubuntu2204}\n")
	stream := "---\n" + strings.Join(docs, "---\n")

	for _, tt := range []struct {
		name, input string
		skipped     []string
	}{
		{"yaml list", string(yamlOut), []string{"EC2NodeClass/default", "NodeOverlay/gpu-price-discount"}},
		{"json list", string(jsonOut), []string{"EC2NodeClass/default", "NodeOverlay/gpu-price-discount"}},
		{"yaml documents", stream, []string{"EC2NodeClass/default", "NodeOverlay/gpu-price-discount", "AKSNodeClass/azure"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := DecodeManifests([]byte(tt.input))
			if err != nil {
				t.Fatalf("DecodeManifests(%s) = %v", tt.name, err)
			}
			var pools []string
			for _, p := range m.NodePools {
				pools = append(pools, p.Name)
			}
			if diff := cmp.Diff([]string{"default", "static-ingress"}, pools); diff != "" {
				t.Errorf("NodePools (-want +got):\n%s", diff)
			}
			if len(m.NodeClasses) != 0 {
				t.Errorf("NodeClasses = %v, want none: no kind is registered here", m.NodeClasses)
			}
			var skipped []string
			for _, s := range m.Skipped {
				skipped = append(skipped, s.Kind+"/"+s.Name)
				if s.Reason == "" {
					t.Errorf("Skipped %s/%s has no reason", s.Kind, s.Name)
				}
			}
			if diff := cmp.Diff(tt.skipped, skipped); diff != "" {
				t.Errorf("Skipped (-want +got):\n%s", diff)
			}
			if len(m.NodePools) != 2 {
				return
			}
			cpu, _ := m.NodePools[0].Template.Requirements.Get("karpenter.k8s.aws/instance-cpu")
			for v, want := range map[string]bool{"2": false, "4": true, "96": true} {
				if got := cpu.Accepts(v, true); got != want {
					t.Errorf("instance-cpu Gte 4 accepts %s = %v, want %v", v, got, want)
				}
			}
			gen, _ := m.NodePools[0].Template.Requirements.Get("karpenter.k8s.aws/instance-generation")
			if !gen.Accepts("7", true) || gen.Accepts("8", true) {
				t.Errorf("instance-generation Lte 7 = %v", gen)
			}
			if r := m.NodePools[1].Replicas; r == nil || *r != 2 {
				t.Errorf("static-ingress Replicas = %v, want 2", r)
			}
			if m.NodePools[0].Replicas != nil {
				t.Errorf("default Replicas = %v, want nil", *m.NodePools[0].Replicas)
			}
		})
	}
}

func TestDecodeStaticAndBoundErrors(t *testing.T) {
	head := "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\n"
	tests := []struct{ name, input, want string }{
		{"negative Gte", head + "spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ['-1']}]}}}\n",
			`spec.template.spec.requirements[0].values[0]`},
		{"Lte two values", head + "spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ['1', '2']}]}}}\n",
			`spec.template.spec.requirements[0].values`},
		{"static pool with a cpu limit", head + "spec: {replicas: 2, limits: {cpu: '8'}, template: {spec: {}}}\n", `spec.limits.cpu`},
		{"static pool with a weight", head + "spec: {replicas: 2, weight: 10, template: {spec: {}}}\n", `spec.weight`},
		{"negative replicas", head + "spec: {replicas: -1, template: {spec: {}}}\n", `spec.replicas`},
		{"a typo in the kind is still an error", "apiVersion: karpenter.sh/v1\nkind: NodePol\nmetadata: {name: p}\n", `kind`},
	}
	for _, tt := range tests {
		_, err := DecodeManifests([]byte(tt.input))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: DecodeManifests() error = %v, want one naming %s", tt.name, err, tt.want)
		}
	}
}
