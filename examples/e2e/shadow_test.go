package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/nodeplan/nodeplan"
)

// Shadow mode (plan watch) beside an incumbent autoscaler, played by this test: while the
// program plans pass after pass against the real API server, the test launches a node and
// removes it again. The program must report what the incumbent did and what nodeplan would
// have done, and write nothing: no object, before or after, carries a field manager of its
// user agent, and the objects the test made keep their resource versions.
func TestShadowModeWritesNothing(t *testing.T) {
	cp := startControlPlane(t)
	dyn := installCRDs(t, cp.Config)
	ctx := context.Background()
	dir := t.TempDir()

	// The program, built as a user installs it.
	bin := filepath.Join(dir, "plan")
	build := exec.Command("go", "build", "-o", bin, "github.com/nodeplan/nodeplan/examples/plan")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building plan: %v\n%s", err, out)
	}

	// A kubeconfig for the API server, as an operator would have.
	kubeconfig := filepath.Join(dir, "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cp.Config.Host, CertificateAuthorityData: cp.Config.CAData, InsecureSkipTLSVerify: cp.Config.Insecure}
	kc.AuthInfos["e2e"] = &clientcmdapi.AuthInfo{Token: cp.Config.BearerToken}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "e2e"}
	kc.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}

	// The cluster: a NodePool, a pending pod, nothing else of the incumbent's yet.
	var pool unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(`apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: shadow}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
`), &pool.Object); err != nil {
		t.Fatal(err)
	}
	poolGVR := schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
	created, err := dyn.Resource(poolGVR).Create(ctx, &pool, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer dyn.Resource(poolGVR).Delete(ctx, "shadow", metav1.DeleteOptions{}) //nolint:errcheck
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "shadow-pending", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{nodeplan.LabelNodePool: "shadow"},
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
		}}
	if pod, err = cp.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer cp.Client.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{}) //nolint:errcheck

	cmd := exec.Command(bin, "watch", "--kubeconfig", kubeconfig, "--passes", "3", "--interval", "3s",
		"--catalog", "../plan/testdata/catalog.json")
	cmd.Env = append(os.Environ(), "AWS_EC2_METADATA_DISABLED=true")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		switch len(lines) {
		case 1: // the incumbent launches a node for the pending pod
			n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "incumbent-1", Labels: map[string]string{
				nodeplan.LabelNodePool: "shadow", nodeplan.LabelInstanceType: "m5.xlarge",
				nodeplan.LabelZone: "us-east-1a", nodeplan.LabelCapacityType: "on-demand",
			}}}
			if _, err := cp.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
				t.Error(err)
			}
		case 2: // and removes it
			if err := cp.Client.CoreV1().Nodes().Delete(ctx, "incumbent-1", metav1.DeleteOptions{}); err != nil {
				t.Error(err)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("plan watch: %v\nstdout:\n%s\nstderr:\n%s", err, strings.Join(lines, "\n"), stderr.String())
	}
	out := strings.Join(lines, "\n")
	t.Logf("plan watch:\n%s", out)
	if len(lines) != 3 {
		t.Fatalf("plan watch printed %d lines, want one per pass:\n%s\nstderr:\n%s", len(lines), out, stderr.String())
	}
	if !strings.Contains(lines[1], "the incumbent launched 1 nodes") || !strings.Contains(lines[2], "removed 1") {
		t.Errorf("plan watch did not report the incumbent's launch and removal:\n%s", out)
	}
	if strings.Contains(lines[0], "nodeplan would launch 0 nodes") {
		t.Errorf("plan watch did not say what it would launch for the pending pod:\n%s", out)
	}

	// Nothing written: what the test made is as it made it, and no object anywhere names the
	// program as a field manager.
	after, err := dyn.Resource(poolGVR).Get(ctx, "shadow", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.GetResourceVersion() != created.GetResourceVersion() {
		t.Errorf("the NodePool changed during shadow mode (resourceVersion %s → %s)", created.GetResourceVersion(), after.GetResourceVersion())
	}
	podAfter, err := cp.Client.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	managers := map[string]bool{}
	collect := func(fields []metav1.ManagedFieldsEntry) {
		for _, f := range fields {
			managers[f.Manager] = true
		}
	}
	collect(podAfter.ManagedFields)
	collect(after.GetManagedFields())
	events, err := cp.Client.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		collect(e.ManagedFields)
	}
	nodes, err := cp.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		collect(n.ManagedFields)
	}
	for m := range managers {
		if strings.Contains(m, "nodeplan-plan") {
			t.Errorf("an object has field manager %q: shadow mode wrote to the cluster", m)
		}
	}
}
