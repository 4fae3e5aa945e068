package e2e

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
	"github.com/nodeplan/nodeplan/examples/kwok"
	"github.com/nodeplan/nodeplan/scheduling"
)

// TestKwokProvider drives the kwok provider by hand against the real kube-apiserver: a
// NodeClaim-shaped launch becomes a Node with the catalog type's labels and capacity, the
// provider's kubelets report it Ready and run a pod bound to it, and Delete terminates the
// instance while the controller's finalizer holds the Node object, which goes once the
// finalizer is lifted.
func TestKwokProvider(t *testing.T) {
	cp := startControlPlane(t)
	ctx := context.Background()
	p := &kwok.Provider{Client: cp.Client, Catalog: sim.Catalog(), Owner: "kwok-e2e", ReadyAfter: time.Second,
		Interval: 100 * time.Millisecond}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("kwok kubelets: Run() = %v", err)
		}
	}()

	req, err := nodeplan.NewRequirement(nodeplan.LabelCapacityType, corev1.NodeSelectorOpIn, "on-demand")
	if err != nil {
		t.Fatal(err)
	}
	claim := &nodeplan.NodeClaim{Name: "kwok-e2e-a", NodePool: "default", Requirements: nodeplan.NewRequirements(req),
		InstanceTypeOptions: []string{"m5.large", "m5.xlarge"}, Labels: map[string]string{"eks-team": "my-team"},
		StartupTaints: []corev1.Taint{{Key: "example.com/cni-not-ready", Effect: corev1.TaintEffectNoSchedule}}}
	launched, err := p.Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	defer deleteNodeNow(t, cp.Client, claim.Name)
	if launched.Status.ProviderID != "kwok://kwok-e2e-a" || launched.Status.InstanceType != "m5.large" ||
		launched.Status.CapacityType != nodeplan.CapacityTypeOnDemand {
		t.Errorf("Create = %+v, want kwok://kwok-e2e-a, an on-demand m5.large", launched.Status)
	}

	n, err := cp.Client.CoreV1().Nodes().Get(ctx, claim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Node of the launch: %v", err)
	}
	if n.Spec.ProviderID != launched.Status.ProviderID || n.Labels[nodeplan.LabelInstanceType] != "m5.large" ||
		n.Labels["eks-team"] != "my-team" || n.Labels[nodeplan.LabelZone] != launched.Status.Zone {
		t.Errorf("Node %s: providerID %q labels %v; want the launch's provider ID, type, zone and the claim's labels", n.Name, n.Spec.ProviderID, n.Labels)
	}
	// Status posted after the create, which the API server strips of it.
	if !n.Status.Allocatable.Cpu().Equal(*launched.Status.Allocatable.Cpu()) || n.Status.Capacity.Memory().IsZero() {
		t.Errorf("Node %s: capacity %v allocatable %v, want the catalog's", n.Name, n.Status.Capacity, n.Status.Allocatable)
	}

	waitFor(t, 30*time.Second, "the Node Ready, its startup and not-ready taints lifted", func() bool {
		n, err := cp.Client.CoreV1().Nodes().Get(ctx, claim.Name, metav1.GetOptions{})
		return err == nil && nodeReady(n) && !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
			return t.Key == "example.com/cni-not-ready" || t.Key == corev1.TaintNodeNotReady
		})
	})
	if _, err := cp.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, claim.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the Node's heartbeat Lease: %v", err)
	}

	const ns = "kwok-e2e"
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bound", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: claim.Name, Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	if _, err := cp.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the pod bound to the kwok Node Running", func() bool {
		got, err := cp.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodRunning
	})
	if err := cp.Client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the pod's deletion (30s of grace) confirmed by the kubelet", func() bool {
		_, err := cp.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return err != nil
	})

	if got, err := p.List(ctx); err != nil || len(got) != 1 || got[0].Name != claim.Name || got[0].Status.ProviderID != launched.Status.ProviderID {
		t.Errorf("List = %v, %v; want the one launch, with its claim's name", got, err)
	}
	// The controller's termination finalizer holds the Node object past its instance.
	n, err = cp.Client.CoreV1().Nodes().Get(ctx, claim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Finalizers = append(n.Finalizers, controller.FinalizerTermination)
	if _, err := cp.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(ctx, launched.Status.ProviderID); err != nil {
		t.Fatalf("Delete = %v, want nil: termination under way", err)
	}
	if err := p.Delete(ctx, launched.Status.ProviderID); !cloudprovider.IsNotFound(err) {
		t.Errorf("Delete again = %v, want NotFound: the instance is gone", err)
	}
	if _, err := p.Get(ctx, launched.Status.ProviderID); !cloudprovider.IsNotFound(err) {
		t.Errorf("Get after Delete = %v, want NotFound", err)
	}
	n, err = cp.Client.CoreV1().Nodes().Get(ctx, claim.Name, metav1.GetOptions{})
	if err != nil || n.DeletionTimestamp == nil {
		t.Fatalf("the Node held by the finalizer: %v (deleting: %v), want it there, being deleted", err, n != nil && n.DeletionTimestamp != nil)
	}
	n.Finalizers = nil
	if _, err := cp.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the Node gone once its finalizer is lifted", func() bool {
		_, err := cp.Client.CoreV1().Nodes().Get(ctx, claim.Name, metav1.GetOptions{})
		return err != nil
	})
	if got, err := p.List(ctx); err != nil || len(got) != 0 {
		t.Errorf("List after Delete = %v, %v; want nothing", got, err)
	}
}

