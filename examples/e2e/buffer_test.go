package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

// TestCapacityBufferKeepsRoom: a CapacityBuffer (autoscaling.x-k8s.io/v1beta1, Karpenter
// v1.14's CRD) of two pod-sized slots keeps that room free on the real API server: a node is
// launched for it with no pod pending and nothing binds to it; two real pods of that size take
// the room at once, without a launch; the buffer is replenished with a node that stays empty
// past consolidateAfter; deleting the buffer lets that node go.
func TestCapacityBufferKeepsRoom(t *testing.T) {
	w := newWorld(t, "buffers", "buffer-lab")
	ctx := context.Background()
	w.applyLab()
	defer w.deleteLab(labPoolName)
	// consolidateAfter 1s: an empty node not held by the buffer would go within seconds.
	pools := w.dyn.Resource(controller.NodePoolGVR)
	u, err := pools.Get(ctx, labPoolName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(u.Object, "1s", "spec", "disruption", "consolidateAfter")
	if _, err := pools.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stop := w.controllerWith("a", func(c *controller.Controller) { c.CapacityBuffers = true })
	defer stop()
	defer w.cleanUp("web")

	// A slot: a 3-CPU pod of the lab (it selects the lab pool's label); two fill most of a
	// 2xlarge.
	slot := w.labDeployment("web", "my-team")
	slot.Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("3")
	if _, err := w.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.client.CoreV1().PodTemplates(w.ns).Create(ctx, &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "slot", Namespace: w.ns}, Template: slot.Spec.Template}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	buffers := w.dyn.Resource(controller.CapacityBufferGVR).Namespace(w.ns)
	buffer := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
		"metadata": map[string]any{"name": "headroom", "namespace": w.ns},
		"spec":     map[string]any{"podTemplateRef": map[string]any{"name": "slot"}, "replicas": int64(2)},
	}}
	if _, err := buffers.Create(ctx, buffer, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the CapacityBuffer (Karpenter's CRD): %v", err)
	}
	status := func() (int64, map[string]string) {
		u, err := buffers.Get(ctx, "headroom", metav1.GetOptions{})
		if err != nil {
			return 0, nil
		}
		replicas, _, _ := unstructured.NestedInt64(u.Object, "status", "replicas")
		conds := map[string]string{}
		list, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range list {
			if m, ok := c.(map[string]any); ok {
				conds[m["type"].(string)] = m["status"].(string) + " " + m["reason"].(string)
			}
		}
		return replicas, conds
	}
	readyClaims := func() int {
		n := 0
		for _, c := range w.nodeClaimsOf(labPoolName) {
			if !c.Deleting && c.is(controller.CondReady) {
				n++
			}
		}
		return n
	}
	w.waitFor(90*time.Second, "a node for the buffer, its slots fitting", func() bool {
		_, conds := status()
		return readyClaims() == 1 && strings.HasPrefix(conds["Provisioning"], "True FitsExistingCapacity")
	})
	if replicas, conds := status(); replicas != 2 || !strings.HasPrefix(conds["ReadyForProvisioning"], "True") {
		t.Errorf("buffer status: replicas %d, conditions %v; want 2 and ReadyForProvisioning True", replicas, conds)
	}
	if pods, _ := w.client.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{}); len(pods.Items) != 0 {
		t.Errorf("%d pods exist; a buffer's slots are never created", len(pods.Items))
	}
	room := w.nodeClaimsOf(labPoolName)[0].NodeName

	// Two real pods of the slot's size take the room at once: kube-scheduler binds them to
	// the buffer's node, and nothing was launched for them.
	fleets := w.ec2.Calls("CreateFleet")
	if err := w.deps.Create(ctx, slot); err != nil {
		t.Fatal(err)
	}
	w.scale("web", 2)
	w.waitRunning("web", 2, 30*time.Second)
	if got := w.ec2.Calls("CreateFleet"); got != fleets {
		t.Errorf("%d launches before the pods ran; they should have taken the buffer's room", got-fleets)
	}
	for _, p := range w.pods("web") {
		if p.Spec.NodeName != room {
			t.Errorf("pod %s on %s, want the buffer's node %s", p.Name, p.Spec.NodeName, room)
		}
	}

	// Replenished: a second node, empty, kept past consolidateAfter (1s) for ten disruption
	// passes.
	w.waitFor(90*time.Second, "the buffer replenished on a new node", func() bool {
		_, conds := status()
		return readyClaims() == 2 && strings.HasPrefix(conds["Provisioning"], "True FitsExistingCapacity")
	})
	hold := time.Now().Add(20 * time.Second)
	for time.Now().Before(hold) {
		if n := len(w.liveInstances()); n != 2 {
			t.Fatalf("%d instances while the buffer holds its room, want 2\n%s", n, w.dump())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := buffers.Delete(ctx, "headroom", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitFor(60*time.Second, "the spare node consolidated once the buffer is gone", func() bool {
		return len(w.liveInstances()) == 1 && w.running("web") == 2
	})
}
