package controller_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

// withRecorder makes the controller record its Kubernetes Events into the simulated API
// server, from controller.EventSource, as the binary does.
func (h *harness) withRecorder(c *controller.Controller) {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: h.w.Client.CoreV1().Events("")})
	h.t.Cleanup(b.Shutdown)
	c.Recorder = b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: controller.EventSource})
}

// events returns the Events recorded on objects of kind named name.
func (h *harness) events(kind, name string) []corev1.Event {
	list, err := h.w.Client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// hasEvent reports whether kind/name has an event of type typ, reason and message, from
// Karpenter's source — what `kubectl describe` shows and what seed 001's readers look for
// (Normal DisruptionBlocked from karpenter, a sentence naming the do-not-disrupt annotation).
func (h *harness) hasEvent(kind, name, typ, reason, message string) bool {
	for _, e := range h.events(kind, name) {
		if e.Type == typ && e.Reason == reason && e.Message == message && e.Source.Component == "karpenter" {
			return true
		}
	}
	return false
}

func (h *harness) describeEvents(kind, name string) string {
	var b strings.Builder
	for _, e := range h.events(kind, name) {
		b.WriteString("\n  " + e.Type + " " + e.Reason + " " + e.Source.Component + " " + e.Message)
	}
	return b.String()
}

// TestDisruptionBlockedEvents: a node kept by do-not-disrupt — on the node, then on its pod —
// gets Karpenter's DisruptionBlocked event and sentence on the Node and on its NodeClaim.
func TestDisruptionBlockedEvents(t *testing.T) {
	h := newHarness(t)
	h.start("a", h.withRecorder)
	h.deploy("kept", 1, 0)
	h.until(time.Minute, "the pod running", func() bool { return h.running() == 1 })
	claim := h.instances()[0]
	node := h.nodeNameOf(claim.Status.ProviderID)
	ctx := context.Background()

	// The node annotated: scale to 0, the empty node stays.
	n := h.node(node)
	n.Annotations = map[string]string{nodeplan.AnnotationDoNotDisrupt: "true"}
	if _, err := h.w.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.w.Deployments.Scale(ctx, "test", "kept", 0); err != nil {
		t.Fatal(err)
	}
	const nodeMsg = `Disruption is blocked through the "karpenter.sh/do-not-disrupt" annotation`
	h.until(2*time.Minute, "DisruptionBlocked on the node and its NodeClaim", func() bool {
		return h.hasEvent("Node", node, corev1.EventTypeNormal, "DisruptionBlocked", nodeMsg) &&
			h.hasEvent("NodeClaim", claim.Name, corev1.EventTypeNormal, "DisruptionBlocked", nodeMsg)
	})

	// The pod annotated instead: the node, not empty, is kept for its pod.
	n = h.node(node)
	delete(n.Annotations, nodeplan.AnnotationDoNotDisrupt)
	if _, err := h.w.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "precious", Namespace: "test",
			Annotations: map[string]string{nodeplan.AnnotationDoNotDisrupt: "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid",
				Controller: new(true)}}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	if _, err := h.w.Client.CoreV1().Pods("test").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const podMsg = `Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=test/precious)`
	h.until(2*time.Minute, "DisruptionBlocked naming the pod", func() bool {
		return h.hasEvent("Node", node, corev1.EventTypeNormal, "DisruptionBlocked", podMsg) &&
			h.hasEvent("NodeClaim", claim.Name, corev1.EventTypeNormal, "DisruptionBlocked", podMsg)
	})
	for _, e := range h.events("Node", node) {
		if strings.HasPrefix(e.Message, "Cannot disrupt") || e.Source.Component != "karpenter" {
			t.Errorf("node event %s %q from %q: want Karpenter's sentence from karpenter", e.Reason, e.Message, e.Source.Component)
		}
	}
}

// TestSpotInterruptedEvents: a spot interruption warning is recorded as the AWS provider
// records it — SpotInterrupted, then TerminatingOnInterruption — on the Node and the NodeClaim.
func TestSpotInterruptedEvents(t *testing.T) {
	h := newHarness(t)
	h.start("a", h.withRecorder)
	h.deploy("inflate", 1, 0)
	h.until(time.Minute, "the pod running", func() bool { return h.running() == 1 })
	victim := h.instances()[0]
	node := h.nodeNameOf(victim.Status.ProviderID)
	if err := h.w.Cloud.Interrupt(victim.Status.ProviderID, cloudprovider.InterruptionSpot, h.w.Clock.Now().Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ kind, name, reason, msg string }{
		{"Node", node, "SpotInterrupted", "Spot interruption warning was triggered"},
		{"NodeClaim", victim.Name, "SpotInterrupted", "Spot interruption warning was triggered"},
		{"Node", node, "TerminatingOnInterruption", "Interruption triggered termination for the Node"},
		{"NodeClaim", victim.Name, "TerminatingOnInterruption", "Interruption triggered termination for the NodeClaim"},
	} {
		h.until(time.Minute, c.kind+" "+c.reason, func() bool {
			return h.hasEvent(c.kind, c.name, corev1.EventTypeWarning, c.reason, c.msg)
		})
	}
	for _, e := range h.events("Node", node) {
		if e.Reason == "SpotInterruption" || e.Reason == "DisruptionTerminating" {
			t.Errorf("node event %s %q: not Karpenter's for an interruption%s", e.Reason, e.Message, h.describeEvents("Node", node))
		}
	}
}

// nodeNameOf returns the name of the Node with providerID, waiting for it to register.
func (h *harness) nodeNameOf(providerID string) string {
	h.t.Helper()
	var name string
	h.until(time.Minute, "the node registered", func() bool {
		list, err := h.w.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			h.t.Fatal(err)
		}
		for _, n := range list.Items {
			if n.Spec.ProviderID == providerID {
				name = n.Name
				return true
			}
		}
		return false
	})
	return name
}
