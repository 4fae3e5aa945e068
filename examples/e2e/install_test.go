package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/examples/e2e/controlplane"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
	"github.com/nodeplan/nodeplan/scheduling"
)

// install is one way to install the controller, as shipped: its CRDs, kept when the
// controller is uninstalled, and the controller's own objects.
type install struct {
	name             string
	crds, controller func(t *testing.T) []*unstructured.Unstructured
	// kubeadm: the controller mints a bootstrap token per launch.
	kubeadm bool
}

// kustomization renders a kustomize directory, as `kubectl apply -k` does.
func kustomization(dir string) func(*testing.T) []*unstructured.Unstructured {
	return func(t *testing.T) []*unstructured.Unstructured { return renderKustomize(t, dir) }
}

// helmTemplate reads a chart as `helm template` renders it: deploy/charts/testdata, which
// deploy/charts' TestGolden renders with Helm's library and keeps equal to the charts (Helm is
// not a dependency of this module).
func helmTemplate(file string) func(*testing.T) []*unstructured.Unstructured {
	return func(t *testing.T) []*unstructured.Unstructured {
		t.Helper()
		path := filepath.Join("../../deploy/charts/testdata", file)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("the rendered chart: %v", err)
		}
		objs := decodeYAML(t, b)
		if len(objs) == 0 {
			t.Fatalf("%s holds no objects", path)
		}
		return objs
	}
}

// TestInstall installs nodeplan as shipped on a real kube-apiserver that authorizes with
// Node,RBAC — the kustomize base and the Helm charts (each with its CRDs apart) — and runs the
// controller as its ServiceAccount (a TokenRequest token) the way the Deployment runs it:
// leader election on the Role's Lease, the cluster's NodePools and EC2NodeClasses, events,
// probes and metrics. The inflate scale-up, a spot interruption and consolidation work; every
// API call the controller made was allowed; every rule the Role and ClusterRole grant was used;
// and what they do not grant is refused. Uninstalling the controller then deletes its objects
// and its access, and leaves the CRDs, the NodePools and the NodeClaims and nodes it launched.
//
// On kubeadm (deploy/kubeadm, the chart's kubeadm.enabled) the controller also mints a
// bootstrap token per launch: at launch it authenticates to the API server as a bootstrapper
// (kubeadm's group), its Secret expires within 20 minutes, and once the node registered the
// Secret is gone and the token refused.
func TestInstall(t *testing.T) {
	crds, chartCRDs := kustomization("../../deploy/kustomize/crds"), helmTemplate("nodeplan-crd.yaml")
	for _, in := range []install{
		{"eks", crds, kustomization("../../deploy/kustomize"), false},
		{"kubeadm", crds, kustomization("../../deploy/kubeadm"), true},
		{"chart", chartCRDs, helmTemplate("nodeplan.yaml"), false},
		{"chart-kubeadm", chartCRDs, helmTemplate("nodeplan-kubeadm.yaml"), true},
	} {
		t.Run(in.name, func(t *testing.T) { testInstall(t, in) })
	}
}

