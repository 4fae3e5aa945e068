package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
	"github.com/nodeplan/nodeplan/examples/kwok"
)

// TestKwokControllerCommand runs the controller program as a user would on a cluster with no
// cloud — the lab's NodePool applied, then `controller --kubeconfig FILE --provider kwok` —
// against the real kube-apiserver and kube-scheduler: a pending pod gets a NodeClaim whose
// kwok Node the program's own kubelets report Ready, and the pod runs there. (TestKwokController covers the rest of the lifecycle
// in-process.)
func TestKwokControllerCommand(t *testing.T) {
	cp := startControlPlane(t)
	dyn := installCRDs(t, cp.Config)
	ctx := context.Background()
	dir := t.TempDir()

	bin := filepath.Join(dir, "controller")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/nodeplan/nodeplan/examples/controller").CombinedOutput(); err != nil {
		t.Fatalf("building the controller: %v\n%s", err, out)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cp.Config.Host, CertificateAuthorityData: cp.Config.CAData, InsecureSkipTLSVerify: cp.Config.Insecure}
	kc.AuthInfos["e2e"] = &clientcmdapi.AuthInfo{Token: cp.Config.BearerToken}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "e2e"}
	kc.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	// kubectl apply -f nodepool.yaml: the lab's NodePool and EC2NodeClass, watched by the
	// controller as on kind.
	if err := sim.Apply(ctx, dyn, sim.NodePoolsYAML()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = dyn.Resource(controller.NodePoolGVR).Delete(ctx, "default", metav1.DeleteOptions{})
		_ = dyn.Resource(controller.EC2NodeClassGVR).Delete(ctx, "default", metav1.DeleteOptions{})
	}()

	const installation = "kwok-command"
	output := &logs{} // written by exec's copying goroutines while the test reads it
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--provider", "kwok", "--kwok-ready-after", "1s",
		"--installation", installation, "--lease-name", installation, "--log-format", "text")
	cmd.Stdout, cmd.Stderr = output, output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Error("the controller did not stop within 30s of SIGTERM")
		}
	}
	p := &kwok.Provider{Client: cp.Client, Owner: installation}
	defer func() {
		stop()
		// What the program launched goes with the test, so the next one starts with no nodes.
		insts, _ := p.List(ctx)
		for _, i := range insts {
			deleteNodeNow(t, cp.Client, nodeNameOf(i.Status.ProviderID))
			_ = dyn.Resource(controller.NodeClaimGVR).Delete(ctx, i.Name, metav1.DeleteOptions{})
		}
		claims, _ := dyn.Resource(controller.NodeClaimGVR).List(ctx, metav1.ListOptions{})
		for _, c := range claims.Items {
			if c.GetAnnotations()[controller.AnnotationInstallation] == installation {
				c.SetFinalizers(nil)
				_, _ = dyn.Resource(controller.NodeClaimGVR).Update(ctx, &c, metav1.UpdateOptions{})
				_ = dyn.Resource(controller.NodeClaimGVR).Delete(ctx, c.GetName(), metav1.DeleteOptions{})
			}
		}
		if t.Failed() {
			t.Logf("controller output (tail):\n%s", tail(output.String(), 60))
		}
	}()

	const ns = "kwok-command"
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "inflate-1", Namespace: ns},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{"eks-team": "my-team"}, TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: "inflate", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
	if _, err := cp.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer cp.Client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}) //nolint:errcheck

	var node string
	waitFor(t, 90*time.Second, "the pending pod bound to a kwok Node and running", func() bool {
		got, err := cp.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || got.Status.Phase != corev1.PodRunning {
			return false
		}
		node = got.Spec.NodeName
		return true
	})
	n, err := cp.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(n.Spec.ProviderID, kwok.ProviderIDPrefix) || n.Labels[kwok.LabelOwner] != installation ||
		n.Labels[nodeplan.LabelRegistered] != "true" || n.Labels["eks-team"] != "my-team" {
		t.Errorf("node %s: providerID %q labels %v; want a kwok node of %s, registered, with the pool's label", node, n.Spec.ProviderID, n.Labels, installation)
	}
	for _, want := range []string{"kwok provider: Nodes as objects, no cloud", `message="launched nodeclaim"`, `message="registered nodeclaim"`, `message="initialized nodeclaim"`} {
		if !strings.Contains(output.String(), want) {
			t.Errorf("the controller's output lacks %q", want)
		}
	}
}
