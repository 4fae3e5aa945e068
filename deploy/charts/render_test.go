package charts

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const (
	controllerChart = "nodeplan"
	crdChart        = "nodeplan-crd"
	// The release every test installs unless it says otherwise: `helm install nodeplan
	// deploy/charts/nodeplan -n kube-system`, the kustomize base's names and namespace.
	releaseName = "nodeplan"
	namespace   = "kube-system"
)

// required are the settings the chart cannot do without, as a user gives them.
const required = `
settings:
  clusterName: my-cluster
  clusterEndpoint: https://REPLACE.gr7.us-east-1.eks.amazonaws.com
`

// render renders a chart as `helm template <release> <chart> -n <namespace> -f values` does:
// Helm's install action in client-only dry-run mode, which loads the chart, validates the
// values against values.schema.json, and renders the templates. Each value document is merged
// over the last, like repeated -f flags.
func render(chartDir, relName string, values ...string) ([]*unstructured.Unstructured, error) {
	manifest, err := renderManifest(chartDir, relName, values...)
	if err != nil {
		return nil, err
	}
	return decodeManifests(manifest)
}

// renderManifest is render's YAML stream, as Helm installs it: the release's manifest, its
// objects in Helm's install order, each after a "# Source:" comment naming its template.
func renderManifest(chartDir, relName string, values ...string) (string, error) {
	ch, err := loader.LoadDir(chartDir)
	if err != nil {
		return "", fmt.Errorf("load %s: %w", chartDir, err)
	}
	vals := map[string]any{}
	for _, v := range values {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(v), &m); err != nil {
			return "", fmt.Errorf("values %q: %w", v, err)
		}
		vals = mergeValues(vals, m)
	}
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(io.Discard, nil)))
	install := action.NewInstall(cfg)
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = relName
	install.Namespace = namespace
	install.Replace = true
	r, err := install.Run(ch, vals)
	if err != nil {
		return "", err
	}
	rel, ok := r.(*release.Release)
	if !ok {
		return "", fmt.Errorf("install returned a %T", r)
	}
	if len(rel.Hooks) > 0 {
		// Helm would run them around the install; the golden files and the e2e apply the
		// manifest alone.
		return "", fmt.Errorf("%s renders %d hooks; render and the golden files know none", chartDir, len(rel.Hooks))
	}
	return rel.Manifest, nil
}

// mergeValues merges b over a, maps key by key, as Helm merges -f files.
func mergeValues(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = mergeValues(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// mustRender renders the controller chart with the required settings and the given values.
func mustRender(t *testing.T, values ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := render(controllerChart, releaseName, append([]string{required}, values...)...)
	if err != nil {
		t.Fatalf("render %s with %q: %v", controllerChart, values, err)
	}
	return objs
}

// decodeManifests splits a multi-document YAML stream into objects, each normalised through
// JSON so that numbers compare alike whoever rendered them.
func decodeManifests(manifest string) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	var out []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %q: %w", doc, err)
		}
		if s := strings.TrimSpace(string(js)); s == "null" || s == "{}" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(js, &m); err != nil {
			return nil, err
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// renderKustomize renders a kustomization with kustomize's own library, as `kubectl apply -k`.
func renderKustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	y, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifests(string(y))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	return objs
}

// find returns the object of that kind and name, failing the test when there is none.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s among %v", kind, name, names(objs))
	return nil
}

// typed converts an object to its API type.
func typed[T any](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	var v T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, &v, true); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return &v
}

// names lists objects as Kind/namespace/name, sorted.
func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}