func testInstall(t *testing.T, in install) {
	cp := startControlPlane(t)
	ctx := context.Background()
	admin := cp.Config

	// Apply the CRDs, then the controller, as `kubectl apply -k deploy/kustomize/crds` and
	// `kubectl apply -k deploy/kustomize` (or `helm install` of each chart) would.
	var crds [][]byte
	var crdNames []string
	for _, o := range in.crds(t) {
		if o.GetKind() != "CustomResourceDefinition" {
			t.Fatalf("the CRDs' install holds %s %s", o.GetKind(), o.GetName())
		}
		b, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		crds = append(crds, b)
		crdNames = append(crdNames, o.GetName())
	}
	objs := in.controller(t)
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			t.Fatalf("the controller's install holds CRD %s: uninstalling it would delete every %s", o.GetName(), o.GetName())
		}
	}
	if err := controlplane.InstallCRDs(ctx, admin, crds...); err != nil {
		t.Fatal(err)
	}
	applied := applyObjects(t, admin, objs)
	t.Cleanup(func() { deleteObjects(admin, applied) })
	sa := findObject(t, objs, "ServiceAccount")
	roles := rulesOf(t, objs)

	// The ServiceAccount's token, as the kubelet would mount it in the controller's pod.
	tr, err := cp.Client.CoreV1().ServiceAccounts(sa.GetNamespace()).CreateToken(ctx, sa.GetName(), &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for ServiceAccount %s/%s: %v", sa.GetNamespace(), sa.GetName(), err)
	}
	asSA := func(wrap func(http.RoundTripper) http.RoundTripper) *rest.Config {
		return &rest.Config{Host: admin.Host, BearerToken: tr.Status.Token, TLSClientConfig: admin.TLSClientConfig,
			QPS: 200, Burst: 300, WrapTransport: wrap}
	}
	probe := kubernetes.NewForConfigOrDie(asSA(nil))
	review, err := probe.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if want := "system:serviceaccount:" + sa.GetNamespace() + ":" + sa.GetName(); err != nil || review.Status.UserInfo.Username != want {
		t.Fatalf("the token authenticates as %v (%v), want %s", review, err, want)
	}

	// What the role lacks is refused.
	t.Run("refused", func(t *testing.T) {
		for what, call := range map[string]func() error{
			"list secrets in kube-system": func() error {
				_, err := probe.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{})
				return err
			},
			"create a node": func() error {
				_, err := probe.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "forged"}}, metav1.CreateOptions{})
				return err
			},
			"delete a namespace": func() error { return probe.CoreV1().Namespaces().Delete(ctx, "default", metav1.DeleteOptions{}) },
			"delete its own Deployment": func() error {
				return probe.AppsV1().Deployments(sa.GetNamespace()).Delete(ctx, "nodeplan", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
			},
			"bind pods": func() error {
				return probe.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "x"},
					Target: corev1.ObjectReference{Kind: "Node", Name: "y"}}, metav1.CreateOptions{})
			},
			"read another Lease": func() error {
				_, err := probe.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, "kube-scheduler", metav1.GetOptions{})
				return err
			},
		} {
			if err := call(); !apierrors.IsForbidden(err) {
				t.Errorf("%s as the ServiceAccount: err = %v, want Forbidden", what, err)
			}
		}
	})

	// The cluster's NodePool and EC2NodeClass, as the user applies them.
	dynAdmin := dynamic.NewForConfigOrDie(admin)
	// Named after the install, so no other test's objects are confused with these.
	pool := "install-" + in.name
	y := bytes.Replace(sim.NodePoolsYAML(), []byte("consolidateAfter: 30s"), []byte("consolidateAfter: 5s"), 1)
	y = bytes.ReplaceAll(y, []byte("name: default"), []byte("name: "+pool))
	poolObjs := decodeYAML(t, y)
	for _, o := range poolObjs {
		gvr := controller.NodePoolGVR
		if o.GetKind() == "EC2NodeClass" {
			gvr = controller.EC2NodeClassGVR
		}
		if _, err := dynAdmin.Resource(gvr).Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		t.Cleanup(func() {
			ri := dynAdmin.Resource(gvr)
			_ = ri.Delete(context.Background(), o.GetName(), metav1.DeleteOptions{})
			_ = controlplane.WaitFor(context.Background(), 30*time.Second, "deleted", func(ctx context.Context) (bool, error) {
				_, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
				return apierrors.IsNotFound(err), nil
			})
		})
	}

	// The simulated cloud and kubelets; kube-scheduler binds, as the admin.
	cloud := &cloudprovider.Memory{Catalog: sim.Catalog()}
	spy := &tokenSpy{Memory: cloud, t: t, admin: cp.Client, bootstrapper: admin}
	var provider cloudprovider.Provider = cloud
	var tokens *controller.BootstrapTokens
	if in.kubeadm {
		provider, tokens = spy, &controller.BootstrapTokens{}
	}
	kubelet := &sim.Kubelet{Client: cp.Client, Provider: cloud, BootTime: 2 * time.Second, ReadyTime: time.Second}
	deps := &sim.Deployments{Client: cp.Client}
	runner := &sim.Scheduler{Client: cp.Client, NoBind: true}
	simCtx, stopSim := context.WithCancel(ctx)
	var simWG sync.WaitGroup
	simWG.Go(func() {
		for simCtx.Err() == nil {
			now := time.Now()
			for _, step := range []func(context.Context, time.Time) error{deps.Step, kubelet.Step, runner.Step} {
				if err := step(simCtx, now); err != nil && simCtx.Err() == nil {
					t.Logf("simulated cluster: %v", err)
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	t.Cleanup(func() { stopSim(); simWG.Wait() })
	ns := "install-" + in.name
	dep := inflate()
	dep.Namespace = ns
	ctr := &dep.Spec.Template.Spec.Containers[0]
	ctr.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: ctr.Resources.Requests[corev1.ResourceCPU]}
	if err := deps.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}

	// This run's NodeClaims carry its installation; any left when the test ends are removed, so
	// the next test on the shared control plane starts without them.
	installation := "install-" + in.name
	t.Cleanup(func() { deleteClaims(dynAdmin, installation) })

	// The controller, wired as the Deployment runs it, every request recorded.
	calls := &callRecorder{}
	saCfg := asSA(calls.wrap)
	client := kubernetes.NewForConfigOrDie(saCfg)
	dyn := dynamic.NewForConfigOrDie(saCfg)
	logs := &logs{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "nodeplan"})
	health := &controller.Health{}
	health.SetStarted()
	probes := httptest.NewServer(health.Handler())
	defer probes.Close()
	metrics := controller.NewMetrics()
	pools := &onlyPools{ClusterNodePools: &controller.ClusterNodePools{Dynamic: dyn, Logger: log, Recorder: recorder}, names: []string{pool}}
	notReadyBeforeSync := make(chan string, 1)
	le := &controller.LeaderElection{Client: client, Namespace: metav1.NamespaceSystem, Name: leaseName(t, objs),
		// Karpenter's lease timings: a race-instrumented control plane on a loaded machine can
		// take seconds to answer a renewal.
		Identity: "install-" + in.name, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second, Logger: log}
	// The next install on the shared control plane starts without the Lease, as a fresh cluster.
	t.Cleanup(func() {
		_ = cp.Client.CoordinationV1().Leases(le.Namespace).Delete(context.Background(), le.Name, metav1.DeleteOptions{})
	})
	ctrlCtx, stopCtrl := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := le.Run(ctrlCtx, func(ctx context.Context) {
			health.SetLeading(true)
			defer health.SetLeading(false)
			code, body := get(t, probes.URL+"/readyz")
			select { // the first term's answer; a later term (the Lease lost under load) adds none
			case notReadyBeforeSync <- fmt.Sprintf("%d %s", code, body):
			default:
			}
			c := &controller.Controller{Client: client, Dynamic: dyn, Provider: provider, NodePools: pools, Solve: scheduling.Solve,
				BootstrapTokens: tokens, Installation: installation,
				// As the shipped Deployment runs it: its ClusterRole grants what CapacityBuffers
				// need, and every grant must be used.
				CapacityBuffers: slices.Contains(shippedArgs(t, objs), "--capacity-buffers"),
				Logger:          log, Recorder: recorder, Metrics: metrics, Health: health,
				DisruptionInterval: 2 * time.Second, InterruptionInterval: time.Second, ReconcileInterval: 5 * time.Second,
				EvictionRetry: time.Second, Timeouts: controller.Timeouts{Collect: 10 * time.Second}}
			if err := c.Run(ctx); err != nil {
				t.Errorf("controller: Run() = %v", err)
			}
		})
		if err != nil {
			t.Errorf("leader election: %v", err)
		}
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			stopCtrl()
			<-done
		}
	}
	t.Cleanup(stop)
	defer func() {
		if t.Failed() {
			t.Logf("controller logs (tail):\n%s", tail(logs.String(), 80))
		}
	}()

	e := &env{t: t, client: cp.Client, cloud: cloud, deps: deps, logs: logs}
	t.Run("probes", func(t *testing.T) {
		select {
		case got := <-notReadyBeforeSync:
			if !strings.HasPrefix(got, "503 ") || !strings.Contains(got, "caches") {
				t.Errorf("/readyz before the caches synced = %q, want 503 naming the caches", got)
			}
		case <-time.After(time.Minute):
			t.Fatal("no leader within a minute")
		}
		waitFor(t, time.Minute, "/readyz 200 once the caches synced", func() bool {
			code, _ := get(t, probes.URL+"/readyz")
			return code == http.StatusOK
		})
		if code, _ := get(t, probes.URL+"/healthz"); code != http.StatusOK {
			t.Errorf("/healthz = %d, want 200", code)
		}
	})
	t.Run("scale up", func(t *testing.T) {
		scaleIn(t, deps, ns, 5)
		waitRunningIn(t, e, ns, 5)
		nodes := float64(len(e.instances(t)))
		// Read at scrape time from the controller's caches, which follow the API server: poll.
		waitFor(t, 30*time.Second, "the state gauges showing the five pods", func() bool {
			v, _ := seriesSum(t, metrics, "karpenter_nodes_total_pod_limits", map[string]string{"nodepool": pool, "resource_type": "cpu"})
			return v == 5
		})
		for _, c := range []struct {
			name   string
			labels map[string]string
			ok     func(float64) bool
			want   string
		}{
			{"karpenter_nodes_allocatable", map[string]string{"nodepool": pool, "resource_type": "cpu", "managed": "true"}, atLeast(7 * nodes), ">= 7 a node"},
			{"karpenter_nodes_total_pod_requests", map[string]string{"nodepool": pool, "resource_type": "cpu"}, exactly(5), "5 (five 1-CPU pods)"},
			{"karpenter_nodes_total_pod_limits", map[string]string{"nodepool": pool, "resource_type": "cpu"}, exactly(5), "5"},
			{"karpenter_nodepools_usage", map[string]string{"nodepool": pool, "resource_type": "nodes"}, exactly(nodes), "the nodes launched"},
			{"karpenter_pods_state", map[string]string{"namespace": ns, "nodepool": pool, "scheduled": "true"}, exactly(5), "5 series"},
			{"karpenter_cluster_state_node_count", nil, atLeast(nodes), ">= the nodes launched"},
		} {
			if got, n := seriesSum(t, metrics, c.name, c.labels); n == 0 || !c.ok(got) {
				t.Errorf("%s%v = %v over %d series, want %s", c.name, c.labels, got, n, c.want)
			}
		}
	})
	if in.kubeadm {
		t.Run("bootstrap tokens", func(t *testing.T) {
			launches := spy.seen()
			if len(launches) == 0 {
				t.Fatal("no launch got a bootstrap token")
			}
			for _, l := range launches {
				if l.err != nil {
					t.Errorf("at launch: %v", l.err)
				}
				waitFor(t, time.Minute, "the token's Secret deleted and the token refused once the node registered", func() bool {
					_, err := cp.Client.CoreV1().Secrets(metav1.NamespaceSystem).Get(context.Background(), l.secret, metav1.GetOptions{})
					_, aerr := whoAmI(admin, l.token)
					return apierrors.IsNotFound(err) && apierrors.IsUnauthorized(aerr)
				})
			}
		})
	}
	t.Run("spot interruption drains and replaces", func(t *testing.T) {
		insts := e.instances(t)
		if len(insts) == 0 {
			t.Fatal("no instance to interrupt: the scale-up launched none")
		}
		victim := insts[0].Status.ProviderID
		if err := cloud.Interrupt(victim, cloudprovider.InterruptionSpot, time.Now().Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 90*time.Second, "pods on a replacement and the interrupted instance gone", func() bool {
			return runningIn(t, e, ns) == 5 && !slices.ContainsFunc(e.instances(t), func(c *nodeplan.NodeClaim) bool {
				return c.Status.ProviderID == victim
			})
		})
	})
	t.Run("scale down consolidates", func(t *testing.T) {
		scaleIn(t, deps, ns, 0)
		e.waitEmpty(t)
		waitFor(t, time.Minute, "every NodeClaim of the run deleted", func() bool { return len(claimsOf(dynAdmin, installation)) == 0 })
	})
	t.Run("metrics", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			labels map[string]string
			ok     func(float64) bool
			want   string
		}{
			{"karpenter_nodeclaims_created_total", map[string]string{"nodepool": pool, "reason": "provisioned", "min_values_relaxed": "false"}, atLeast(1), ">= 1"},
			{"karpenter_nodeclaims_disrupted_total", map[string]string{"nodepool": pool, "reason": "spot_interrupted"}, exactly(1), "1"},
			{"karpenter_nodeclaims_terminated_total", map[string]string{"nodepool": pool}, atLeast(2), ">= 2 (the interrupted node, the consolidated ones)"},
			{"karpenter_nodes_created_total", map[string]string{"nodepool": pool}, atLeast(2), ">= 2"},
			{"karpenter_nodes_terminated_total", map[string]string{"nodepool": pool}, atLeast(2), ">= 2"},
			{"karpenter_voluntary_disruption_decisions_total", map[string]string{"decision": "delete"}, atLeast(1), ">= 1"},
			{"karpenter_voluntary_disruption_decisions_by_nodepool_total", map[string]string{"nodepool": pool, "decision": "delete"}, atLeast(1), ">= 1"},
			{"karpenter_scheduler_scheduling_duration_seconds", map[string]string{"controller": "provisioner"}, atLeast(1), ">= 1 observation"},
			{"karpenter_voluntary_disruption_decision_evaluation_duration_seconds", nil, atLeast(1), ">= 1 observation"},
			{"karpenter_cloudprovider_duration_seconds", map[string]string{"method": "Create", "provider": "aws"}, atLeast(2), ">= 2 observations"},
			{"karpenter_cloudprovider_errors_total", map[string]string{"method": "Delete", "error": "NodeClaimNotFoundError"}, atLeast(1), ">= 1"},
			{"karpenter_nodepools_limit", map[string]string{"nodepool": pool, "resource_type": "cpu"}, exactly(100), "100 (spec.limits.cpu)"},
			{"karpenter_cluster_state_synced", nil, exactly(1), "1"},
			{"karpenter_build_info", nil, exactly(1), "1"},
		} {
			if got, n := seriesSum(t, metrics, c.name, c.labels); n == 0 || !c.ok(got) {
				t.Errorf("%s%v = %v over %d series, want %s", c.name, c.labels, got, n, c.want)
			}
		}
	})
	// Nodes for the uninstall to leave behind: the controller launches for one pod again.
	t.Run("scale up before the uninstall", func(t *testing.T) {
		scaleIn(t, deps, ns, 1)
		waitRunningIn(t, e, ns, 1)
	})
	stop()

	t.Run("least privilege", func(t *testing.T) {
		used := calls.used()
		for _, c := range used {
			if c.refused {
				t.Errorf("the controller was refused %s", c)
			}
			if !roles.allows(c) {
				t.Errorf("the controller called %s, which no rule of the shipped roles grants", c)
			}
		}
		got := map[apiCall]bool{}
		for _, c := range used {
			got[c.call] = true
		}
		for _, g := range roles.granted() {
			if !got[g] && !notExercised[g] {
				t.Errorf("the shipped roles grant %s, which the controller never called", g)
			}
		}
		for g := range notExercised {
			if !slices.Contains(roles.granted(), g) {
				t.Errorf("%s is listed as not exercised but not granted: take it off notExercised", g)
			}
		}
		if t.Failed() {
			var b strings.Builder
			for k := range got {
				fmt.Fprintf(&b, "  %s\n", k)
			}
			t.Logf("calls the controller made:\n%s", b.String())
		}
	})

	// `helm uninstall nodeplan` (or `kubectl delete -k deploy/kustomize`): the controller's
	// objects go, and its access with them; the CRDs are another install's, so the NodePools
	// and the NodeClaims stay, and the nodes with their pods.
	t.Run("uninstall leaves NodePools and NodeClaims", func(t *testing.T) {
		claims := claimsOf(dynAdmin, installation)
		nodes := nodesOf(t, cp.Client, pool)
		if len(claims) == 0 || len(nodes) == 0 {
			t.Fatalf("%d NodeClaims and %d nodes before the uninstall, want some", len(claims), len(nodes))
		}
		defer func() { // the next test on the shared control plane starts without them
			scaleIn(t, deps, ns, 0)
			waitRunningIn(t, e, ns, 0)
			for _, n := range nodes { // without the controller's termination finalizer
				if node, err := cp.Client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{}); err == nil {
					node.Finalizers = nil
					_, _ = cp.Client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
				}
				_ = cp.Client.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{})
				waitFor(t, 30*time.Second, "node "+n+" deleted", func() bool {
					_, err := cp.Client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
					return apierrors.IsNotFound(err)
				})
			}
			for _, inst := range e.instances(t) {
				_ = cloud.Delete(ctx, inst.Status.ProviderID)
			}
			for _, l := range spy.seen() {
				_ = cp.Client.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, l.secret, metav1.DeleteOptions{})
			}
		}()
		uninstall(t, applied)
		waitFor(t, 30*time.Second, "the ServiceAccount's token refused once the ServiceAccount is deleted", func() bool {
			_, err := whoAmI(admin, tr.Status.Token)
			return apierrors.IsUnauthorized(err)
		})
		crdRes := dynAdmin.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
		for _, name := range crdNames {
			kept(t, crdRes, "CustomResourceDefinition", name, "")
		}
		for _, o := range poolObjs {
			gvr := controller.NodePoolGVR
			if o.GetKind() == "EC2NodeClass" {
				gvr = controller.EC2NodeClassGVR
			}
			kept(t, dynAdmin.Resource(gvr), o.GetKind(), o.GetName(), "")
		}
		for _, c := range claims {
			kept(t, dynAdmin.Resource(controller.NodeClaimGVR), "NodeClaim", c.GetName(), c.GetUID())
		}
		if got := nodesOf(t, cp.Client, pool); !slices.Equal(got, nodes) {
			t.Errorf("nodes of NodePool %s after the uninstall %v, want %v", pool, got, nodes)
		}
		if n := runningIn(t, e, ns); n != 1 {
			t.Errorf("%d inflate pods running after the uninstall, want 1", n)
		}
	})
}

