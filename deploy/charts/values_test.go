package charts

import (
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// valueCase is one value (or a few that act together) set away from its default, and what the
// rendered objects must then show.
type valueCase struct {
	covers []string // the values.yaml paths it exercises
	values string
	check  func(t *testing.T, objs []*unstructured.Unstructured)
}

// freeForm are values.yaml maps passed through whole (Kubernetes' own types): a case covers the
// map, not each key of its default.
var freeForm = map[string]bool{
	"strategy": true, "podSecurityContext": true, "nodeSelector": true, "affinity": true,
	"controller.resources": true, "shadow.resources": true,
}

func deployment(t *testing.T, objs []*unstructured.Unstructured, name string) *appsv1.Deployment {
	t.Helper()
	return typed[appsv1.Deployment](t, find(t, objs, "Deployment", name))
}

func container(t *testing.T, objs []*unstructured.Unstructured) corev1.Container {
	t.Helper()
	return deployment(t, objs, releaseName).Spec.Template.Spec.Containers[0]
}

func env(c corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func wantEnv(t *testing.T, objs []*unstructured.Unstructured, name, want string) {
	t.Helper()
	if got, ok := env(container(t, objs), name); !ok || got != want {
		t.Errorf("env %s = %q (set %v), want %q", name, got, ok, want)
	}
}

func clusterRoleRules(t *testing.T, objs []*unstructured.Unstructured, name string) []rbacv1.PolicyRule {
	t.Helper()
	return typed[rbacv1.ClusterRole](t, find(t, objs, "ClusterRole", name)).Rules
}

func grants(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb)
	})
}

const hash = "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

