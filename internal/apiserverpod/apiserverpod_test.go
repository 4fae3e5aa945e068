package apiserverpod

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestShapeDefaultsAndAdmission(t *testing.T) {
	in := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-3", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500u")}},
			Ports:     []corev1.ContainerPort{{ContainerPort: 80}}}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MatchLabelKeys: []string{"pod-template-hash"}}}},
	}
	got := Shape(in)
	hash := got.Labels["pod-template-hash"]
	if hash == "" || got.GenerateName != "web-"+hash+"-" || len(got.Name) != len(got.GenerateName)+5 {
		t.Errorf("Shape() name = %q, generateName %q, hash %q; want web-<hash>-<5 chars>", got.Name, got.GenerateName, hash)
	}
	secs := int64(300)
	wantTolerations := []corev1.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs},
	}
	if diff := cmp.Diff(wantTolerations, got.Spec.Tolerations); diff != "" {
		t.Errorf("Shape() tolerations (-want +got):\n%s", diff)
	}
	s := got.Spec
	checks := []struct {
		field     string
		got, want any
	}{
		{"priority", *s.Priority, int32(0)},
		{"preemptionPolicy", *s.PreemptionPolicy, corev1.PreemptLowerPriority},
		{"schedulerName", s.SchedulerName, "default-scheduler"},
		{"enableServiceLinks", *s.EnableServiceLinks, true},
		{"dnsPolicy", s.DNSPolicy, corev1.DNSClusterFirst},
		{"restartPolicy", s.RestartPolicy, corev1.RestartPolicyAlways},
		{"terminationGracePeriodSeconds", *s.TerminationGracePeriodSeconds, int64(30)},
		{"serviceAccountName", s.ServiceAccountName, "default"},
		{"imagePullPolicy", s.Containers[0].ImagePullPolicy, corev1.PullIfNotPresent},
		{"terminationMessagePath", s.Containers[0].TerminationMessagePath, "/dev/termination-log"},
		{"port protocol", s.Containers[0].Ports[0].Protocol, corev1.ProtocolTCP},
		{"cpu request from limit, rounded up to 2m", s.Containers[0].Resources.Requests.Cpu().String(), "2m"},
		{"token mount", s.Containers[0].VolumeMounts[0].MountPath, "/var/run/secrets/kubernetes.io/serviceaccount"},
		{"token volume", s.Volumes[0].Name, s.Containers[0].VolumeMounts[0].Name},
		{"spread selector merged", len(s.TopologySpreadConstraints[0].LabelSelector.MatchExpressions), 1},
		{"qosClass", got.Status.QOSClass, corev1.PodQOSBurstable},
		{"phase", got.Status.Phase, corev1.PodPending},
		{"PodScheduled reason", got.Status.Conditions[0].Reason, corev1.PodReasonUnschedulable},
		{"owner", got.OwnerReferences[0].Kind + "/" + got.OwnerReferences[0].Name, "ReplicaSet/web-" + hash},
		{"managedFields", len(got.ManagedFields), 2},
		{"generation", got.Generation, int64(1)},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("Shape().%s (-want +got):\n%s", c.field, diff)
		}
	}
	if diff := cmp.Diff(got, Shape(in)); diff != "" {
		t.Errorf("Shape() is not deterministic (-first +second):\n%s", diff)
	}
	if in.Spec.Tolerations != nil || in.Spec.Priority != nil {
		t.Errorf("Shape() modified its argument")
	}
}

func TestShapeAllNamesDistinct(t *testing.T) {
	var pods []*corev1.Pod
	for i := range 20000 {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p-" + string(rune('a'+i%26)) + "-" + itoa(i), Labels: map[string]string{"app": "p"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}})
	}
	seen := map[string]bool{}
	for _, p := range ShapeAll(pods) {
		if seen[p.Name] {
			t.Fatalf("ShapeAll() gave two pods the name %s", p.Name)
		}
		seen[p.Name] = true
	}
}

func itoa(i int) string { return resource.NewQuantity(int64(i), resource.DecimalSI).String() }