// kept fails the test unless the object exists, is not being deleted, and (given a uid) is
// the same object.
func kept(t *testing.T, ri dynamic.ResourceInterface, kind, name string, uid types.UID) {
	t.Helper()
	o, err := ri.Get(context.Background(), name, metav1.GetOptions{})
	switch {
	case err != nil:
		t.Errorf("%s %s after the uninstall: %v", kind, name, err)
	case o.GetDeletionTimestamp() != nil:
		t.Errorf("%s %s is being deleted after the uninstall", kind, name)
	case uid != "" && o.GetUID() != uid:
		t.Errorf("%s %s was replaced (uid %s, was %s)", kind, name, o.GetUID(), uid)
	}
}

// nodesOf lists the names of a NodePool's nodes, sorted.
func nodesOf(t *testing.T, client kubernetes.Interface, pool string) []string {
	t.Helper()
	list, err := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: nodeplan.LabelNodePool + "=" + pool})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range list.Items {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out
}

// uninstall deletes an install's objects as `helm uninstall` does (background propagation)
// and waits until each is gone.
func uninstall(t *testing.T, objs []applied) {
	t.Helper()
	ctx := context.Background()
	background := metav1.DeletePropagationBackground
	for _, a := range objs {
		if err := a.ri.Delete(ctx, a.name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s %s: %v", a.kind, a.name, err)
		}
	}
	for _, a := range objs {
		waitFor(t, 30*time.Second, fmt.Sprintf("%s %s deleted", a.kind, a.name), func() bool {
			_, err := a.ri.Get(ctx, a.name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	}
}

// tokenSpy is the simulated cloud, checking at each launch that the claim's bootstrap token
// authenticates to the API server as kubeadm's joining nodes do and that its Secret expires soon.
type tokenSpy struct {
	*cloudprovider.Memory
	t            *testing.T
	admin        kubernetes.Interface
	bootstrapper *rest.Config
	mu           sync.Mutex
	launches     []tokenLaunch
}

type tokenLaunch struct {
	token, secret string
	err           error
}

func (s *tokenSpy) Create(ctx context.Context, claim *nodeplan.NodeClaim) (*nodeplan.NodeClaim, error) {
	l := tokenLaunch{token: claim.BootstrapToken}
	id, _, _ := strings.Cut(claim.BootstrapToken, ".")
	l.secret = "bootstrap-token-" + id
	l.err = func() error {
		sec, err := s.admin.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, l.secret, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("nodeclaim %s: token Secret: %w", claim.Name, err)
		}
		exp, err := time.Parse(time.RFC3339, string(sec.Data["expiration"]))
		if err != nil || time.Until(exp) <= 0 || time.Until(exp) > 20*time.Minute {
			return fmt.Errorf("nodeclaim %s: Secret %s expiration %q (%v), want within 20 minutes", claim.Name, l.secret, sec.Data["expiration"], err)
		}
		// The API server's bootstrap authenticator reads Secrets from an informer: allow it a moment.
		var info authenticationv1.UserInfo
		err = controlplane.WaitFor(ctx, 10*time.Second, "the token authenticating", func(context.Context) (bool, error) {
			info, err = whoAmI(s.bootstrapper, claim.BootstrapToken)
			return err == nil, err
		})
		if err != nil {
			return fmt.Errorf("nodeclaim %s: %w", claim.Name, err)
		}
		if info.Username != "system:bootstrap:"+id || !slices.Contains(info.Groups, controller.DefaultBootstrapGroup) {
			return fmt.Errorf("nodeclaim %s: the token authenticates as %s %v, want system:bootstrap:%s in %s", claim.Name,
				info.Username, info.Groups, id, controller.DefaultBootstrapGroup)
		}
		return nil
	}()
	s.mu.Lock()
	s.launches = append(s.launches, l)
	s.mu.Unlock()
	return s.Memory.Create(ctx, claim)
}

func (s *tokenSpy) seen() []tokenLaunch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.launches)
}

