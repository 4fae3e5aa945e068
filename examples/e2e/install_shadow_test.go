package e2e

import (
	"bufio"
	"context"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

// TestShadowInstall installs shadow mode as shipped — deploy/shadow, and the chart with
// shadow.enabled — on the real API server (Node,RBAC), and runs plan watch with the rendered
// Deployment's arguments and a token of its ServiceAccount, every request it sends recorded
// on the way to the API server: each is a read the shipped ClusterRole allows, none is
// refused, every resource the ClusterRole grants is read, and what it does not grant — any
// write, Secrets — is refused. The passes are reported on stdout and in the nodeplan_shadow_*
// metrics on the Deployment's metrics port. Uninstalling leaves the cluster's NodePools.
func TestShadowInstall(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "plan")
	build := exec.Command("go", "build", "-o", bin, "github.com/nodeplan/nodeplan/examples/plan")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building plan: %v\n%s", err, out)
	}
	for _, in := range []struct {
		name string
		objs func(*testing.T) []*unstructured.Unstructured
	}{
		{"kustomize", kustomization("../../deploy/shadow")},
		{"chart", helmTemplate("nodeplan-shadow.yaml")},
	} {
		t.Run(in.name, func(t *testing.T) { testShadowInstall(t, bin, in.name, in.objs(t)) })
	}
}

