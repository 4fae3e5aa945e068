package controller_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestVolumeZone: a pod whose claim is bound to a volume in us-east-1c gets its node in
// us-east-1c, whatever is cheapest elsewhere; a pod whose claim does not exist launches nothing
// and is reported.
func TestVolumeZone(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-data"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			ClaimRef:               &corev1.ObjectReference{Namespace: "test", Name: "data"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-1"}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.ebs.csi.aws.com/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1c"}}},
			}}}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "test"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-data", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
	if _, err := h.w.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.w.Client.CoreV1().PersistentVolumeClaims("test").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.start("a", nil)
	for _, claim := range []string{"data", "missing"} {
		one := int32(1)
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "db-" + claim, Namespace: "test"},
			Spec: appsv1.DeploymentSpec{
				Replicas: &one,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db-" + claim}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db-" + claim}},
					Spec: corev1.PodSpec{
						NodeSelector: map[string]string{"eks-team": "my-team"},
						Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
						Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
							PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
					},
				},
			},
		}
		if err := h.w.Deployments.Create(ctx, dep); err != nil {
			t.Fatal(err)
		}
	}
	h.until(time.Minute, "a launch", func() bool { return len(h.instances()) == 1 })
	if z := h.instances()[0].Status.Zone; z != "us-east-1c" {
		t.Errorf("node for the pod with a us-east-1c volume launched in %s", z)
	}
	if err := h.w.Advance(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := len(h.instances()); n != 1 {
		t.Errorf("instances = %d, want 1 (nothing for the pod whose claim is missing)", n)
	}
	if h.logs.count("could not schedule pod") == 0 {
		t.Errorf("the pod with a missing claim was not reported; logs:\n%s", h.logs.String())
	}
}