// whoAmI asks the API server who a bearer token is.
func whoAmI(base *rest.Config, token string) (authenticationv1.UserInfo, error) {
	cfg := &rest.Config{Host: base.Host, BearerToken: token, TLSClientConfig: base.TLSClientConfig}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	r, err := c.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	return r.Status.UserInfo, nil
}

// notExercised are the grants of the shipped roles that TestInstall's run need not reach, each
// with the code path that needs it. The test fails if one stops being granted.
var notExercised = map[apiCall]bool{
	// terminate.go: a pod still on a draining node when its terminationGracePeriod runs out is
	// deleted; the inflate pods leave on eviction.
	{"delete", "", "pods"}: true,
	// client-go's event broadcaster patches an Event that repeats (its count) instead of
	// creating another; whether the run's events repeat depends on the pods around.
	{"patch", "", "events"}: true,
	// capacitybuffers.go: a CapacityBuffer is read and its status written; the run has none
	// (its informer's list and watch are exercised).
	{"get", "autoscaling.x-k8s.io", "capacitybuffers"}:           true,
	{"update", "autoscaling.x-k8s.io", "capacitybuffers/status"}: true,
}

// apiCall is what an RBAC rule names: a verb on a group's resource (with its subresource).
type apiCall struct{ verb, group, resource string }

