package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

// slotSpec is a 3-CPU pod of the lab (it selects the lab pool's label).
func slotSpec() corev1.PodSpec {
	return corev1.PodSpec{
		NodeSelector: map[string]string{"eks-team": "my-team"},
		Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}}},
	}
}

func (h *harness) bufferStatus(name string) (replicas int64, conds map[string]string) {
	h.t.Helper()
	u, err := h.w.Dynamic.Resource(controller.CapacityBufferGVR).Namespace("test").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	replicas, _, _ = unstructured.NestedInt64(u.Object, "status", "replicas")
	conds = map[string]string{}
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range list {
		m := c.(map[string]any)
		conds[m["type"].(string)] = m["status"].(string) + " " + m["reason"].(string) + ": " + m["message"].(string)
	}
	return replicas, conds
}

// TestCapacityBuffer: a CapacityBuffer of two 3-CPU slots keeps that room free: a node is
// launched for it with no pod pending and nothing binds to it; a workload of two such pods
// lands on that room at once, with no launch in between; the buffer is then replenished with a
// new node, which stays empty and is not consolidated; deleting the buffer lets it go.
func TestCapacityBuffer(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.startOnCluster("a", func(c *controller.Controller) { c.CapacityBuffers = true })
	if _, err := h.w.Client.CoreV1().PodTemplates("test").Create(ctx, &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "slot", Namespace: "test"},
		Template:   corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: slotSpec()},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	buffer := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
		"metadata": map[string]any{"name": "headroom", "namespace": "test"},
		"spec":     map[string]any{"podTemplateRef": map[string]any{"name": "slot"}, "replicas": int64(2)},
	}}
	if _, err := h.w.Dynamic.Resource(controller.CapacityBufferGVR).Namespace("test").Create(ctx, buffer, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.until(2*time.Minute, "a node for the buffer, and its slots fitting", func() bool {
		_, conds := h.bufferStatus("headroom")
		return h.readyClaims("default") == 1 && strings.HasPrefix(conds["Provisioning"], "True FitsExistingCapacity")
	})
	replicas, conds := h.bufferStatus("headroom")
	if replicas != 2 || conds["ReadyForProvisioning"] != "True Resolved: Pod template resolved successfully" ||
		conds["Provisioning"] != "True FitsExistingCapacity: All 2 virtual pods fit on existing capacity" {
		t.Errorf("buffer status: replicas %d, conditions %v", replicas, conds)
	}
	if pods := h.pods("test"); len(pods) != 0 {
		t.Errorf("%d pods exist; buffer slots must never be created", len(pods))
	}
	if claims := h.poolClaims("default"); len(claims) != 1 {
		t.Fatalf("%d NodeClaims for two slots that fit one node, want 1; logs:\n%s", len(claims), h.logs.String())
	}
	nodeName, _, _ := unstructured.NestedString(h.poolClaims("default")[0].Object, "status", "nodeName")

	replicas2 := int32(2)
	if err := h.w.Deployments.Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "test"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas2, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: slotSpec()}},
	}); err != nil {
		t.Fatal(err)
	}
	h.until(10*time.Second, "the workload running on the buffer's room", func() bool { return h.running() == 2 })
	for _, p := range h.pods("test") {
		if p.Spec.NodeName != nodeName {
			t.Errorf("pod %s on %s, want the buffer's node %s", p.Name, p.Spec.NodeName, nodeName)
		}
	}
	h.until(2*time.Minute, "the buffer replenished", func() bool {
		_, conds := h.bufferStatus("headroom")
		return h.readyClaims("default") == 2 && strings.HasPrefix(conds["Provisioning"], "True FitsExistingCapacity")
	})
	if err := h.w.Advance(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := len(h.instances()); n != 2 {
		t.Fatalf("%d instances 2 minutes later, want 2: the empty node holds the buffer", n)
	}
	if err := h.w.Dynamic.Resource(controller.CapacityBufferGVR).Namespace("test").Delete(ctx, "headroom", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.until(2*time.Minute, "the spare node consolidated once the buffer is gone", func() bool {
		return len(h.instances()) == 1 && h.running() == 2
	})
}
