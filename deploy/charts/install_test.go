package charts

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestSchemaRejectsTypos: values.schema.json turns a misspelt or unknown key, and a value of
// the wrong kind, into an install error naming it, instead of a setting silently ignored.
func TestSchemaRejectsTypos(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{"settings: {clustername: prod}", "clustername"},
		{"replica: 3", "replica"},
		{"controller: {resource: {requests: {cpu: 1}}}", "resource"},
		{"serviceMonitor: {enable: true}", "enable"},
		{"serviceAccount: {annotation: {a: b}}", "annotation"},
		// A Karpenter feature gate nodeplan does not have is refused, not ignored.
		{"settings: {featureGates: {spotToSpotConsolidation: true}}", "spotToSpotConsolidation"},
		{"logLevel: warn", "logLevel"},
		{"replicas: two", "replicas"},
		{"settings: {clusterEndpoint: my-cluster.example}", "clusterEndpoint"},
		{"kubeadm: {enabled: true, caCertHashes: [abc]}", "caCertHashes"},
		{"controller: {metrics: {port: 70000}}", "port"},
		{"shadow: {enable: true}", "enable"},
		{"shadow: {enabled: true, interval: 1 minute}", "interval"},
	} {
		_, err := render(controllerChart, releaseName, required, c.values)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "schema") {
			t.Errorf("render with %q: error %v, want a schema error naming %s", c.values, err, c.want)
		}
	}
	if _, err := render(crdChart, releaseName, "installCRDs: true"); err == nil || !strings.Contains(err.Error(), "installCRDs") {
		t.Errorf("the CRD chart with a value: error %v, want a schema error naming installCRDs", err)
	}
}

// TestRequiredSettings: without a cluster name or endpoint the chart refuses to render, saying
// which, as the controller would refuse to start in its pod.
func TestRequiredSettings(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{"", "settings.clusterName is required"},
		{"settings: {clusterName: prod}", "settings.clusterEndpoint is required"},
		{required + "kubeadm: {enabled: true}", "kubeadm.caCertHashes"},
	} {
		_, err := render(controllerChart, releaseName, c.values)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("render with %q: error %v, want %q", c.values, err, c.want)
		}
	}
}

// TestCRDChart: the CRD chart holds exactly the CRDs of deploy/kustomize/crds (which
// examples/controller's TestDeployManifests keeps equal to `controller --print-crds`), and the
// controller chart none, so uninstalling the controller deletes no NodePool or NodeClaim.
func TestCRDChart(t *testing.T) {
	got, err := render(crdChart, "nodeplan-crd")
	if err != nil {
		t.Fatal(err)
	}
	want := renderKustomize(t, "../kustomize/crds")
	if len(want) != 5 {
		t.Errorf("deploy/kustomize/crds has %d objects, want 5 CRDs", len(want))
	}
	if d := cmp.Diff(objectMaps(want), objectMaps(got)); d != "" {
		t.Errorf("CRD chart against deploy/kustomize/crds (-kustomize +chart):\n%s", d)
	}
	a, _ := os.ReadFile("../kustomize/crds/crds.yaml")
	b, _ := os.ReadFile(crdChart + "/templates/crds.yaml")
	if string(a) != string(b) || len(a) == 0 {
		t.Error("deploy/charts/nodeplan-crd/templates/crds.yaml differs from deploy/kustomize/crds/crds.yaml; copy it: cp deploy/kustomize/crds/crds.yaml deploy/charts/nodeplan-crd/templates/")
	}
	for _, objs := range [][]*unstructured.Unstructured{mustRender(t), renderKustomize(t, "../kustomize"), renderKustomize(t, "../kubeadm")} {
		for _, o := range objs {
			if o.GetKind() == "CustomResourceDefinition" {
				t.Errorf("the controller's install holds CRD %s: deleting it would delete every object of that kind", o.GetName())
			}
		}
	}
}

// helmOnly are the labels Helm's bookkeeping adds, which a kustomize install has no use for.
var helmOnly = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/version"}

// objectMaps keys objects by Kind/namespace/name, with Helm's bookkeeping labels removed.
func objectMaps(objs []*unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, o := range objs {
		o = o.DeepCopy()
		if l := o.GetLabels(); l != nil {
			for _, k := range helmOnly {
				delete(l, k)
			}
			o.SetLabels(l)
		}
		out[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o.Object
	}
	return out
}

// TestChartMatchesKustomize: the chart with the settings the kustomize base is edited to holds
// the same objects, field by field — RBAC, Deployment (arguments, env, probes, scheduling),
// Service, PDB — for the base and for the kubeadm overlay.
func TestChartMatchesKustomize(t *testing.T) {
	// What deploy/kustomize/deployment.yaml says before a user edits it.
	base := required + `
controller: {image: {repository: nodeplan-controller, tag: latest}}
`
	t.Run("eks", func(t *testing.T) {
		got := mustRender(t, base)
		want := renderKustomize(t, "../kustomize")
		if d := cmp.Diff(objectMaps(want), objectMaps(got)); d != "" {
			t.Errorf("chart against deploy/kustomize (-kustomize +chart):\n%s", d)
		}
	})
	t.Run("kubeadm", func(t *testing.T) {
		got := mustRender(t, base, "kubeadm: {enabled: true, caCertHashes: ["+hash+"]}")
		want := renderKustomize(t, "../kubeadm")
		// The overlay's placeholder pin, as a user replaces it.
		for _, o := range want {
			if o.GetKind() != "Deployment" {
				continue
			}
			ctrs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			args, _, _ := unstructured.NestedStringSlice(ctrs[0].(map[string]any), "args")
			i := slices.Index(args, "--kubeadm-ca-cert-hash=sha256:REPLACE")
			if i < 0 {
				t.Fatalf("deploy/kubeadm's Deployment args %q lack the placeholder pin", args)
			}
			args[i] = "--kubeadm-ca-cert-hash=" + hash
			unstructured.SetNestedStringSlice(ctrs[0].(map[string]any), args, "args")
			unstructured.SetNestedSlice(o.Object, ctrs, "spec", "template", "spec", "containers")
		}
		if d := cmp.Diff(objectMaps(want), objectMaps(got)); d != "" {
			t.Errorf("chart against deploy/kubeadm (-kustomize +chart):\n%s", d)
		}
	})
}
