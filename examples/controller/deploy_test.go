package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

const deployDir = "../../deploy"

// loadKustomize decodes every resource the kustomization lists, strictly, with the API types.
func loadKustomize(t *testing.T) []runtime.Object {
	t.Helper()
	dir := filepath.Join(deployDir, "kustomize")
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(raw, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	sch := runtime.NewScheme()
	if err := clientscheme.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	dec := serializer.NewCodecFactory(sch, serializer.EnableStrict).UniversalDeserializer()
	var out []runtime.Object
	for _, f := range k.Resources {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for i := 0; ; i++ {
			doc, err := r.Read()
			if err != nil {
				break
			}
			if len(bytes.TrimSpace(doc)) == 0 || strings.TrimSpace(string(doc)) == "---" {
				continue
			}
			js, err := yaml.YAMLToJSON(doc)
			if err != nil || string(js) == "null" {
				continue
			}
			obj, _, err := dec.Decode(js, nil, nil)
			if err != nil {
				t.Errorf("%s document %d: %v", f, i, err)
				continue
			}
			out = append(out, obj)
		}
	}
	return out
}

// TestDeployManifests: every object decodes strictly; the CRDs (apart) are the binary's own; the
// Deployment runs two replicas with the probes, ports and settings the binary reads.
func TestDeployManifests(t *testing.T) {
	objs := loadKustomize(t)
	crds, _ := os.ReadFile(filepath.Join(deployDir, "kustomize", "crds", "crds.yaml"))
	if !bytes.Equal(crds, controller.CRDYAML()) {
		t.Error("deploy/kustomize/crds/crds.yaml differs from `controller --print-crds`; regenerate it: (cd examples && go run ./controller --print-crds > ../deploy/kustomize/crds/crds.yaml)")
	}
	kinds := map[string]int{}
	var dep *appsv1.Deployment
	for _, o := range objs {
		kinds[strings.Split(fmt.Sprintf("%T", o), ".")[1]]++
		if d, ok := o.(*appsv1.Deployment); ok {
			dep = d
		}
	}
	// The CRDs are a kustomization of their own (deploy/kustomize/crds): deleting the install
	// must not delete every NodePool and NodeClaim.
	if kinds["CustomResourceDefinition"] > 0 {
		t.Errorf("the kustomize base holds %d CRDs; they belong in deploy/kustomize/crds", kinds["CustomResourceDefinition"])
	}
	for _, k := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role",
		"RoleBinding", "Deployment", "Service", "PodDisruptionBudget"} {
		if kinds[k] == 0 {
			t.Errorf("no %s in the kustomize base (have %v)", k, kinds)
		}
	}
	if dep == nil {
		t.Fatal("no Deployment")
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2 (leader election)", dep.Spec.Replicas)
	}
	ctr := dep.Spec.Template.Spec.Containers[0]
	if p := ctr.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
		t.Errorf("liveness probe %+v, want GET /healthz", p)
	}
	if p := ctr.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness probe %+v, want GET /readyz", p)
	}
	if ctr.Resources.Requests.Cpu().IsZero() || ctr.Resources.Requests.Memory().IsZero() {
		t.Error("no cpu/memory requests")
	}
	known := map[string]bool{}
	for _, e := range karpenterEnv {
		known[e.env] = true
	}
	for _, e := range ctr.Env {
		if !known[e.Name] {
			t.Errorf("Deployment sets %s, which the controller does not read", e.Name)
		}
	}
	// The arguments are the controller's flags, and keep the CapacityBuffers the ClusterRole
	// grants rights for.
	o, err := parseFlags(ctr.Args, io.Discard)
	if err != nil {
		t.Errorf("Deployment args %q: %v", ctr.Args, err)
	} else if !o.capacityBuffers {
		t.Errorf("Deployment args %q lack --capacity-buffers, yet the ClusterRole grants CapacityBuffer rights", ctr.Args)
	}
	for _, want := range []string{"CLUSTER_NAME", "CLUSTER_ENDPOINT", "INTERRUPTION_QUEUE", "LOG_LEVEL"} {
		if !slices.ContainsFunc(ctr.Env, func(e corev1.EnvVar) bool { return e.Name == want }) {
			t.Errorf("Deployment does not set %s", want)
		}
	}
}

// apiCall is one call the controller makes: verb on group/resource.
type apiCall struct{ verb, group, resource string }