func (c apiCall) String() string {
	g := c.group
	if g == "" {
		g = "core"
	}
	return fmt.Sprintf("%s %s/%s", c.verb, g, c.resource)
}

// request is one request the controller sent, as the API server's authorizer sees it.
type request struct {
	call      apiCall
	namespace string
	name      string
	refused   bool
}

func (r request) String() string {
	return fmt.Sprintf("%s %s/%s", r.call, r.namespace, r.name)
}

// callRecorder wraps the controller's transport and records every resource request, parsed
// with the API server's own RequestInfoFactory (what RBAC is asked about).
type callRecorder struct {
	mu   sync.Mutex
	reqs map[string]request
}

var requestInfos = &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

func (r *callRecorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		info, ierr := requestInfos.NewRequestInfo(req)
		if ierr == nil && info.IsResourceRequest {
			res := info.Resource
			if info.Subresource != "" {
				res += "/" + info.Subresource
			}
			rq := request{call: apiCall{verb: info.Verb, group: info.APIGroup, resource: res},
				namespace: info.Namespace, name: info.Name, refused: err == nil && authzDenied(resp)}
			r.add(rq)
			if info.Verb == "watch" && req.URL.Query().Get("sendInitialEvents") == "true" {
				// A watch-list: the informer's initial list, streamed (client-go's WatchListClient).
				// An API server without it gets a list instead, so it counts as the list.
				rq.call.verb = "list"
				r.add(rq)
			}
		}
		return resp, err
	})
}