var valueCases = []valueCase{
	{[]string{"nameOverride"}, "nameOverride: planner", func(t *testing.T, objs []*unstructured.Unstructured) {
		d := deployment(t, objs, "nodeplan-planner")
		if got := d.Spec.Selector.MatchLabels["app.kubernetes.io/name"]; got != "planner" {
			t.Errorf("selector name label %q, want planner", got)
		}
		find(t, objs, "ClusterRole", "nodeplan-planner")
	}},
	{[]string{"fullnameOverride"}, "fullnameOverride: autoscaler", func(t *testing.T, objs []*unstructured.Unstructured) {
		for _, k := range []string{"Deployment", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service", "PodDisruptionBudget"} {
			find(t, objs, k, "autoscaler")
		}
	}},
	{[]string{"additionalLabels"}, "additionalLabels: {team: platform}", func(t *testing.T, objs []*unstructured.Unstructured) {
		for _, o := range objs {
			if o.GetLabels()["team"] != "platform" {
				t.Errorf("%s %s labels %v lack team=platform", o.GetKind(), o.GetName(), o.GetLabels())
			}
		}
	}},
	{[]string{"additionalAnnotations"}, "additionalAnnotations: {owner: sre}", func(t *testing.T, objs []*unstructured.Unstructured) {
		for _, o := range objs {
			if o.GetAnnotations()["owner"] != "sre" {
				t.Errorf("%s %s annotations %v lack owner=sre", o.GetKind(), o.GetName(), o.GetAnnotations())
			}
		}
	}},
	{[]string{"imagePullPolicy"}, "imagePullPolicy: Always", func(t *testing.T, objs []*unstructured.Unstructured) {
		if got := container(t, objs).ImagePullPolicy; got != corev1.PullAlways {
			t.Errorf("imagePullPolicy %q, want Always", got)
		}
	}},
	{[]string{"imagePullSecrets"}, "imagePullSecrets: [{name: regcred}]", func(t *testing.T, objs []*unstructured.Unstructured) {
		if got := deployment(t, objs, releaseName).Spec.Template.Spec.ImagePullSecrets; len(got) != 1 || got[0].Name != "regcred" {
			t.Errorf("imagePullSecrets %v, want [regcred]", got)
		}
	}},
	{[]string{"service.annotations"}, "service: {annotations: {prometheus.io/scrape: \"true\"}}", func(t *testing.T, objs []*unstructured.Unstructured) {
		if got := find(t, objs, "Service", releaseName).GetAnnotations(); got["prometheus.io/scrape"] != "true" {
			t.Errorf("Service annotations %v", got)
		}
	}},
	{[]string{"serviceAccount.annotations"}, "serviceAccount: {annotations: {eks.amazonaws.com/role-arn: arn:aws:iam::1:role/np}}", func(t *testing.T, objs []*unstructured.Unstructured) {
		if got := find(t, objs, "ServiceAccount", releaseName).GetAnnotations(); got["eks.amazonaws.com/role-arn"] != "arn:aws:iam::1:role/np" {
			t.Errorf("ServiceAccount annotations %v", got)
		}
	}},
	{[]string{"serviceAccount.name"}, "serviceAccount: {name: np-sa}", func(t *testing.T, objs []*unstructured.Unstructured) {
		find(t, objs, "ServiceAccount", "np-sa")
		if got := deployment(t, objs, releaseName).Spec.Template.Spec.ServiceAccountName; got != "np-sa" {
			t.Errorf("serviceAccountName %q, want np-sa", got)
		}
		for _, k := range []string{"ClusterRoleBinding", "RoleBinding"} {
			b := typed[rbacv1.RoleBinding](t, find(t, objs, k, releaseName))
			if b.Subjects[0].Name != "np-sa" || b.Subjects[0].Namespace != namespace {
				t.Errorf("%s subjects %v, want np-sa in %s", k, b.Subjects, namespace)
			}
		}
	}},
	{[]string{"serviceAccount.create"}, "serviceAccount: {create: false, name: existing}", func(t *testing.T, objs []*unstructured.Unstructured) {
		for _, o := range objs {
			if o.GetKind() == "ServiceAccount" {
				t.Errorf("serviceAccount.create false yet a ServiceAccount %s", o.GetName())
			}
		}
		if got := deployment(t, objs, releaseName).Spec.Template.Spec.ServiceAccountName; got != "existing" {
			t.Errorf("serviceAccountName %q, want existing", got)
		}
	}},
	{[]string{"additionalClusterRoleRules"}, "additionalClusterRoleRules: [{apiGroups: [\"\"], resources: [configmaps], verbs: [get]}]", func(t *testing.T, objs []*unstructured.Unstructured) {
		if !grants(clusterRoleRules(t, objs, releaseName), "", "configmaps", "get") {
			t.Error("the additional rule is not in the ClusterRole")
		}
	}},
	{[]string{"serviceMonitor.enabled", "serviceMonitor.additionalLabels", "serviceMonitor.endpointConfig"},
		"serviceMonitor: {enabled: true, additionalLabels: {release: prom}, endpointConfig: {interval: 15s}}",
		func(t *testing.T, objs []*unstructured.Unstructured) {
			sm := find(t, objs, "ServiceMonitor", releaseName)
			if sm.GetLabels()["release"] != "prom" {
				t.Errorf("ServiceMonitor labels %v lack release=prom", sm.GetLabels())
			}
			eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
			want := []any{map[string]any{"port": "http-metrics", "path": "/metrics", "interval": "15s"}}
			if d := cmp.Diff(want, eps); d != "" {
				t.Errorf("ServiceMonitor endpoints (-want +got):\n%s", d)
			}
			sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
			svc := find(t, objs, "Service", releaseName)
			if !selects(sel, svc.GetLabels()) || len(sel) == 0 {
				t.Errorf("ServiceMonitor selects %v, which the Service's labels %v do not match", sel, svc.GetLabels())
			}
		}},
	{[]string{"replicas"}, "replicas: 3", func(t *testing.T, objs []*unstructured.Unstructured) {
		if got := deployment(t, objs, releaseName).Spec.Replicas; got == nil || *got != 3 {
			t.Errorf("replicas %v, want 3", got)
		}
	}},
	{[]string{"revisionHistoryLimit"}, "revisionHistoryLimit: 4", func(t *testing.T, objs []*unstructured.Unstructured) {
		if got := deployment(t, objs, releaseName).Spec.RevisionHistoryLimit; got == nil || *got != 4 {
			t.Errorf("revisionHistoryLimit %v, want 4", got)
		}
	}},
	{[]string{"strategy"}, "strategy: {type: Recreate, rollingUpdate: null}", func(t *testing.T, objs []*unstructured.Unstructured) {
		if got := deployment(t, objs, releaseName).Spec.Strategy; got.Type != appsv1.RecreateDeploymentStrategyType || got.RollingUpdate != nil {
			t.Errorf("strategy %+v, want Recreate", got)
		}
	}},
	{[]string{"podLabels", "podAnnotations"}, "{podLabels: {tier: system}, podAnnotations: {ad.datadoghq.com/x: checks}}", func(t *testing.T, objs []*unstructured.Unstructured) {
		m := deployment(t, objs, releaseName).Spec.Template.ObjectMeta
		if m.Labels["tier"] != "system" || m.Annotations["ad.datadoghq.com/x"] != "checks" {
			t.Errorf("pod template metadata %+v", m)
		}
	}},
	{[]string{"podDisruptionBudget.name", "podDisruptionBudget.maxUnavailable"}, "podDisruptionBudget: {name: np-pdb, maxUnavailable: 0}", func(t *testing.T, objs []*unstructured.Unstructured) {
		p := typed[policyv1.PodDisruptionBudget](t, find(t, objs, "PodDisruptionBudget", "np-pdb"))
		if p.Spec.MaxUnavailable == nil || p.Spec.MaxUnavailable.IntValue() != 0 || p.Spec.MaxUnavailable.String() != "0" {
			t.Errorf("maxUnavailable %v, want 0", p.Spec.MaxUnavailable)
		}
	}},
	{[]string{"podSecurityContext"}, "podSecurityContext: {fsGroup: 1000}", func(t *testing.T, objs []*unstructured.Unstructured) {
		sc := deployment(t, objs, releaseName).Spec.Template.Spec.SecurityContext
		if sc == nil || sc.FSGroup == nil || *sc.FSGroup != 1000 {
			t.Errorf("pod securityContext %+v, want fsGroup 1000", sc)
		}
	}},
	{[]string{"priorityClassName", "terminationGracePeriodSeconds"}, "{priorityClassName: high, terminationGracePeriodSeconds: 90}", func(t *testing.T, objs []*unstructured.Unstructured) {
		s := deployment(t, objs, releaseName).Spec.Template.Spec
		if s.PriorityClassName != "high" || s.TerminationGracePeriodSeconds == nil || *s.TerminationGracePeriodSeconds != 90 {
			t.Errorf("priorityClassName %q, terminationGracePeriodSeconds %v", s.PriorityClassName, s.TerminationGracePeriodSeconds)
		}
	}},
	{[]string{"nodeSelector", "tolerations"}, "{nodeSelector: {role: system}, tolerations: [{key: dedicated, operator: Equal, value: system, effect: NoSchedule}]}", func(t *testing.T, objs []*unstructured.Unstructured) {
		s := deployment(t, objs, releaseName).Spec.Template.Spec
		// Helm merges maps: the default's kubernetes.io/os stays (a user drops it with null).
		if d := cmp.Diff(map[string]string{"kubernetes.io/os": "linux", "role": "system"}, s.NodeSelector); d != "" {
			t.Errorf("nodeSelector (-want +got):\n%s", d)
		}
		want := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "system", Effect: corev1.TaintEffectNoSchedule}}
		if d := cmp.Diff(want, s.Tolerations); d != "" {
			t.Errorf("tolerations (-want +got):\n%s", d)
		}
	}},
	{[]string{"affinity"}, `
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 10
        podAffinityTerm: {topologyKey: topology.kubernetes.io/zone}
      - weight: 5
        podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {team: web}}}
`, func(t *testing.T, objs []*unstructured.Unstructured) {
		a := deployment(t, objs, releaseName).Spec.Template.Spec.Affinity
		// Helm merges maps: the default's nodeAffinity and required anti-affinity stay.
		if a.NodeAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
			t.Errorf("affinity %+v lost the defaults", a)
		}
		pref := a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		if len(pref) != 2 {
			t.Fatalf("preferred terms %+v", pref)
		}
		if got := pref[0].PodAffinityTerm.LabelSelector; got == nil || got.MatchLabels["app.kubernetes.io/instance"] != releaseName {
			t.Errorf("a term without a selector got %v, want the pods' selector labels", got)
		}
		if got := pref[1].PodAffinityTerm.LabelSelector.MatchLabels; !cmp.Equal(got, map[string]string{"team": "web"}) {
			t.Errorf("a term's own selector became %v", got)
		}
	}},
	{[]string{"topologySpreadConstraints"}, "topologySpreadConstraints: [{maxSkew: 2, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}]", func(t *testing.T, objs []*unstructured.Unstructured) {
		c := deployment(t, objs, releaseName).Spec.Template.Spec.TopologySpreadConstraints
		if len(c) != 1 || c[0].MaxSkew != 2 || c[0].LabelSelector == nil || c[0].LabelSelector.MatchLabels["app.kubernetes.io/name"] != "nodeplan" {
			t.Errorf("topologySpreadConstraints %+v", c)
		}
	}},
	{[]string{"controller.image.repository", "controller.image.tag"}, "controller: {image: {repository: reg.example/np, tag: v1.2.3}}", func(t *testing.T, objs []*unstructured.Unstructured) {
		if got := container(t, objs).Image; got != "reg.example/np:v1.2.3" {
			t.Errorf("image %q", got)
		}
	}},
	{[]string{"controller.image.digest"}, "controller: {image: {digest: \"" + hash + "\"}}", func(t *testing.T, objs []*unstructured.Unstructured) {
		if got, want := container(t, objs).Image, "ghcr.io/nodeplan/controller:"+appVersion(t)+"@"+hash; got != want {
			t.Errorf("image %q, want %q", got, want)
		}
	}},
	{[]string{"controller.extraArgs"}, "controller: {extraArgs: [--adopt]}", func(t *testing.T, objs []*unstructured.Unstructured) {
		if got := container(t, objs).Args; !cmp.Equal(got, []string{"--capacity-buffers", "--adopt"}) {
			t.Errorf("args %q", got)
		}
	}},
	{[]string{"controller.env", "controller.envFrom"}, "controller: {env: [{name: AWS_REGION, value: eu-west-1}], envFrom: [{configMapRef: {name: proxy}}]}", func(t *testing.T, objs []*unstructured.Unstructured) {
		wantEnv(t, objs, "AWS_REGION", "eu-west-1")
		if got := container(t, objs).EnvFrom; len(got) != 1 || got[0].ConfigMapRef.Name != "proxy" {
			t.Errorf("envFrom %+v", got)
		}
	}},
	{[]string{"controller.resources"}, "controller: {resources: {requests: {cpu: \"1\", memory: 1Gi}, limits: null}}", func(t *testing.T, objs []*unstructured.Unstructured) {
		r := container(t, objs).Resources
		if r.Requests.Cpu().String() != "1" || r.Requests.Memory().String() != "1Gi" || len(r.Limits) != 0 {
			t.Errorf("resources %+v", r)
		}
	}},
	{[]string{"controller.metrics.port", "controller.healthProbe.port"}, "controller: {metrics: {port: 9000}, healthProbe: {port: 9001}}", func(t *testing.T, objs []*unstructured.Unstructured) {
		wantEnv(t, objs, "METRICS_PORT", "9000")
		wantEnv(t, objs, "HEALTH_PROBE_PORT", "9001")
		ports := container(t, objs).Ports
		if len(ports) != 2 || ports[0].ContainerPort != 9000 || ports[1].ContainerPort != 9001 {
			t.Errorf("container ports %+v", ports)
		}
		svc := typed[corev1.Service](t, find(t, objs, "Service", releaseName))
		if svc.Spec.Ports[0].Port != 9000 {
			t.Errorf("Service port %d, want 9000", svc.Spec.Ports[0].Port)
		}
	}},
	{[]string{"logLevel"}, "logLevel: debug", func(t *testing.T, objs []*unstructured.Unstructured) { wantEnv(t, objs, "LOG_LEVEL", "debug") }},
	{[]string{"settings.clusterName", "settings.clusterEndpoint"}, "settings: {clusterName: prod, clusterEndpoint: \"https://10.0.0.1:6443\"}", func(t *testing.T, objs []*unstructured.Unstructured) {
		wantEnv(t, objs, "CLUSTER_NAME", "prod")
		wantEnv(t, objs, "CLUSTER_ENDPOINT", "https://10.0.0.1:6443")
	}},
	{[]string{"settings.interruptionQueue"}, "settings: {interruptionQueue: https://sqs.us-east-1.amazonaws.com/1/prod}", func(t *testing.T, objs []*unstructured.Unstructured) {
		wantEnv(t, objs, "INTERRUPTION_QUEUE", "https://sqs.us-east-1.amazonaws.com/1/prod")
	}},
	{[]string{"settings.kubeClientQPS", "settings.kubeClientBurst"}, "settings: {kubeClientQPS: 50, kubeClientBurst: 75}", func(t *testing.T, objs []*unstructured.Unstructured) {
		wantEnv(t, objs, "KUBE_CLIENT_QPS", "50")
		wantEnv(t, objs, "KUBE_CLIENT_BURST", "75")
	}},
	{[]string{"settings.nodeCost"}, "settings: {nodeCost: 0.005}", func(t *testing.T, objs []*unstructured.Unstructured) {
		if got := container(t, objs).Args; !cmp.Equal(got, []string{"--capacity-buffers", "--node-cost=0.005"}) {
			t.Errorf("args %q", got)
		}
	}},
	{[]string{"settings.featureGates.capacityBuffer"}, "settings: {featureGates: {capacityBuffer: false}}", func(t *testing.T, objs []*unstructured.Unstructured) {
		if got := container(t, objs).Args; len(got) != 0 {
			t.Errorf("args %q, want none", got)
		}
		rules := clusterRoleRules(t, objs, releaseName)
		for _, r := range []struct{ group, resource string }{{"autoscaling.x-k8s.io", "capacitybuffers"}, {"", "podtemplates"}, {"apps", "deployments"}} {
			if grants(rules, r.group, r.resource, "list") {
				t.Errorf("with the gate off the ClusterRole still lists %s", r.resource)
			}
		}
		if !grants(rules, "karpenter.sh", "nodeclaims", "create") {
			t.Error("the ClusterRole lost the NodeClaim rules")
		}
	}},
	{[]string{"kubeadm.enabled", "kubeadm.caCertHashes"}, "kubeadm: {enabled: true, caCertHashes: [" + hash + ", " + hash + "]}", func(t *testing.T, objs []*unstructured.Unstructured) {
		if got := container(t, objs).Args; !cmp.Equal(got, []string{"--capacity-buffers", "--kubeadm-ca-cert-hash=" + hash + "," + hash}) {
			t.Errorf("args %q", got)
		}
		role := typed[rbacv1.Role](t, find(t, objs, "Role", "nodeplan-bootstrap-tokens"))
		want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "delete"}}}
		if d := cmp.Diff(want, role.Rules); d != "" || role.Namespace != "kube-system" {
			t.Errorf("bootstrap token Role in %s (-want +got):\n%s", role.Namespace, d)
		}
		find(t, objs, "RoleBinding", "nodeplan-bootstrap-tokens")
	}},
}