// controllerCalls are the API calls in examples/internal/controller (informers: list and watch;
// plus each client call), read from the code. TestRBAC checks the ClusterRole grants these and
// nothing else.
var controllerCalls = []apiCall{
	{"list", "", "pods"}, {"watch", "", "pods"}, {"get", "", "pods"}, // informer; terminate.go re-reads before evicting
	{"delete", "", "pods"}, {"create", "", "pods/eviction"}, // terminate.go
	{"list", "", "nodes"}, {"watch", "", "nodes"}, {"get", "", "nodes"}, {"update", "", "nodes"}, {"delete", "", "nodes"},
	{"list", "", "namespaces"}, {"watch", "", "namespaces"},
	{"list", "", "persistentvolumeclaims"}, {"watch", "", "persistentvolumeclaims"},
	{"list", "", "persistentvolumes"}, {"watch", "", "persistentvolumes"},
	{"list", "storage.k8s.io", "storageclasses"}, {"watch", "storage.k8s.io", "storageclasses"},
	{"list", "storage.k8s.io", "csinodes"}, {"watch", "storage.k8s.io", "csinodes"},
	{"list", "policy", "poddisruptionbudgets"}, {"watch", "policy", "poddisruptionbudgets"},
	{"list", "apps", "daemonsets"}, {"watch", "apps", "daemonsets"},
	{"create", "", "events"}, {"patch", "", "events"},
	{"get", "karpenter.sh", "nodeclaims"}, {"list", "karpenter.sh", "nodeclaims"}, {"watch", "karpenter.sh", "nodeclaims"},
	{"create", "karpenter.sh", "nodeclaims"}, {"update", "karpenter.sh", "nodeclaims"}, {"delete", "karpenter.sh", "nodeclaims"},
	{"update", "karpenter.sh", "nodeclaims/status"},
	{"get", "karpenter.sh", "nodepools"}, {"list", "karpenter.sh", "nodepools"}, {"watch", "karpenter.sh", "nodepools"},
	{"update", "karpenter.sh", "nodepools"}, // clusterpools.go: the template hash annotations
	{"update", "karpenter.sh", "nodepools/status"},
	{"get", "karpenter.k8s.aws", "ec2nodeclasses"}, // nodeclassstatus.go reads before writing status
	{"list", "karpenter.k8s.aws", "ec2nodeclasses"}, {"watch", "karpenter.k8s.aws", "ec2nodeclasses"},
	{"update", "karpenter.k8s.aws", "ec2nodeclasses/status"},
	// With --capacity-buffers (buffers.go).
	{"get", "autoscaling.x-k8s.io", "capacitybuffers"}, {"list", "autoscaling.x-k8s.io", "capacitybuffers"},
	{"watch", "autoscaling.x-k8s.io", "capacitybuffers"}, {"update", "autoscaling.x-k8s.io", "capacitybuffers/status"},
	{"list", "", "podtemplates"}, {"watch", "", "podtemplates"},
	{"list", "apps", "deployments"}, {"watch", "apps", "deployments"}, {"list", "apps", "replicasets"},
	{"watch", "apps", "replicasets"}, {"list", "apps", "statefulsets"}, {"watch", "apps", "statefulsets"},
}

func TestRBAC(t *testing.T) {
	var role *rbacv1.ClusterRole
	for _, o := range loadKustomize(t) {
		if r, ok := o.(*rbacv1.ClusterRole); ok {
			role = r
		}
	}
	if role == nil {
		t.Fatal("no ClusterRole")
	}
	granted := map[apiCall]bool{}
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					if v == "*" || res == "*" || g == "*" {
						t.Errorf("wildcard in rule %+v", r)
					}
					granted[apiCall{v, g, res}] = true
				}
			}
		}
	}
	need := map[apiCall]bool{}
	for _, c := range controllerCalls {
		need[c] = true
		if !granted[c] {
			t.Errorf("ClusterRole lacks %s %s/%s, which the controller calls", c.verb, c.group, c.resource)
		}
	}
	for c := range granted {
		if !need[c] {
			t.Errorf("ClusterRole grants %s %s/%s, which the controller never calls", c.verb, c.group, c.resource)
		}
	}
}

// TestDashboard: every query of the Grafana dashboard names only series the controller serves.
func TestDashboard(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(deployDir, "grafana", "nodeplan-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	served := map[string]bool{}
	for _, n := range controller.NewMetrics().Names() {
		served[n] = true
	}
	metricName := regexp.MustCompile(`\b(?:karpenter|nodeplan)_[a-z0-9_]+`)
	queries := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			queries++
			names := metricName.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: query %q names no metric", p.Title, tg.Expr)
			}
			for _, n := range names {
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_count"), "_sum")
				if !served[n] && !served[base] {
					t.Errorf("panel %q: %s is not a series the controller serves", p.Title, n)
				}
			}
		}
	}
	if queries < 8 {
		t.Errorf("%d queries, want the dashboard's panels", queries)
	}
}

// TestREADMEMetricsTable: the README's table of Karpenter's series names exactly the series the
// controller serves under Karpenter's names (KarpenterSeries), and each is registered.
func TestREADMEMetricsTable(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(raw), "### Metrics: Karpenter's names")
	table, _, _ = strings.Cut(table, "\n## ")
	// A row names full series (`karpenter_x`) and suffixes of the row's first series (`_y`).
	named := map[string]bool{}
	for _, row := range strings.Split(table, "\n") {
		cells := strings.Split(row, "|")
		if len(cells) < 3 {
			continue
		}
		first := cells[1]
		if strings.Contains(cells[2], "not served") {
			continue
		}
		base := ""
		for _, m := range regexp.MustCompile("`(karpenter_[a-z_]+|_[a-z_]+)").FindAllStringSubmatch(first, -1) {
			n := m[1]
			if strings.HasPrefix(n, "karpenter_") {
				base = n
			} else if base != "" {
				// a suffix replaces the last word(s) of the row's series: karpenter_nodes_total_pod_requests, `_total_pod_limits`
				for i := len(base) - 1; i > 0; i-- {
					if base[i] == '_' && hasSeries(base[:i]+n) {
						n = base[:i] + n
						break
					}
				}
			}
			named[n] = true
		}
	}
	served := map[string]bool{}
	for _, n := range controller.NewMetrics().Names() {
		served[n] = true
	}
	for n := range controller.KarpenterSeries {
		if !named[n] {
			t.Errorf("README's metrics table does not list %s, which the controller serves", n)
		}
		if !served[n] {
			t.Errorf("%s is in KarpenterSeries but not registered", n)
		}
	}
	for n := range named {
		if _, ok := controller.KarpenterSeries[n]; !ok {
			t.Errorf("README's metrics table lists %s as served; the controller has no such series", n)
		}
	}
}

func hasSeries(n string) bool { _, ok := controller.KarpenterSeries[n]; return ok }
