package scheduling

import (
	"context"
	"fmt"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/internal/apiserverpod"
)

// Pods as the API server returns them carry fields nobody wrote (defaults, admission plugins,
// the ReplicaSet controller's metadata, the scheduler's status). None of them may change a plan.

func TestAPIServerShapedReplicasPlanAsBarePods(t *testing.T) {
	catalog := loadCatalog(t)
	pool := []nodeplan.NodePool{{Name: "default"}}
	bare := pods("inflate", 1000, "1", "1536Mi")
	shaped := apiserverpod.ShapeAll(bare)
	want, err := Solve(context.Background(), Input{Pods: bare, NodePools: pool, InstanceTypes: catalog, DaemonSets: testDaemonSets()})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Solve(context.Background(), Input{Pods: shaped, NodePools: pool, InstanceTypes: catalog, DaemonSets: testDaemonSets()})
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(summary(want), summary(got)); diff != "" {
		t.Errorf("Solve(1,000 API-server-shaped replicas) differs from the bare pods' plan (-bare +shaped):\n%s", diff)
	}
	if len(got.NodeClaims) > 200 {
		t.Errorf("Solve(1,000 API-server-shaped replicas) = %d nodes; the replicas were not grouped", len(got.NodeClaims))
	}
}

func TestGroupPodsIgnoresAPIServerFields(t *testing.T) {
	bare := mixedPods(500)
	want := len(groupPods(bare, nil, nil, nil))
	if got := len(groupPods(apiserverpod.ShapeAll(bare), nil, nil, nil)); got != want {
		t.Errorf("groupPods(API-server-shaped mixed pods) = %d groups, want %d as for the bare pods", got, want)
	}
}

// defaulted are the fields the API server, its admission plugins, the ReplicaSet controller and
// kube-scheduler set on a pod, each as a mutation with a random value. Every one of them leaves
// scheduling unchanged.
var defaulted = []struct {
	name string
	set  func(t *rapid.T, p *corev1.Pod, i int)
}{
	{"defaultTolerationSeconds", func(t *rapid.T, p *corev1.Pod, i int) {
		secs := rapid.Int64Range(0, 600).Draw(t, "tolerationSeconds")
		for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
			s := secs
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &s})
		}
	}},
	{"tolerationOrderAndDuplicates", func(t *rapid.T, p *corev1.Pod, i int) {
		s := int64(i)
		p.Spec.Tolerations = append([]corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &s}},
			append(p.Spec.Tolerations, corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})...)
	}},
	{"priority", func(t *rapid.T, p *corev1.Pod, i int) { zero := int32(0); p.Spec.Priority = &zero }},
	{"preemptionPolicy", func(t *rapid.T, p *corev1.Pod, i int) {
		pp := rapid.SampledFrom([]corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}).Draw(t, "preemption")
		p.Spec.PreemptionPolicy = &pp
	}},
	{"schedulerName", func(t *rapid.T, p *corev1.Pod, i int) { p.Spec.SchedulerName = corev1.DefaultSchedulerName }},
	{"enableServiceLinks", func(t *rapid.T, p *corev1.Pod, i int) {
		b := rapid.Bool().Draw(t, "links")
		p.Spec.EnableServiceLinks = &b
	}},
	{"dnsPolicy", func(t *rapid.T, p *corev1.Pod, i int) { p.Spec.DNSPolicy = corev1.DNSClusterFirst }},
	{"restartPolicy", func(t *rapid.T, p *corev1.Pod, i int) { p.Spec.RestartPolicy = corev1.RestartPolicyAlways }},
	{"terminationGracePeriodSeconds", func(t *rapid.T, p *corev1.Pod, i int) {
		s := rapid.Int64Range(0, 3600).Draw(t, "grace")
		p.Spec.TerminationGracePeriodSeconds = &s
	}},
	{"serviceAccountName", func(t *rapid.T, p *corev1.Pod, i int) {
		p.Spec.ServiceAccountName = "default"
		p.Spec.DeprecatedServiceAccount = "default"
	}},
	{"securityContext", func(t *rapid.T, p *corev1.Pod, i int) { p.Spec.SecurityContext = &corev1.PodSecurityContext{} }},
	{"containerDefaults", func(t *rapid.T, p *corev1.Pod, i int) {
		for j := range p.Spec.Containers {
			c := &p.Spec.Containers[j]
			c.ImagePullPolicy = corev1.PullIfNotPresent
			c.TerminationMessagePath = corev1.TerminationMessagePathDefault
			c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: fmt.Sprintf("kube-api-access-%d", i), ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"})
		}
	}},
	{"managedFields", func(t *rapid.T, p *corev1.Pod, i int) {
		now := metav1.NewTime(apiserverpod.Created)
		p.ManagedFields = append(p.ManagedFields, metav1.ManagedFieldsEntry{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: "v1", Time: &now, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fmt.Sprintf(`{"f:metadata":{"f:uid-%d":{}}}`, i))}})
	}},
	{"identity", func(t *rapid.T, p *corev1.Pod, i int) {
		p.UID = types.UID(fmt.Sprintf("uid-%d-%d", i, rapid.IntRange(0, 1<<20).Draw(t, "uid")))
		p.ResourceVersion = fmt.Sprint(rapid.IntRange(1, 1<<30).Draw(t, "rv"))
		p.CreationTimestamp = metav1.NewTime(apiserverpod.Created.Add(time.Duration(rapid.Int64Range(0, 1e12).Draw(t, "created"))))
		p.Generation = 1
	}},
	{"ownerReferences", func(t *rapid.T, p *corev1.Pod, i int) {
		yes := true
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet",
			Name: p.Labels["app"] + "-5d8f7b9c4", UID: types.UID(fmt.Sprintf("owner-%d", i)), Controller: &yes, BlockOwnerDeletion: &yes})
	}},
	{"generateName", func(t *rapid.T, p *corev1.Pod, i int) { p.GenerateName = p.Labels["app"] + "-5d8f7b9c4-" }},
	{"podTemplateHashLabel", func(t *rapid.T, p *corev1.Pod, i int) { p.Labels["pod-template-hash"] = "5d8f7b9c4" }},
	{"status", func(t *rapid.T, p *corev1.Pod, i int) {
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: fmt.Sprintf("0/%d nodes are available", i), LastTransitionTime: metav1.NewTime(apiserverpod.Created)}}}
	}},
	{"requestsRoundedAndLimits", func(t *rapid.T, p *corev1.Pod, i int) {
		// The same amounts written differently ("1" and "1000m") are the same request.
		for j := range p.Spec.Containers {
			r := p.Spec.Containers[j].Resources.Requests
			for k, q := range r {
				r[k] = *resourceMilli(q.MilliValue())
			}
		}
	}},
}

