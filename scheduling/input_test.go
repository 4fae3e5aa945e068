package scheduling

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidatePods(t *testing.T) {
	named := func(ns, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want []string
	}{
		{"none", nil, nil},
		{"distinct", []*corev1.Pod{named("a", "web-0"), named("a", "web-1"), named("b", "web-0")}, nil},
		{"twice", []*corev1.Pod{named("a", "web-0"), named("a", "web-1"), named("a", "web-0")},
			[]string{"scheduling: pod a/web-0 appears twice in Pods"}},
		{"thrice", []*corev1.Pod{named("a", "x"), named("a", "x"), named("a", "x")},
			[]string{"scheduling: pod a/x appears twice in Pods", "scheduling: pod a/x appears twice in Pods"}},
		{"same key", []*corev1.Pod{named("a", "b/c"), named("a/b", "c")},
			[]string{"scheduling: pod a/b/c appears twice in Pods"}},
		{"in order with nil and unnamed", []*corev1.Pod{named("a", "x"), nil, named("a", "x"), named("a", ""), named("a", "y"), named("a", "y")},
			[]string{"scheduling: Pods[1] is nil", "scheduling: pod a/x appears twice in Pods", "scheduling: Pods[3] has no name",
				"scheduling: pod a/y appears twice in Pods"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, err := range validatePods(tc.pods) {
				got = append(got, err.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("validatePods (-want +got):\n%s", diff)
			}
		})
	}
}
