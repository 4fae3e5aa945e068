package nodeplan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestToleratesTaint(t *testing.T) {
	gpu := corev1.Taint{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}
	level := func(v string) corev1.Taint {
		return corev1.Taint{Key: "example.com/level", Value: v, Effect: corev1.TaintEffectNoSchedule}
	}
	tests := []struct {
		name  string
		tol   corev1.Toleration
		taint corev1.Taint
		want  bool
	}{
		{"Equal, same value", corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}, gpu, true},
		{"no operator means Equal", corev1.Toleration{Key: "nvidia.com/gpu", Value: "true"}, gpu, true},
		{"Equal, other value", corev1.Toleration{Key: "nvidia.com/gpu", Value: "false"}, gpu, false},
		{"Equal, other key", corev1.Toleration{Key: "dedicated", Value: "true"}, gpu, false},
		{"Equal, empty key matches nothing", corev1.Toleration{Value: "true"}, gpu, false},
		{"Exists, any value", corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}, gpu, true},
		{"Exists, empty key tolerates every taint", corev1.Toleration{Operator: corev1.TolerationOpExists}, gpu, true},
		{"Exists, empty key and effect", corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}, gpu, false},
		{"empty effect matches every effect", corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists},
			corev1.Taint{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoExecute}, true},
		{"NoSchedule does not tolerate NoExecute", corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
			corev1.Taint{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoExecute}, false},
		{"PreferNoSchedule", corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectPreferNoSchedule},
			corev1.Taint{Key: "k", Effect: corev1.TaintEffectPreferNoSchedule}, true},
		{"NoExecute", corev1.Toleration{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute},
			corev1.Taint{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute}, true},
		{"Gt: taint above", corev1.Toleration{Key: "example.com/level", Operator: corev1.TolerationOpGt, Value: "5"}, level("6"), true},
		{"Gt: taint equal", corev1.Toleration{Key: "example.com/level", Operator: corev1.TolerationOpGt, Value: "5"}, level("5"), false},
		{"Gt: taint below", corev1.Toleration{Key: "example.com/level", Operator: corev1.TolerationOpGt, Value: "5"}, level("-3"), false},
		{"Lt: taint below", corev1.Toleration{Key: "example.com/level", Operator: corev1.TolerationOpLt, Value: "5"}, level("4"), true},
		{"Lt: taint equal", corev1.Toleration{Key: "example.com/level", Operator: corev1.TolerationOpLt, Value: "5"}, level("5"), false},
		{"Lt: negative", corev1.Toleration{Key: "example.com/level", Operator: corev1.TolerationOpLt, Value: "0"}, level("-1"), true},
		{"Gt: non-integer taint", corev1.Toleration{Key: "example.com/level", Operator: corev1.TolerationOpGt, Value: "5"}, level("high"), false},
		{"Gt: non-integer toleration", corev1.Toleration{Key: "example.com/level", Operator: corev1.TolerationOpGt, Value: "five"}, level("6"), false},
		{"Gt: leading zero is not an integer", corev1.Toleration{Key: "example.com/level", Operator: corev1.TolerationOpGt, Value: "5"}, level("06"), false},
		{"Gt: plus sign is not an integer", corev1.Toleration{Key: "example.com/level", Operator: corev1.TolerationOpGt, Value: "+5"}, level("6"), false},
		{"Gt: -0 is not an integer", corev1.Toleration{Key: "example.com/level", Operator: corev1.TolerationOpLt, Value: "1"}, level("-0"), false},
		{"Gt: zero", corev1.Toleration{Key: "example.com/level", Operator: corev1.TolerationOpLt, Value: "1"}, level("0"), true},
		{"Gt: empty key", corev1.Toleration{Operator: corev1.TolerationOpGt, Value: "1"}, level("6"), false},
		{"unknown operator", corev1.Toleration{Key: "nvidia.com/gpu", Operator: "Like", Value: "true"}, gpu, false},
	}
	for _, tt := range tests {
		if got := ToleratesTaint(tt.tol, tt.taint); got != tt.want {
			t.Errorf("%s: ToleratesTaint(%+v, %s) = %v, want %v", tt.name, tt.tol, TaintString(tt.taint), got, tt.want)
		}
	}
}

func TestUntoleratedTaint(t *testing.T) {
	taints := []corev1.Taint{
		{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule},
		{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule},
		{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoExecute},
	}
	tests := []struct {
		tols   []corev1.Toleration
		want   string
		wantOK bool
	}{
		{nil, "nvidia.com/gpu=true:NoSchedule", true},
		{[]corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}, "dedicated=ml:NoExecute", true},
		{[]corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}, {Key: "dedicated", Value: "ml"}}, ":", false},
		{[]corev1.Toleration{{Operator: corev1.TolerationOpExists}}, ":", false},
	}
	for _, tt := range tests {
		got, ok := UntoleratedTaint(tt.tols, taints)
		if TaintString(got) != tt.want || ok != tt.wantOK {
			t.Errorf("UntoleratedTaint(%v) = %s, %v; want %s, %v", tt.tols, TaintString(got), ok, tt.want, tt.wantOK)
		}
	}
}

func TestTaintString(t *testing.T) {
	tests := []struct {
		taint corev1.Taint
		want  string
	}{
		{corev1.Taint{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}, "nvidia.com/gpu=true:NoSchedule"},
		{corev1.Taint{Key: "karpenter.sh/disrupted", Effect: corev1.TaintEffectNoSchedule}, "karpenter.sh/disrupted:NoSchedule"},
	}
	for _, tt := range tests {
		if got := TaintString(tt.taint); got != tt.want {
			t.Errorf("TaintString(%+v) = %q, want %q", tt.taint, got, tt.want)
		}
	}
}

func TestNodeTaints(t *testing.T) {
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	notReadyExec := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
	unreachableExec := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	uninit := corev1.Taint{Key: TaintUninitialized, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	gate := corev1.Taint{Key: "readiness.k8s.io/cni", Effect: corev1.TaintEffectNoSchedule}
	cni := corev1.Taint{Key: "example.com/cni", Effect: corev1.TaintEffectNoSchedule}
	gpu := corev1.Taint{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}
	all := []corev1.Taint{notReady, notReadyExec, unreachableExec, uninit, gate, cni, gpu}
	startup := []corev1.Taint{{Key: "example.com/cni", Effect: corev1.TaintEffectNoSchedule}}
	node := func(labels map[string]string) *corev1.Node {
		n := &corev1.Node{}
		n.Labels, n.Spec.Taints = labels, all
		return n
	}
	tests := []struct {
		name string
		node *corev1.Node
		want []corev1.Taint
	}{
		{"pool's node coming up", node(map[string]string{LabelNodePool: "p"}), []corev1.Taint{unreachableExec, gpu}},
		{"pool's node not initialized", node(map[string]string{LabelNodePool: "p", LabelInitialized: "false"}), []corev1.Taint{unreachableExec, gpu}},
		{"pool's node initialized", node(map[string]string{LabelNodePool: "p", LabelInitialized: "true"}), all},
		{"node no pool launched", node(map[string]string{LabelInitialized: "false"}), all},
	}
	for _, tc := range tests {
		got := NodeTaints(tc.node, startup)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("NodeTaints(%s) mismatch (-want +got):\n%s", tc.name, diff)
		}
	}
}
