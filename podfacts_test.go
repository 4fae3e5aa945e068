package nodeplan

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodFacts(t *testing.T) {
	yes := true
	owned := func(kind string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: "x", Controller: &yes}}}}
	}
	mirror := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "abc"}}}
	tests := []struct {
		name                     string
		pod                      *corev1.Pod
		terminal, belongs, mirro bool
		daemonSet                string
	}{
		{"plain", &corev1.Pod{}, false, false, false, ""},
		{"succeeded", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, true, false, false, ""},
		{"failed", &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}, true, false, false, ""},
		{"daemonset", owned("DaemonSet"), false, true, false, "x"},
		{"node-owned", owned("Node"), false, true, false, ""},
		{"replicaset", owned("ReplicaSet"), false, false, false, ""},
		{"mirror", mirror, false, true, true, ""},
		{"daemonset owner without the controller mark", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "y"}}}}, false, true, false, "y"},
	}
	for _, tt := range tests {
		if got := PodTerminal(tt.pod); got != tt.terminal {
			t.Errorf("PodTerminal(%s) = %v, want %v", tt.name, got, tt.terminal)
		}
		if got := PodBelongsToNode(tt.pod); got != tt.belongs {
			t.Errorf("PodBelongsToNode(%s) = %v, want %v", tt.name, got, tt.belongs)
		}
		if got := MirrorPod(tt.pod); got != tt.mirro {
			t.Errorf("MirrorPod(%s) = %v, want %v", tt.name, got, tt.mirro)
		}
		if got := DaemonSetOf(tt.pod); got != tt.daemonSet {
			t.Errorf("DaemonSetOf(%s) = %q, want %q", tt.name, got, tt.daemonSet)
		}
	}
}

func TestPodStart(t *testing.T) {
	created := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	started := created.Add(90 * time.Second)
	tests := []struct {
		name string
		pod  *corev1.Pod
		want time.Time
	}{
		{"started", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
			Status: corev1.PodStatus{StartTime: &metav1.Time{Time: started}}}, started},
		{"not started yet: its creation", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}, created},
	}
	for _, tt := range tests {
		if got := PodStart(tt.pod); !got.Equal(tt.want) {
			t.Errorf("PodStart(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPodHostPorts(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Ports: []corev1.ContainerPort{{HostPort: 9200, ContainerPort: 9200}}}, // ordinary: exited before the pod runs
			{RestartPolicy: &always, Ports: []corev1.ContainerPort{{HostPort: 9100, ContainerPort: 9100}}},
		},
		Containers: []corev1.Container{{Ports: []corev1.ContainerPort{
			{HostPort: 80, ContainerPort: 8080}, {ContainerPort: 9090}, {HostPort: 53, Protocol: corev1.ProtocolUDP, HostIP: "10.0.0.1"},
			{HostPort: 80, ContainerPort: 8080},
		}}},
	}}
	want := []HostPort{{"10.0.0.1", 53, corev1.ProtocolUDP}, {"0.0.0.0", 80, corev1.ProtocolTCP}, {"0.0.0.0", 9100, corev1.ProtocolTCP}}
	if diff := cmp.Diff(want, PodHostPorts(pod)); diff != "" {
		t.Errorf("PodHostPorts() (-want +got):\n%s", diff)
	}
	pod.Spec.HostNetwork = true
	if got := PodHostPorts(pod); len(got) != 4 || got[3].Port != 9100 || got[2].Port != 9090 {
		t.Errorf("PodHostPorts(hostNetwork) = %v, want container port 9090 as a host port too", got)
	}
	if !(HostPort{"0.0.0.0", 80, corev1.ProtocolTCP}).Conflicts(HostPort{"10.0.0.2", 80, corev1.ProtocolTCP}) ||
		(HostPort{"10.0.0.1", 80, corev1.ProtocolTCP}).Conflicts(HostPort{"10.0.0.2", 80, corev1.ProtocolTCP}) ||
		(HostPort{"0.0.0.0", 80, corev1.ProtocolTCP}).Conflicts(HostPort{"0.0.0.0", 80, corev1.ProtocolUDP}) {
		t.Errorf("HostPort.Conflicts disagrees with kube-scheduler's NodePorts rule")
	}
}

func TestPodAffinityTerms(t *testing.T) {
	term := func(key string) corev1.PodAffinityTerm { return corev1.PodAffinityTerm{TopologyKey: key} }
	pod := &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{
		PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term("a")},
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 5, PodAffinityTerm: term("b")}}},
		PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term("c")}},
	}}}
	want := []PodAffinityTerm{{PodAffinityTerm: term("a"), Required: true}, {PodAffinityTerm: term("b"), Weight: 5},
		{PodAffinityTerm: term("c"), Anti: true, Required: true}}
	if diff := cmp.Diff(want, PodAffinityTerms(pod)); diff != "" {
		t.Errorf("PodAffinityTerms() (-want +got):\n%s", diff)
	}
}
