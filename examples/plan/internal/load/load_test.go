package load

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const podYAML = `apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: shop
spec:
  containers:
  - name: web
    image: web
    resources:
      requests:
        cpu: 500m
        memory: 1Gi
`

func podKeys(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, nodeplan.PodKey(p)+"@"+p.Spec.NodeName)
	}
	return out
}

func TestPods(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		content string
		want    []string
	}{
		{"one object", "p.yaml", podYAML, []string{"shop/web-1@"}},
		{"multi-document with empty ones and comments", "p.yaml",
			"---\n# leading comment\n---\n" + podYAML + "---\n" + strings.Replace(podYAML, "web-1", "web-2", 1) + "---\n",
			[]string{"shop/web-1@", "shop/web-2@"}},
		{"kubectl List", "p.yaml", `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: a, namespace: x}
  spec: {nodeName: n1, containers: [{name: c, image: i}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: b}
  spec: {containers: [{name: c, image: i}]}
`, []string{"x/a@n1", "default/b@"}},
		{"typed PodList whose items have no kind", "p.json", `{"apiVersion":"v1","kind":"PodList","items":[
  {"metadata":{"name":"a","namespace":"x"},"spec":{"containers":[{"name":"c","image":"i","resources":{"requests":{"cpu":2}}}]}}]}`,
			[]string{"x/a@"}},
		{"JSON stream", "p.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[]}}
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[]}}`,
			[]string{"default/a@", "default/b@"}},
		{"JSON array", "p.json", `[{"kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[]}}]`, []string{"default/a@"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l Loader
			pods, err := l.Pods(writeFile(t, tt.file, tt.content))
			if err != nil {
				t.Fatalf("Pods() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, podKeys(pods)); diff != "" {
				t.Errorf("Pods() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodsQuantities(t *testing.T) {
	var l Loader
	pods, err := l.Pods(writeFile(t, "p.yaml", podYAML))
	if err != nil {
		t.Fatal(err)
	}
	req := pods[0].Spec.Containers[0].Resources.Requests
	if got := req.Cpu().MilliValue(); got != 500 {
		t.Errorf("cpu = %dm, want 500m", got)
	}
	if got := req.Memory().Value(); got != 1<<30 {
		t.Errorf("memory = %d, want 1Gi", got)
	}
}

// TestErrors checks that every kind of bad input is an *Error whose message names the file and
// the object, and says what is wrong.
func TestErrors(t *testing.T) {
	tests := []struct {
		name    string
		load    func(l *Loader, file string) error
		content string
		want    []string // substrings of the message, after "file <path>: "
	}{
		{"wrong kind in a multi-document file", loadPods,
			podYAML + "---\n" + strings.Replace(podYAML, "web-1", "web-2", 1) + "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
			[]string{"document 3 (line 29): kind Deployment, want Pod"}},
		{"wrong kind in a List", loadPods,
			"kind: List\nitems:\n- {kind: Pod, metadata: {name: a}, spec: {containers: []}}\n- {kind: Service, metadata: {name: s}}\n",
			[]string{"document 1 (line 1), items[1]: kind Service, want Pod"}},
		{"wrong typed list", loadPods, "apiVersion: v1\nkind: NodeList\nitems: []\n",
			[]string{"document 1 (line 1): kind NodeList, want Pod"}},
		{"no kind", loadPods, "metadata: {name: a}\n", []string{"document 1 (line 1): no kind; want Pod"}},
		{"wrong apiVersion", loadDaemonSets, "apiVersion: extensions/v1beta1\nkind: DaemonSet\nmetadata: {name: ds, namespace: kube-system}\n",
			[]string{"DaemonSet kube-system/ds: apiVersion extensions/v1beta1, want apps/v1"}},
		{"invalid quantity", loadPods, strings.Replace(podYAML, "cpu: 500m", "cpu: 2 cores", 1),
			[]string{`document 1 (line 1): Pod shop/web-1: spec.containers[0].resources.requests.cpu: "2 cores" is not a valid quantity`}},
		{"invalid quantity in a node", loadNodes, "kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {memory: 4GB-ish}}\n",
			[]string{`Node n1: status.allocatable.memory: "4GB-ish" is not a valid quantity`}},
		{"negative request", loadPods, strings.Replace(podYAML, "cpu: 500m", "cpu: -1", 1),
			[]string{"Pod shop/web-1: spec.containers[0].resources.requests.cpu: -1 is negative"}},
		{"unknown node affinity operator", loadPods, podYAML + `  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: topology.kubernetes.io/zone, operator: Equals, values: [us-east-1a]}
`, []string{`Pod shop/web-1: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]: requirement topology.kubernetes.io/zone has unknown operator "Equals"`}},
		{"unknown label selector operator", loadPods, podYAML + `  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: DoNotSchedule
    labelSelector:
      matchExpressions: [{key: app, operator: Equal, values: [web]}]
`, []string{`Pod shop/web-1: spec.topologySpreadConstraints[0].labelSelector: "Equal" is not a valid label selector operator`}},
		{"bad whenUnsatisfiable", loadPods, podYAML + `  topologySpreadConstraints:
  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: Never}
`, []string{`spec.topologySpreadConstraints[0].whenUnsatisfiable: "Never" is not DoNotSchedule or ScheduleAnyway`}},
		{"unknown toleration operator", loadPods, podYAML + "  tolerations: [{key: gpu, operator: Equals, value: x}]\n",
			[]string{`Pod shop/web-1: spec.tolerations[0].operator: unknown operator "Equals" (want Equal or Exists)`}},
		{"bad taint effect", loadNodes, "kind: Node\nmetadata: {name: n1}\nspec: {taints: [{key: a, effect: NoScheduling}]}\n",
			[]string{`Node n1: spec.taints[0].effect: unknown effect "NoScheduling"`}},
		{"daemonset template", loadDaemonSets, `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: ds, namespace: kube-system}
spec:
  template:
    spec:
      containers: [{name: c, image: i, resources: {requests: {memory: lots}}}]
`, []string{`DaemonSet kube-system/ds: spec.template.spec.containers[0].resources.requests.memory: "lots" is not a valid quantity`}},
		{"pdb with both fields", loadPDBs, "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p}\nspec: {minAvailable: 1, maxUnavailable: 1}\n",
			[]string{"PodDisruptionBudget default/p: spec: minAvailable and maxUnavailable are both set"}},
		{"pdb bad percentage", loadPDBs, "kind: PodDisruptionBudget\nmetadata: {name: p}\nspec: {maxUnavailable: lots}\n",
			[]string{`PodDisruptionBudget default/p: spec.maxUnavailable: "lots" is not an integer or a percentage`}},
		{"no name", loadPods, "kind: Pod\nmetadata: {namespace: x}\nspec: {containers: []}\n",
			[]string{"Pod x/(no name): metadata.name: required"}},
		{"duplicate", loadPods, podYAML + "---\n" + podYAML,
			[]string{"document 2 (line 15): Pod shop/web-1: appears twice (first at document 1 (line 1))"}},
		{"type error", loadPods, "kind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, ports: [{containerPort: http}]}]}\n",
			[]string{"Pod default/a: spec.containers.ports.containerPort: a JSON string, want int32"}},
		{"invalid YAML", loadPods, podYAML + "---\nkind: Pod\nmetadata:\n  name: [a\n",
			[]string{"document 2 (line 15): invalid YAML: yaml: line 17"}},
		{"invalid JSON", loadPods, "{\"kind\": \"Pod\",\n \"metadata\": {]}\n", []string{"invalid JSON at line 2"}},
		{"not an object", loadPods, "just a string\n", []string{"document 1 (line 1): not an object"}},
		{"empty file", loadPods, "# nothing here\n", []string{"no objects; want Pods"}},
		{"every problem reported", loadPods, strings.Replace(podYAML, "cpu: 500m", "cpu: x", 1) + "---\nkind: Service\n",
			[]string{`document 1 (line 1): Pod shop/web-1: spec.containers[0].resources.requests.cpu: "x"`, "document 2 (line 15): kind Service, want Pod"}},
		{"catalog", loadCatalog, `{"instanceTypes":[{"name":"m5.large","capacity":{"cpu":"2"},"offerings":[{"zone":"a","capacityType":"on-demand","price":-1}]}]}`,
			[]string{`catalog instanceTypes[0] (m5.large): offerings[0].price: "-1" is not a positive price`}},
		{"empty catalog", loadCatalog, `{"instanceTypes":[]}`, []string{"the catalog has no instance types"}},
		{"NodePool operator", loadNodePools, "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec:\n  template:\n    spec:\n      requirements: [{key: karpenter.sh/capacity-type, operator: Equals, values: [spot]}]\n",
			[]string{`NodePool "default": spec.template.spec.requirements[0].operator: "Equals"`}},
		{"no NodePools", loadNodePools, "# empty\n", []string{"no NodePools"}},
		{"not a catalog", loadCatalog, `{"items":[]}`, []string{`catalog: no "instanceTypes" array`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, "input.yaml", tt.content)
			err := tt.load(&Loader{}, file)
			if err == nil {
				t.Fatalf("load(%q) = nil error, want %q", tt.content, tt.want)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Errorf("load() error has %d lines, want %d:\n%v", len(lines), len(tt.want), err)
			}
			for i, line := range lines {
				if !strings.HasPrefix(line, "file "+file+": ") {
					t.Errorf("line %d of the error = %q, want it to start with %q", i, line, "file "+file+": ")
				}
				if i < len(tt.want) && !strings.Contains(line, tt.want[i]) {
					t.Errorf("line %d of the error = %q, want it to contain %q", i, line, tt.want[i])
				}
			}
			var le *Error
			if !errors.As(err, &le) {
				t.Errorf("load() error %T is not an *Error", err)
			}
		})
	}
}

func loadPods(l *Loader, f string) error       { _, err := l.Pods(f); return err }
func loadNodes(l *Loader, f string) error      { _, err := l.Nodes(f); return err }
func loadDaemonSets(l *Loader, f string) error { _, err := l.DaemonSets(f); return err }
func loadPDBs(l *Loader, f string) error       { _, err := l.PodDisruptionBudgets(f); return err }
func loadCatalog(l *Loader, f string) error    { _, err := l.Catalog(f); return err }
func loadNodePools(l *Loader, f string) error  { _, err := l.NodePools(f); return err }

func TestMissingFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := (&Loader{}).Pods(file)
	want := "file " + file + ": cannot read: no such file or directory"
	if err == nil || err.Error() != want {
		t.Errorf("Pods(missing) error = %v, want %q", err, want)
	}
}

func TestUnknownFieldWarns(t *testing.T) {
	var warnings []string
	l := Loader{Warn: func(msg string) { warnings = append(warnings, msg) }}
	file := writeFile(t, "p.yaml", strings.Replace(podYAML, "requests:", "requestz: {cpu: 1}\n      requests:", 1))
	pods, err := l.Pods(file)
	if err != nil {
		t.Fatalf("Pods() error = %v", err)
	}
	if len(pods) != 1 {
		t.Fatalf("Pods() returned %d pods, want 1", len(pods))
	}
	want := []string{"file " + file + `: document 1 (line 1): Pod shop/web-1: unknown field "requestz" ignored`}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// TestSnapshot loads the tool's own example snapshot, which must stay valid input.
func TestSnapshot(t *testing.T) {
	var warnings []string
	l := Loader{Warn: func(msg string) { warnings = append(warnings, msg) }}
	dir := filepath.Join("..", "..", "testdata")
	pods, err := l.Pods(filepath.Join(dir, "pods.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := l.Nodes(filepath.Join(dir, "nodes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dss, err := l.DaemonSets(filepath.Join(dir, "ds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pdbs, err := l.PodDisruptionBudgets(filepath.Join(dir, "pdbs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	its, err := l.Catalog(filepath.Join(dir, "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	pools, err := l.NodePools(filepath.Join(dir, "nodepools.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pools) != 2 {
		t.Errorf("NodePools() = %d pools, want 2", len(pools))
	}
	if len(pods) == 0 || len(nodes) == 0 || len(dss) == 0 || len(pdbs) == 0 || len(its) == 0 {
		t.Errorf("snapshot: %d pods, %d nodes, %d DaemonSets, %d PDBs, %d instance types; want some of each",
			len(pods), len(nodes), len(dss), len(pdbs), len(its))
	}
	if len(warnings) > 0 {
		t.Errorf("snapshot warnings: %q", warnings)
	}
}
