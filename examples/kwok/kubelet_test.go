package kwok

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
)

// stepOnce runs one kubelet pass over what the API server holds.
func stepOnce(t *testing.T, p *Provider, client *fake.Clientset, now time.Time) {
	t.Helper()
	ctx := context.Background()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ns []*corev1.Node
	for i := range nodes.Items {
		ns = append(ns, &nodes.Items[i])
	}
	var ps []*corev1.Pod
	for i := range pods.Items {
		ps = append(ps, &pods.Items[i])
	}
	if err := p.step(ctx, ns, ps, now); err != nil {
		t.Fatalf("step: %v", err)
	}
}

func node(t *testing.T, client *fake.Clientset, name string) *corev1.Node {
	t.Helper()
	n, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func pod(name, nodeName string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:   corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
}

func TestKubeletReadiesNodesAndRunsPods(t *testing.T) {
	now := epoch
	p, client := newProvider(t, &now)
	p.ReadyAfter = 3 * time.Second
	ctx := context.Background()
	claim := &nodeplan.NodeClaim{Name: "a", InstanceTypeOptions: []string{"m.large"},
		StartupTaints: []corev1.Taint{{Key: "cni.example/not-ready", Effect: corev1.TaintEffectNoExecute}}}
	if _, err := p.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	// The API server's TaintNodesByCondition adds not-ready; the controller lifts unregistered.
	n := node(t, client, "a")
	n.Spec.Taints = append(slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == nodeplan.TaintUnregistered }),
		corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
	if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*corev1.Pod{pod("web", "a"), pod("elsewhere", "real-node")} {
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	stepOnce(t, p, client, epoch.Add(2*time.Second))
	if got := readyStatus(node(t, client, "a")); got != corev1.ConditionFalse {
		t.Errorf("Ready 2s after launch = %q, want False (ReadyAfter 3s)", got)
	}
	if web, _ := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{}); web.Status.Phase != corev1.PodPending {
		t.Errorf("pod on a NotReady node: phase %s, want Pending", web.Status.Phase)
	}

	stepOnce(t, p, client, epoch.Add(3*time.Second))
	n = node(t, client, "a")
	if got := readyStatus(n); got != corev1.ConditionTrue {
		t.Errorf("Ready 3s after launch = %q, want True", got)
	}
	if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key != "" }) {
		t.Errorf("taints of the Ready node = %v, want the startup and not-ready taints lifted", n.Spec.Taints)
	}
	if _, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "a", metav1.GetOptions{}); err != nil {
		t.Errorf("the Node's Lease: %v", err)
	}
	stepOnce(t, p, client, epoch.Add(4*time.Second))
	web, _ := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	if web.Status.Phase != corev1.PodRunning || len(web.Status.ContainerStatuses) != 1 || !web.Status.ContainerStatuses[0].Ready ||
		web.Status.HostIP == "" {
		t.Errorf("pod on the Ready node: phase %s, containers %v, hostIP %q; want Running, ready, with the node's IP",
			web.Status.Phase, web.Status.ContainerStatuses, web.Status.HostIP)
	}
	if other, _ := client.CoreV1().Pods("default").Get(ctx, "elsewhere", metav1.GetOptions{}); other.Status.Phase != corev1.PodPending {
		t.Errorf("another kubelet's pod: phase %s, want it left Pending", other.Status.Phase)
	}

	// A pod being deleted on one of its nodes: the kubelet confirms.
	web.DeletionTimestamp = &metav1.Time{Time: epoch}
	if _, err := client.CoreV1().Pods("default").Update(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stepOnce(t, p, client, epoch.Add(5*time.Second))
	if _, err := client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{}); err == nil {
		t.Error("the deleted pod is still there: the kubelet did not confirm its termination")
	}

	// Faults a person injects with kubectl annotate.
	n = node(t, client, "a")
	n.Annotations[AnnotationReady] = "False"
	n.Annotations[AnnotationInterrupt] = string(cloudprovider.InterruptionSpot)
	if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stepOnce(t, p, client, epoch.Add(6*time.Second))
	stepOnce(t, p, client, epoch.Add(7*time.Second))
	if got := readyStatus(node(t, client, "a")); got != corev1.ConditionFalse {
		t.Errorf("Ready with %s=False = %q, want False", AnnotationReady, got)
	}
	evs, err := p.Interruptions(ctx)
	if err != nil || len(evs) != 1 || evs[0].ProviderID != "kwok://a" || evs[0].Kind != cloudprovider.InterruptionSpot {
		t.Errorf("Interruptions = %+v, %v; want one spot interruption of kwok://a (once, across two passes)", evs, err)
	}
	if its, _ := p.InstanceTypes(ctx, nil); its[1].Name != "m.large" || its[1].Offerings[2].Available {
		t.Errorf("the interrupted spot offering is still available: %+v", its[1].Offerings)
	}
}

func TestKubeletDeletesPodsOfTerminatedNodes(t *testing.T) {
	now := epoch
	p, client := newProvider(t, &now)
	ctx := context.Background()
	if _, err := p.Create(ctx, &nodeplan.NodeClaim{Name: "a", InstanceTypeOptions: []string{"m.large"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod("ds", "a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n := node(t, client, "a")
	n.Annotations[AnnotationTerminated] = epoch.Format(time.RFC3339)
	if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stepOnce(t, p, client, epoch.Add(time.Minute))
	if _, err := client.CoreV1().Pods("default").Get(ctx, "ds", metav1.GetOptions{}); err == nil {
		t.Error("a pod of a terminated node is still there")
	}
	if readyStatus(node(t, client, "a")) == corev1.ConditionTrue {
		t.Error("a terminated node became Ready")
	}
}

// Run, on watches: a node goes Ready by itself.
func TestRun(t *testing.T) {
	client := fake.NewClientset()
	p := &Provider{Client: client, Catalog: testCatalog(), ReadyAfter: 50 * time.Millisecond, Interval: 10 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	if _, err := p.Create(ctx, &nodeplan.NodeClaim{Name: "a", InstanceTypeOptions: []string{"m.large"}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for readyStatus(node(t, client, "a")) != corev1.ConditionTrue {
		if time.Now().After(deadline) {
			t.Fatal("the node is not Ready after 10s (ReadyAfter 50ms)")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil after cancel", err)
	}
}