func TestPropertyAPIServerFieldsLeavePlanUnchanged(t *testing.T) {
	catalog := loadCatalog(t)
	rapid.Check(t, func(t *rapid.T) {
		shapes := []struct{ cpu, mem string }{{"250m", "512Mi"}, {"1", "2Gi"}, {"2", "1Gi"}, {"500m", "4Gi"}}
		var bare []*corev1.Pod
		for s := range rapid.IntRange(1, len(shapes)).Draw(t, "deployments") {
			bare = append(bare, pods(fmt.Sprintf("app%d", s), rapid.IntRange(1, 40).Draw(t, "replicas"), shapes[s].cpu, shapes[s].mem)...)
		}
		if rapid.Bool().Draw(t, "spread") {
			for _, p := range bare {
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: nodeplan.LabelZone,
					WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": p.Labels["app"]}}}}
			}
		}
		pool := []nodeplan.NodePool{{Name: "default"}}
		if rapid.Bool().Draw(t, "tainted pool") {
			// A second pool only the first deployment tolerates: tolerations matter here.
			taint := corev1.Taint{Key: "dedicated", Value: "app0", Effect: corev1.TaintEffectNoSchedule}
			pool = append(pool, nodeplan.NodePool{Name: "dedicated", Weight: 10, Template: nodeplan.NodeClaimTemplate{Taints: []corev1.Taint{taint}}})
			for _, p := range bare {
				if p.Labels["app"] == "app0" {
					p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "app0", Effect: corev1.TaintEffectNoSchedule}}
				}
			}
		}
		shaped := make([]*corev1.Pod, len(bare))
		for i, p := range bare {
			shaped[i] = p.DeepCopy()
			for _, f := range defaulted {
				if rapid.Bool().Draw(t, f.name) {
					f.set(t, shaped[i], i)
				}
			}
		}
		if rapid.Bool().Draw(t, "whole shape") {
			shaped = apiserverpod.ShapeAll(bare)
		}
		want, err := Solve(context.Background(), Input{Pods: bare, NodePools: pool, InstanceTypes: catalog})
		if err != nil {
			t.Fatal(err)
		}
		got, err := Solve(context.Background(), Input{Pods: shaped, NodePools: pool, InstanceTypes: catalog})
		if err != nil {
			t.Fatal(err)
		}
		if diff := gocmp.Diff(summary(want), summary(got)); diff != "" {
			t.Fatalf("Solve() with API-server fields differs from the bare pods' plan (-bare +with fields):\n%s", diff)
		}
		if g, w := len(groupPods(shaped, []string{"app"}, nil, nil)), len(groupPods(bare, []string{"app"}, nil, nil)); g != w {
			t.Fatalf("groupPods() with API-server fields = %d groups, want %d", g, w)
		}
	})
}

func resourceMilli(m int64) *resource.Quantity {
	return resource.NewMilliQuantity(m, resource.DecimalSI)
}
