package charts

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const shadowName = "nodeplan-shadow"

func shadowContainer(t *testing.T, objs []*unstructured.Unstructured) corev1.Container {
	t.Helper()
	return typed[appsv1.Deployment](t, find(t, objs, "Deployment", shadowName)).Spec.Template.Spec.Containers[0]
}

func init() {
	valueCases = append(valueCases, []valueCase{
		{[]string{"shadow.enabled"}, "shadow: {enabled: true}", func(t *testing.T, objs []*unstructured.Unstructured) {
			want := []string{"ClusterRole//nodeplan-shadow", "ClusterRoleBinding//nodeplan-shadow", "Deployment/kube-system/nodeplan-shadow",
				"Service/kube-system/nodeplan-shadow", "ServiceAccount/kube-system/nodeplan-shadow"}
			if d := cmp.Diff(want, names(objs)); d != "" {
				t.Errorf("shadow mode's objects (-want +got):\n%s", d)
			}
		}},
		{[]string{"shadow.image.repository", "shadow.image.tag", "shadow.image.digest"}, "shadow: {enabled: true, image: {repository: reg.example/plan, tag: v1, digest: \"" + hash + "\"}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			if got := shadowContainer(t, objs).Image; got != "reg.example/plan:v1@"+hash {
				t.Errorf("image %q", got)
			}
		}},
		{[]string{"shadow.interval", "shadow.extraArgs"}, "{shadow: {enabled: true, interval: 30s, extraArgs: [--offline]}, settings: {nodeCost: 0.01}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			want := []string{"watch", "--current-context", "--interval=30s", "--metrics-addr=:9090", "--node-cost=0.01", "--offline"}
			if got := shadowContainer(t, objs).Args; !cmp.Equal(got, want) {
				t.Errorf("args %q, want %q", got, want)
			}
		}},
		{[]string{"shadow.env", "shadow.resources"}, "shadow: {enabled: true, env: [{name: AWS_REGION, value: us-west-2}], resources: {requests: {cpu: 50m}, limits: null}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			c := shadowContainer(t, objs)
			if len(c.Env) != 1 || c.Env[0].Value != "us-west-2" {
				t.Errorf("env %+v", c.Env)
			}
			if c.Resources.Requests.Cpu().String() != "50m" || len(c.Resources.Limits) != 0 {
				t.Errorf("resources %+v", c.Resources)
			}
		}},
		{[]string{"shadow.metrics.port"}, "shadow: {enabled: true, metrics: {port: 9100}}", func(t *testing.T, objs []*unstructured.Unstructured) {
			c := shadowContainer(t, objs)
			if !slices.Contains(c.Args, "--metrics-addr=:9100") || c.Ports[0].ContainerPort != 9100 {
				t.Errorf("args %q, ports %+v", c.Args, c.Ports)
			}
			if p := typed[corev1.Service](t, find(t, objs, "Service", shadowName)).Spec.Ports[0].Port; p != 9100 {
				t.Errorf("Service port %d, want 9100", p)
			}
		}},
	}...)
}

// TestShadow: shadow mode needs no controller settings, renders no controller, and its
// ClusterRole is examples/plan/shadow-rbac.yaml's — read-only — bound to its ServiceAccount,
// which the Deployment runs as; the ServiceMonitor then scrapes plan's metrics.
func TestShadow(t *testing.T) {
	objs, err := render(controllerChart, releaseName, "shadow: {enabled: true}", "serviceMonitor: {enabled: true}")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "Deployment" && o.GetName() == releaseName {
			t.Error("shadow mode renders the controller's Deployment too")
		}
	}
	raw, err := os.ReadFile("../../examples/plan/shadow-rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := decodeManifests(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	want := clusterRoleRules(t, shipped, shadowName)
	got := clusterRoleRules(t, objs, shadowName)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("shadow ClusterRole against examples/plan/shadow-rbac.yaml (-want +got):\n%s", d)
	}
	for _, r := range got {
		for _, v := range r.Verbs {
			if v != "get" && v != "list" && v != "watch" {
				t.Errorf("shadow ClusterRole grants %s on %v: not read-only", v, r.Resources)
			}
		}
	}
	b := typed[rbacv1.ClusterRoleBinding](t, find(t, objs, "ClusterRoleBinding", shadowName))
	dep := typed[appsv1.Deployment](t, find(t, objs, "Deployment", shadowName))
	if b.Subjects[0].Name != dep.Spec.Template.Spec.ServiceAccountName || b.RoleRef.Name != shadowName {
		t.Errorf("binding %+v does not bind the Deployment's ServiceAccount %s", b, dep.Spec.Template.Spec.ServiceAccountName)
	}
	sm := find(t, objs, "ServiceMonitor", shadowName)
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if svc := find(t, objs, "Service", shadowName); !selects(sel, svc.GetLabels()) || sel["app.kubernetes.io/name"] != shadowName {
		t.Errorf("ServiceMonitor selects %v, not the shadow Service %v", sel, svc.GetLabels())
	}
	if !selects(dep.Spec.Selector.MatchLabels, typed[corev1.Service](t, find(t, objs, "Service", shadowName)).Spec.Selector) {
		t.Errorf("the Service does not select the shadow pods %v", dep.Spec.Selector.MatchLabels)
	}
}

// TestShadowMatchesKustomize: the chart in shadow mode and deploy/shadow hold the same
// objects, the optional ServiceMonitor included.
func TestShadowMatchesKustomize(t *testing.T) {
	got, err := render(controllerChart, releaseName, "shadow: {enabled: true, image: {repository: nodeplan-plan, tag: latest}}", "serviceMonitor: {enabled: true}")
	if err != nil {
		t.Fatal(err)
	}
	want := renderKustomize(t, "../shadow")
	raw, err := os.ReadFile("../shadow/servicemonitor.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sm, err := decodeManifests(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, sm...)
	if d := cmp.Diff(objectMaps(want), objectMaps(got)); d != "" {
		t.Errorf("chart (shadow.enabled) against deploy/shadow (-kustomize +chart):\n%s", d)
	}
	if k, _ := os.ReadFile("../shadow/kustomization.yaml"); !strings.Contains(string(k), "# - servicemonitor.yaml") {
		t.Error("deploy/shadow/kustomization.yaml no longer offers servicemonitor.yaml")
	}
}