func (r *callRecorder) add(rq request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reqs == nil {
		r.reqs = map[string]request{}
	}
	r.reqs[fmt.Sprintf("%s|%s|%s|%v", rq.call, rq.namespace, rq.name, rq.refused)] = rq
}

func (r *callRecorder) used() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []request
	for _, q := range r.reqs {
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// authzDenied reports whether the answer is the authorizer's refusal (403 "… cannot <verb>
// resource …"), not another 403 (creating in a namespace being deleted). It leaves the body
// readable.
func authzDenied(resp *http.Response) bool {
	if resp.StatusCode != http.StatusForbidden {
		return false
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return bytes.Contains(b, []byte(" cannot "))
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// shippedRoles are the rules of the rendered ClusterRoles (cluster-wide) and Roles (in their
// namespace).
type shippedRoles struct {
	cluster []rbacv1.PolicyRule
	ns      map[string][]rbacv1.PolicyRule
}

func rulesOf(t *testing.T, objs []*unstructured.Unstructured) *shippedRoles {
	t.Helper()
	r := &shippedRoles{ns: map[string][]rbacv1.PolicyRule{}}
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole":
			var cr rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &cr); err != nil {
				t.Fatal(err)
			}
			r.cluster = append(r.cluster, cr.Rules...)
		case "Role":
			var role rbacv1.Role
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &role); err != nil {
				t.Fatal(err)
			}
			r.ns[role.Namespace] = append(r.ns[role.Namespace], role.Rules...)
		}
	}
	return r
}