// selects reports whether labels have every key of sel with its value.
func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestValues renders the chart with each value changed and checks its effect.
func TestValues(t *testing.T) {
	for _, c := range valueCases {
		t.Run(strings.Join(c.covers, ","), func(t *testing.T) { c.check(t, mustRender(t, c.values)) })
	}
}

// TestDefaults: the defaults alone (with the two required settings) render the controller as
// deploy/kustomize has it; values off by default render nothing.
func TestDefaults(t *testing.T) {
	objs := mustRender(t)
	want := []string{
		"ClusterRole//nodeplan", "ClusterRoleBinding//nodeplan", "Deployment/kube-system/nodeplan",
		"PodDisruptionBudget/kube-system/nodeplan", "Role/kube-system/nodeplan", "RoleBinding/kube-system/nodeplan",
		"Service/kube-system/nodeplan", "ServiceAccount/kube-system/nodeplan",
	}
	if d := cmp.Diff(want, names(objs)); d != "" {
		t.Errorf("objects (-want +got):\n%s", d)
	}
	c := container(t, objs)
	if got := c.Args; !cmp.Equal(got, []string{"--capacity-buffers"}) {
		t.Errorf("args %q, want --capacity-buffers", got)
	}
	if c.Image != "ghcr.io/nodeplan/controller:"+appVersion(t) {
		t.Errorf("image %q, want the chart's appVersion", c.Image)
	}
	wantEnv(t, objs, "INTERRUPTION_QUEUE", "")
	wantEnv(t, objs, "LOG_LEVEL", "info")
	wantEnv(t, objs, "KUBE_CLIENT_QPS", "200")
}

