package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestOnPodOpensBatch: which pod events open a provisioning batch. The scheduler's second
// verdict on a pod already pending is one — nodes came up and the pod fits none of them —
// while an update that leaves the verdict as it was is not.
func TestOnPodOpensBatch(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 9, 1, 9, 0, 0, 0, time.UTC))
	pod := func(nodeName, msg string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: nodeName}}
		if msg != "" {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: msg, LastTransitionTime: at}}
		}
		return p
	}
	relabelled := pod("", "0/3 nodes are available: 3 Insufficient cpu.")
	relabelled.Labels = map[string]string{"x": "y"}
	for _, tc := range []struct {
		name     string
		old, obj *corev1.Pod
		want     bool
	}{
		{"created unschedulable", nil, pod("", "0/0 nodes are available"), true},
		{"marked unschedulable", pod("", ""), pod("", "0/0 nodes are available"), true},
		{"tried again on new nodes", pod("", "0/0 nodes are available"), pod("", "0/3 nodes are available: 3 Insufficient cpu."), true},
		{"same verdict, other update", pod("", "0/3 nodes are available: 3 Insufficient cpu."), relabelled, false},
		{"not yet looked at", nil, pod("", ""), false},
		{"bound", pod("", "0/0 nodes are available"), pod("node-a", "0/0 nodes are available"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Controller{Clock: clocktesting.NewFakeClock(at.Time)}
			var old any
			if tc.old != nil {
				old = tc.old
			}
			c.onPod(old, tc.obj)
			c.batch.mu.Lock()
			got := c.batch.open
			c.batch.mu.Unlock()
			if got != tc.want {
				t.Errorf("onPod(%s) opened a batch: %v, want %v", tc.name, got, tc.want)
			}
		})
	}
}