func ruleAllows(rule rbacv1.PolicyRule, q request) bool {
	return slices.Contains(rule.Verbs, q.call.verb) && slices.Contains(rule.APIGroups, q.call.group) &&
		slices.Contains(rule.Resources, q.call.resource) &&
		(len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, q.name))
}

// allows reports whether a rule grants the request (the request's own name and namespace).
func (r *shippedRoles) allows(q request) bool {
	for _, rule := range r.cluster {
		if ruleAllows(rule, q) {
			return true
		}
	}
	for _, rule := range r.ns[q.namespace] {
		if q.namespace != "" && ruleAllows(rule, q) {
			return true
		}
	}
	return false
}

// granted lists every (verb, group, resource) the rules grant.
func (r *shippedRoles) granted() []apiCall {
	var out []apiCall
	add := func(rules []rbacv1.PolicyRule) {
		for _, rule := range rules {
			for _, v := range rule.Verbs {
				for _, g := range rule.APIGroups {
					for _, res := range rule.Resources {
						c := apiCall{v, g, res}
						if !slices.Contains(out, c) {
							out = append(out, c)
						}
					}
				}
			}
		}
	}
	add(r.cluster)
	for _, rules := range r.ns {
		add(rules)
	}
	return out
}

// renderKustomize renders a kustomization with kustomize's own library, as `kubectl apply -k`
// does, and returns its objects.
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
	return decodeYAML(t, y)
}

func decodeYAML(t *testing.T, y []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(y), 4096)
	for {
		var o map[string]any
		if err := dec.Decode(&o); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		if len(o) > 0 {
			out = append(out, &unstructured.Unstructured{Object: o})
		}
	}
}

func findObject(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	t.Fatalf("no %s in the rendered base", kind)
	return nil
}

// shippedArgs are the arguments the rendered Deployment runs the controller with.
func shippedArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	ctrs, _, err := unstructured.NestedSlice(findObject(t, objs, "Deployment").Object, "spec", "template", "spec", "containers")
	if err != nil || len(ctrs) == 0 {
		t.Fatalf("the rendered Deployment has no containers (%v)", err)
	}
	args, _, err := unstructured.NestedStringSlice(ctrs[0].(map[string]any), "args")
	if err != nil {
		t.Fatalf("the rendered Deployment's args: %v", err)
	}
	return args
}