func testShadowInstall(t *testing.T, bin, name string, objs []*unstructured.Unstructured) {
	cp := startControlPlane(t)
	admin := cp.Config
	dynAdmin := installCRDs(t, admin)
	ctx := context.Background()

	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			t.Fatalf("shadow mode's install holds CRD %s: uninstalling it would delete every %s", o.GetName(), o.GetName())
		}
	}
	applied := applyObjects(t, admin, objs)
	t.Cleanup(func() { deleteObjects(admin, applied) })
	sa := findObject(t, objs, "ServiceAccount")
	dep := findObject(t, objs, "Deployment")
	if got, _, _ := unstructured.NestedString(dep.Object, "spec", "template", "spec", "serviceAccountName"); got != sa.GetName() {
		t.Fatalf("the shadow Deployment runs as ServiceAccount %q, want %s", got, sa.GetName())
	}
	roles := rulesOf(t, objs)
	args := shippedArgs(t, objs)
	if len(args) == 0 || args[0] != "watch" {
		t.Fatalf("the shadow Deployment's args %q do not run plan watch", args)
	}

	// A NodePool of the cluster's, for plan to plan with.
	pool := "shadow-install-" + name
	poolObjs := decodeYAML(t, []byte(`apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: `+pool+`}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
`))
	created, err := dynAdmin.Resource(controller.NodePoolGVR).Create(ctx, poolObjs[0], metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dynAdmin.Resource(controller.NodePoolGVR).Delete(context.Background(), pool, metav1.DeleteOptions{})
	})

	// And a node of the incumbent's in it: what plan learns the region from, as on EKS.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pool + "-node", Labels: map[string]string{
		nodeplan.LabelNodePool: pool, nodeplan.LabelInstanceType: "m5.xlarge", corev1.LabelTopologyRegion: "us-east-1",
		nodeplan.LabelZone: "us-east-1a", nodeplan.LabelCapacityType: "on-demand",
	}}}
	if _, err := cp.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Client.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })

	tr, err := cp.Client.CoreV1().ServiceAccounts(sa.GetNamespace()).CreateToken(ctx, sa.GetName(), &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for ServiceAccount %s/%s: %v", sa.GetNamespace(), sa.GetName(), err)
	}
	probe := kubernetes.NewForConfigOrDie(&rest.Config{Host: admin.Host, BearerToken: tr.Status.Token, TLSClientConfig: admin.TLSClientConfig})
	t.Run("refused", func(t *testing.T) {
		dyn := dynamic.NewForConfigOrDie(&rest.Config{Host: admin.Host, BearerToken: tr.Status.Token, TLSClientConfig: admin.TLSClientConfig})
		dryRun := []string{metav1.DryRunAll}
		for what, call := range map[string]func() error{
			"list secrets": func() error {
				_, err := probe.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
				return err
			},
			"create a pod": func() error {
				_, err := probe.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "x", Image: "x"}}}}, metav1.CreateOptions{DryRun: dryRun})
				return err
			},
			"delete a node": func() error {
				return probe.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{DryRun: dryRun}, metav1.ListOptions{})
			},
			"patch a NodePool": func() error {
				_, err := dyn.Resource(controller.NodePoolGVR).Patch(ctx, pool, types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`),
					metav1.PatchOptions{DryRun: dryRun})
				return err
			},
			"create a NodeClaim": func() error {
				_, err := dyn.Resource(controller.NodeClaimGVR).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": map[string]any{"name": "x"}}}, metav1.CreateOptions{DryRun: dryRun})
				return err
			},
			"create an event": func() error {
				_, err := probe.CoreV1().Events("default").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "x"},
					InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "x", Namespace: "default"}}, metav1.CreateOptions{DryRun: dryRun})
				return err
			},
			"evict a pod": func() error {
				return probe.CoreV1().Pods("default").EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"},
					DeleteOptions: &metav1.DeleteOptions{DryRun: dryRun}})
			},
		} {
			if err := call(); !apierrors.IsForbidden(err) {
				t.Errorf("%s as shadow mode's ServiceAccount: err = %v, want Forbidden", what, err)
			}
		}
	})

	// The API server behind a recording proxy; plan connects to it as the pod would, with the
	// ServiceAccount's token (a kubeconfig standing in for the pod's in-cluster configuration,
	// which --current-context falls back to).
	calls := &callRecorder{}
	upstream, err := url.Parse(admin.Host)
	if err != nil {
		t.Fatal(err)
	}
	tlsOnly, err := rest.TransportFor(&rest.Config{Host: admin.Host, TLSClientConfig: admin.TLSClientConfig})
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	proxy.Transport = calls.wrap(tlsOnly)
	proxy.FlushInterval = -1
	// TLS, as to the API server: client-go sends a token only over https.
	front := httptest.NewTLSServer(proxy)
	defer front.Close()
	home := t.TempDir()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["in-cluster"] = &clientcmdapi.Cluster{Server: front.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: front.Certificate().Raw})}
	kc.AuthInfos["shadow"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["in-cluster"] = &clientcmdapi.Context{Cluster: "in-cluster", AuthInfo: "shadow"}
	kc.CurrentContext = "in-cluster"
	kubeconfig := filepath.Join(home, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}

	// The Deployment's arguments, then what a test needs instead (a later flag wins): passes a
	// second apart, and the metrics port on the loopback, free.
	port := freePort(t)
	shipped := metricsPort(t, args)
	if cport := containerPort(t, dep, "http-metrics"); cport != shipped {
		t.Errorf("the Deployment's http-metrics port %d, but plan serves metrics on %d", cport, shipped)
	}
	if sport := servicePort(t, objs); sport != shipped {
		t.Errorf("the metrics Service's port %d, but plan serves metrics on %d", sport, shipped)
	}
	run := append(slices.Clone(args), "--interval=1s", fmt.Sprintf("--metrics-addr=127.0.0.1:%d", port))
	cmd := exec.Command(bin, run...)
	// No AWS credentials, as a pod without IRSA: the catalog is nodeplan's embedded data.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "KUBECONFIG=" + kubeconfig, "AWS_EC2_METADATA_DISABLED=true"}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &logs{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// Two passes, or until a pass fails (a refused list, say: plan logs it and tries again),
	// plan ends, or two minutes pass; what it called is checked below either way.
	var out []string
	ended := false
	deadline := time.Now().Add(2 * time.Minute)
collect:
	for len(out) < 2 {
		select {
		case l, ok := <-lines:
			if !ok {
				ended = true
				break collect
			}
			out = append(out, l)
		case <-time.After(200 * time.Millisecond):
			if strings.Contains(stderr.String(), "level=ERROR") || time.Now().After(deadline) {
				break collect
			}
		}
	}
	var code int
	var body string
	if len(out) == 2 {
		code, body = get(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	}
	if !ended {
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
	}
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("plan %q: %v", run, err)
	}
	t.Logf("plan %s:\n%s", strings.Join(run, " "), strings.Join(out, "\n"))
	if len(out) < 2 {
		t.Errorf("plan %q reported %d passes, want 2:\n%s", run, len(out), strings.Join(out, "\n"))
	}
	for i, l := range out {
		if !strings.HasPrefix(l, fmt.Sprintf("pass %d: ", i+1)) || !strings.Contains(l, "nodeplan would launch") {
			t.Errorf("line %d of plan watch %q is not a pass's summary", i+1, l)
		}
	}
	if len(out) == 2 && (code != http.StatusOK || !strings.Contains(body, "nodeplan_shadow_passes_total")) {
		t.Errorf("GET /metrics on the shipped metrics address = %d, want 200 with nodeplan_shadow_passes_total:\n%s", code, tail(body, 20))
	}
	if strings.Contains(stderr.String(), "level=ERROR") {
		t.Errorf("plan watch logged errors:\n%s", stderr.String())
	}

	t.Run("least privilege", func(t *testing.T) {
		used := calls.used()
		if len(used) == 0 {
			t.Fatal("no request of plan's went through the proxy")
		}
		read := map[apiCall]bool{}
		for _, c := range used {
			if c.refused {
				t.Errorf("plan watch was refused %s", c)
			}
			if !roles.allows(c) {
				t.Errorf("plan watch called %s, which no rule of the shipped ClusterRole grants", c)
			}
			if !slices.Contains([]string{"get", "list", "watch"}, c.call.verb) {
				t.Errorf("plan watch called %s: shadow mode only reads", c)
			}
			read[apiCall{group: c.call.group, resource: c.call.resource}] = true
		}
		// plan lists; the ClusterRole also grants get and watch on the same resources
		// (examples/plan/shadow-rbac.yaml: for tools that follow changes), but no resource
		// plan does not read.
		for _, g := range roles.granted() {
			if !slices.Contains([]string{"get", "list", "watch"}, g.verb) {
				t.Errorf("the shadow ClusterRole grants %s: not read-only", g)
			}
			if !read[apiCall{group: g.group, resource: g.resource}] {
				t.Errorf("the shadow ClusterRole grants %s, which plan watch never read", g)
			}
		}
	})

	// Uninstalling shadow mode: its objects and its access go, the cluster's NodePool stays.
	t.Run("uninstall", func(t *testing.T) {
		uninstall(t, applied)
		waitFor(t, 30*time.Second, "the ServiceAccount's token refused once the ServiceAccount is deleted", func() bool {
			_, err := whoAmI(admin, tr.Status.Token)
			return apierrors.IsUnauthorized(err)
		})
		kept(t, dynAdmin.Resource(controller.NodePoolGVR), "NodePool", pool, created.GetUID())
		crds := dynAdmin.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
		kept(t, crds, "CustomResourceDefinition", "nodepools.karpenter.sh", "")
	})
}

// freePort is a loopback TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// metricsPort is the port of the --metrics-addr argument.
func metricsPort(t *testing.T, args []string) int {
	t.Helper()
	for _, a := range args {
		if addr, ok := strings.CutPrefix(a, "--metrics-addr="); ok {
			_, p, err := net.SplitHostPort(addr)
			if err != nil {
				t.Fatalf("--metrics-addr=%s: %v", addr, err)
			}
			var n int
			if _, err := fmt.Sscan(p, &n); err != nil {
				t.Fatalf("--metrics-addr=%s: %v", addr, err)
			}
			return n
		}
	}
	t.Fatalf("the shadow Deployment's args %q serve no metrics (--metrics-addr)", args)
	return 0
}

// containerPort is the number of the first container's named port.
func containerPort(t *testing.T, dep *unstructured.Unstructured, name string) int {
	t.Helper()
	ctrs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if len(ctrs) == 0 {
		t.Fatalf("Deployment %s has no containers", dep.GetName())
	}
	ports, _, _ := unstructured.NestedSlice(ctrs[0].(map[string]any), "ports")
	for _, p := range ports {
		pm := p.(map[string]any)
		if pm["name"] == name {
			return portNumber(t, pm["containerPort"])
		}
	}
	t.Fatalf("Deployment %s's container has no port %s", dep.GetName(), name)
	return 0
}

// servicePort is the port of the Service's http-metrics port, which must target the
// container's port of that name.
func servicePort(t *testing.T, objs []*unstructured.Unstructured) int {
	t.Helper()
	svc := findObject(t, objs, "Service")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	for _, p := range ports {
		pm := p.(map[string]any)
		if pm["name"] == "http-metrics" {
			if pm["targetPort"] != "http-metrics" {
				t.Errorf("Service %s's http-metrics port targets %v, want the container's http-metrics", svc.GetName(), pm["targetPort"])
			}
			return portNumber(t, pm["port"])
		}
	}
	t.Fatalf("Service %s has no http-metrics port", svc.GetName())
	return 0
}

// portNumber is a port as decoded from YAML (through JSON: a float64) or built in Go.
func portNumber(t *testing.T, v any) int {
	t.Helper()
	switch n := v.(type) {
	case int64:
		return int(n)
	case float64:
		return int(n)
	}
	t.Fatalf("port %v (%T) is not a number", v, v)
	return 0
}