// appVersion is the controller chart's appVersion (RELEASING.md sets it to the release).
func appVersion(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(controllerChart + "/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(raw, &c); err != nil || c.AppVersion == "" {
		t.Fatalf("Chart.yaml appVersion: %q, %v", c.AppVersion, err)
	}
	return c.AppVersion
}

// TestEveryValueHasACase: each value values.yaml documents is changed by some case of
// TestValues, so a new value cannot ship untested.
func TestEveryValueHasACase(t *testing.T) {
	raw, err := os.ReadFile(controllerChart + "/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var vals map[string]any
	if err := yaml.Unmarshal(raw, &vals); err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, c := range valueCases {
		for _, p := range c.covers {
			covered[p] = true
		}
	}
	var missing []string
	for _, p := range leaves("", vals) {
		if !covered[p] {
			missing = append(missing, p)
		}
		delete(covered, p)
	}
	if len(missing) > 0 {
		t.Errorf("values with no case in TestValues: %v", missing)
	}
	var stale []string
	for p := range covered {
		stale = append(stale, p)
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("cases cover values values.yaml does not have: %v", stale)
	}
}

// leaves lists the dotted paths of vals' settings: a non-empty map is descended into unless it
// is free-form.
func leaves(prefix string, vals map[string]any) []string {
	var out []string
	for k, v := range vals {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if m, ok := v.(map[string]any); ok && len(m) > 0 && !freeForm[p] {
			out = append(out, leaves(p, m)...)
			continue
		}
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