// leaseName is the Lease the rendered Role lets the controller update.
func leaseName(t *testing.T, objs []*unstructured.Unstructured) string {
	t.Helper()
	r := rulesOf(t, objs)
	for _, rules := range r.ns {
		for _, rule := range rules {
			if slices.Contains(rule.Resources, "leases") && len(rule.ResourceNames) == 1 {
				return rule.ResourceNames[0]
			}
		}
	}
	t.Fatal("no Role names the controller's Lease")
	return ""
}

// applyObjects creates (or replaces) each object through the API server's REST mapping, as
// kubectl apply does, and returns them with their resources.
func applyObjects(t *testing.T, cfg *rest.Config, objs []*unstructured.Unstructured) []applied {
	t.Helper()
	ctx := context.Background()
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn := dynamic.NewForConfigOrDie(cfg)
	var out []applied
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk, o.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		_, err = ri.Create(ctx, o, metav1.CreateOptions{FieldManager: "kubectl"})
		if apierrors.IsAlreadyExists(err) {
			var cur *unstructured.Unstructured
			if cur, err = ri.Get(ctx, o.GetName(), metav1.GetOptions{}); err == nil {
				o.SetResourceVersion(cur.GetResourceVersion())
				_, err = ri.Update(ctx, o, metav1.UpdateOptions{FieldManager: "kubectl"})
			}
		}
		if err != nil {
			t.Fatalf("applying %s %s/%s: %v", gvk.Kind, o.GetNamespace(), o.GetName(), err)
		}
		out = append(out, applied{ri, gvk.Kind, o.GetName()})
	}
	return out
}

type applied struct {
	ri         dynamic.ResourceInterface
	kind, name string
}

func deleteObjects(_ *rest.Config, objs []applied) {
	for _, a := range objs {
		_ = a.ri.Delete(context.Background(), a.name, metav1.DeleteOptions{})
	}
}

// onlyPools restricts the cluster's NodePools to the test's own: other tests' pools stay in
// the shared control plane.
type onlyPools struct {
	*controller.ClusterNodePools
	names []string
}

func (p *onlyPools) NodePools() ([]nodeplan.NodePool, error) {
	all, err := p.ClusterNodePools.NodePools()
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(np nodeplan.NodePool) bool { return !slices.Contains(p.names, np.Name) }), nil
}

// seriesSum adds the values (counters, gauges) or observation counts (histograms) of the
// series of name whose labels include labels, and checks each series has exactly Karpenter's
// label names.
func seriesSum(t *testing.T, m *controller.Metrics, name string, labels map[string]string) (float64, int) {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum, n := 0.0, 0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, s := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range s.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			if want, ok := controller.KarpenterSeries[name]; ok && len(want) != len(have) {
				t.Errorf("%s%v: want exactly the labels %v", name, have, want)
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			n++
			switch {
			case s.GetCounter() != nil:
				sum += s.GetCounter().GetValue()
			case s.GetGauge() != nil:
				sum += s.GetGauge().GetValue()
			case s.GetHistogram() != nil:
				sum += float64(s.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum, n
}

func atLeast(x float64) func(float64) bool { return func(v float64) bool { return v >= x } }
func exactly(x float64) func(float64) bool { return func(v float64) bool { return v == x } }

// claimsOf lists the NodeClaim objects of an installation.
func claimsOf(dyn dynamic.Interface, installation string) []unstructured.Unstructured {
	list, err := dyn.Resource(controller.NodeClaimGVR).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil
	}
	return slices.DeleteFunc(list.Items, func(u unstructured.Unstructured) bool {
		return u.GetAnnotations()[controller.AnnotationInstallation] != installation
	})
}

// deleteClaims removes an installation's NodeClaim objects, finalizers and all.
func deleteClaims(dyn dynamic.Interface, installation string) {
	ri := dyn.Resource(controller.NodeClaimGVR)
	for _, u := range claimsOf(dyn, installation) {
		u.SetFinalizers(nil)
		_, _ = ri.Update(context.Background(), &u, metav1.UpdateOptions{})
		_ = ri.Delete(context.Background(), u.GetName(), metav1.DeleteOptions{})
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func scaleIn(t *testing.T, deps *sim.Deployments, ns string, n int) {
	t.Helper()
	if err := deps.Scale(context.Background(), ns, "inflate", n); err != nil {
		t.Fatal(err)
	}
}

// runningIn counts the pods of namespace ns bound, running and not being deleted.
func runningIn(t *testing.T, e *env, ns string) int {
	t.Helper()
	list, err := e.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range list.Items {
		if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

func waitRunningIn(t *testing.T, e *env, ns string, n int) {
	t.Helper()
	waitFor(t, 90*time.Second, fmt.Sprintf("%d inflate pods running", n), func() bool { return runningIn(t, e, ns) == n })
}