// TestKwokController runs the controller with the kwok provider on the real kube-apiserver and
// kube-scheduler — `controller --kubeconfig FILE --provider kwok` on a cluster with no
// cloud: the inflate Deployment scaled to 5 gets a NodeClaim whose kwok Node registers,
// initializes and runs the 5 pods; `kubectl delete node` drains it onto a replacement; scaled
// to 0, the empty node is removed.
func TestKwokController(t *testing.T) {
	cp := startControlPlane(t)
	dyn := installCRDs(t, cp.Config)
	ctx := context.Background()
	pools, err := nodeplan.DecodeNodePools(sim.NodePoolsYAML())
	if err != nil {
		t.Fatal(err)
	}
	pools[0].Disruption.ConsolidateAfter = 5 * time.Second
	p := &kwok.Provider{Client: cp.Client, Catalog: sim.Catalog(), ReadyAfter: time.Second, Interval: 100 * time.Millisecond}
	lines := &logs{}
	c := &controller.Controller{Client: cp.Client, Dynamic: dyn, Provider: p, NodePools: controller.StaticNodePools(pools),
		Solve: scheduling.Solve, Logger: slog.New(slog.NewTextHandler(lines, nil)),
		DisruptionInterval: 2 * time.Second, ReconcileInterval: 5 * time.Second, EvictionRetry: time.Second}
	deps := &sim.Deployments{Client: cp.Client}
	const ns = "kwok-lab"
	dep := inflate()
	dep.Namespace = ns
	if err := deps.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}

	runCtx, stop := context.WithCancel(ctx)
	errs := make(chan error, 3)
	go func() { errs <- p.Run(runCtx) }()
	go func() { errs <- c.Run(runCtx) }()
	go func() {
		for runCtx.Err() == nil {
			if err := deps.Step(runCtx, time.Now()); err != nil && runCtx.Err() == nil {
				t.Logf("deployments: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		errs <- nil
	}()
	defer func() {
		stop()
		for range 3 {
			if err := <-errs; err != nil {
				t.Errorf("Run() = %v", err)
			}
		}
		nodes, _ := p.List(ctx)
		for _, n := range nodes {
			deleteNodeNow(t, cp.Client, nodeNameOf(n.Status.ProviderID))
		}
		if t.Failed() {
			t.Logf("controller logs (tail):\n%s", tail(lines.String(), 60))
		}
	}()

	running := func() (int, []string) {
		list, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, nil
		}
		n, nodes := 0, []string{}
		for _, p := range list.Items {
			if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				n++
				if !slices.Contains(nodes, p.Spec.NodeName) {
					nodes = append(nodes, p.Spec.NodeName)
				}
			}
		}
		return n, nodes
	}
	if err := deps.Scale(ctx, ns, dep.Name, 5); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, "5 inflate pods bound by kube-scheduler to a kwok Node and running", func() bool {
		n, _ := running()
		return n == 5
	})
	_, nodes := running()
	if len(nodes) != 1 {
		t.Errorf("the 5 pods run on nodes %v, want one", nodes)
	}
	insts, err := p.List(ctx)
	if err != nil || len(insts) != 1 {
		t.Fatalf("kwok instances = %v, %v; want one", providerIDs(insts), err)
	}
	node, err := cp.Client.CoreV1().Nodes().Get(ctx, nodes[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Spec.ProviderID != insts[0].Status.ProviderID || node.Labels[nodeplan.LabelRegistered] != "true" ||
		!slices.Contains(node.Finalizers, controller.FinalizerTermination) {
		t.Errorf("node %s: providerID %q, labels %v, finalizers %v; want the kwok instance's, registered, the termination finalizer",
			node.Name, node.Spec.ProviderID, node.Labels, node.Finalizers)
	}
	waitFor(t, 30*time.Second, "the node initialized", func() bool {
		n, err := cp.Client.CoreV1().Nodes().Get(ctx, nodes[0], metav1.GetOptions{})
		return err == nil && n.Labels[nodeplan.LabelInitialized] == "true"
	})

	// kubectl delete node: the termination finalizer holds it while the controller drains it
	// and deletes its kwok instance; the pods come back on a new kwok node.
	if err := cp.Client.CoreV1().Nodes().Delete(ctx, nodes[0], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var replacement string
	waitFor(t, 90*time.Second, "the deleted node gone and the 5 pods running on a replacement", func() bool {
		n, now := running()
		_, err := cp.Client.CoreV1().Nodes().Get(ctx, nodes[0], metav1.GetOptions{})
		if n != 5 || len(now) != 1 || now[0] == nodes[0] || err == nil {
			return false
		}
		replacement = now[0]
		return true
	})
	if insts, err := p.List(ctx); err != nil || len(insts) != 1 || nodeNameOf(insts[0].Status.ProviderID) != replacement {
		t.Errorf("kwok instances after the node's deletion = %v, %v; want the replacement %s alone", providerIDs(insts), err, replacement)
	}

	if err := deps.Scale(ctx, ns, dep.Name, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, "the empty kwok node removed: no instance, no Node, no NodeClaim", func() bool {
		insts, err := p.List(ctx)
		if err != nil || len(insts) != 0 {
			return false
		}
		if _, err := cp.Client.CoreV1().Nodes().Get(ctx, replacement, metav1.GetOptions{}); err == nil {
			return false
		}
		claims, err := dyn.Resource(controller.NodeClaimGVR).List(ctx, metav1.ListOptions{})
		return err == nil && len(claims.Items) == 0
	})
	if n := strings.Count(lines.String(), `msg="deleted nodeclaim"`); n != 2 {
		t.Errorf("deleted nodeclaim lines = %d, want 2 (the deleted node's, the empty one's)", n)
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodeNameOf(providerID string) string {
	return strings.TrimPrefix(providerID, kwok.ProviderIDPrefix)
}

// deleteNodeNow removes a Node a test left, finalizers and all, so the shared control plane's
// next test starts with no nodes.
func deleteNodeNow(t *testing.T, client kubernetes.Interface, name string) {
	ctx := context.Background()
	n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return
	}
	if len(n.Finalizers) > 0 {
		n.Finalizers = nil
		if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Errorf("cleaning up Node %s: %v", name, err)
		}
	}
	_ = client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
}
