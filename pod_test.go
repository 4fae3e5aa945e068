package nodeplan

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDoNotDisrupt(t *testing.T) {
	start := time.Date(2026, time.August, 24, 10, 0, 0, 0, time.UTC)
	pod := func(value string, annotated bool, startTime, created time.Time) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", CreationTimestamp: metav1.NewTime(created)}}
		if annotated {
			p.Annotations = map[string]string{AnnotationDoNotDisrupt: value}
		}
		if !startTime.IsZero() {
			p.Status.StartTime = &metav1.Time{Time: startTime}
		}
		return p
	}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		now     time.Time
		want    bool
		wantErr bool
	}{
		{"no annotation", pod("", false, start, start), start, false, false},
		{"true", pod("true", true, start, start), start.Add(1000 * time.Hour), true, false},
		{"true with spaces", pod(" true ", true, start, start), start, true, false},
		{"duration, inside", pod("1h", true, start, start), start.Add(59 * time.Minute), true, false},
		{"duration, at the end", pod("1h", true, start, start), start.Add(time.Hour), false, false},
		{"duration, after", pod("1h", true, start, start), start.Add(2 * time.Hour), false, false},
		{"duration counts from start time, not creation", pod("1h", true, start, start.Add(-5*time.Hour)), start.Add(30 * time.Minute), true, false},
		{"no start time yet: creation time", pod("1h", true, time.Time{}, start), start.Add(30 * time.Minute), true, false},
		{"zero duration", pod("0s", true, start, start), start, false, false},
		{"garbage", pod("yes please", true, start, start), start, false, true},
		{"True is not true", pod("True", true, start, start), start, false, true},
		{"negative duration", pod("-1h", true, start, start), start, false, true},
		{"empty value", pod("", true, start, start), start, false, true},
	}
	for _, tt := range tests {
		if got := DoNotDisrupt(tt.pod, tt.now); got != tt.want {
			t.Errorf("%s: DoNotDisrupt(%q, %v) = %v, want %v", tt.name, tt.pod.Annotations[AnnotationDoNotDisrupt], tt.now, got, tt.want)
		}
		err := DoNotDisruptError(tt.pod)
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: DoNotDisruptError(%q) = %v, want error=%v", tt.name, tt.pod.Annotations[AnnotationDoNotDisrupt], err, tt.wantErr)
		}
		var fe *FieldError
		if err != nil && (!errors.As(err, &fe) || fe.Field != "metadata.annotations[karpenter.sh/do-not-disrupt]") {
			t.Errorf("%s: DoNotDisruptError = %v, want a *FieldError naming the annotation", tt.name, err)
		}
	}
}

func TestNodeDoNotDisrupt(t *testing.T) {
	tests := []struct {
		annotations map[string]string
		want        bool
	}{
		{nil, false},
		{map[string]string{AnnotationDoNotDisrupt: "true"}, true},
		{map[string]string{AnnotationDoNotDisrupt: "false"}, false},
		{map[string]string{AnnotationDoNotDisrupt: "1h"}, false}, // durations are for pods
	}
	for _, tt := range tests {
		if got := NodeDoNotDisrupt(tt.annotations); got != tt.want {
			t.Errorf("NodeDoNotDisrupt(%v) = %v, want %v", tt.annotations, got, tt.want)
		}
	}
}

func TestPodKeysArePodKey(t *testing.T) {
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "no-namespace"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system"}},
		{},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns/with/slash", Name: "ünïcode"}},
	}
	var want []string
	for _, p := range pods {
		want = append(want, PodKey(p))
	}
	if diff := cmp.Diff(want, PodKeys(pods)); diff != "" {
		t.Errorf("PodKeys (-want +got):\n%s", diff)
	}
	if got := PodKeys(nil); len(got) != 0 {
		t.Errorf("PodKeys(nil) = %q, want none", got)
	}
}
