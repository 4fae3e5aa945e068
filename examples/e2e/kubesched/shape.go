package kubesched

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"
	"k8s.io/utils/ptr"
)

// Shape returns pod as kube-apiserver returns it from a create: the API server's own defaulting
// (k8s.io/kubernetes/pkg/apis/core/v1, the code the server runs), then what the default
// admission plugins add — DefaultTolerationSeconds' two NoExecute tolerations with
// tolerationSeconds 300, Priority's priority 0 and preemptionPolicy, ServiceAccount's account
// name and token volume — and what the registry sets: uid, creation time, Pending status with
// its QoS class, managed fields. TestShapeMatchesAPIServer compares it with a real API server's
// answer.
func Shape(pod *corev1.Pod, uid string) *corev1.Pod {
	p := pod.DeepCopy()
	corev1defaults.SetObjectDefaults_Pod(p)
	if p.Spec.ServiceAccountName == "" {
		p.Spec.ServiceAccountName = "default"
		p.Spec.DeprecatedServiceAccount = "default"
	}
	if p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
		p.Spec.Volumes = append(p.Spec.Volumes, tokenVolume())
		mount := corev1.VolumeMount{Name: tokenVolumeName, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}
		for i := range p.Spec.InitContainers {
			p.Spec.InitContainers[i].VolumeMounts = append(p.Spec.InitContainers[i].VolumeMounts, mount)
		}
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].VolumeMounts = append(p.Spec.Containers[i].VolumeMounts, mount)
		}
	}
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		if !slices.ContainsFunc(p.Spec.Tolerations, func(t corev1.Toleration) bool {
			return (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") && t.Operator == corev1.TolerationOpExists
		}) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)})
		}
	}
	if p.Spec.Priority == nil {
		p.Spec.Priority = ptr.To[int32](0)
	}
	if p.Spec.PreemptionPolicy == nil {
		p.Spec.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
	}
	if p.Spec.EnableServiceLinks == nil {
		p.Spec.EnableServiceLinks = ptr.To(true)
	}
	p.UID = types.UID(uid)
	p.ResourceVersion = "1"
	p.Generation = 1
	p.CreationTimestamp = metav1.Now()
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	p.Status.QOSClass = qos.GetPodQOS(p)
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubesched.test", Operation: metav1.ManagedFieldsOperationUpdate,
		APIVersion: "v1", Time: ptr.To(p.CreationTimestamp), FieldsType: "FieldsV1",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}}
	return p
}

const tokenVolumeName = "kube-api-access"

func tokenVolume() corev1.Volume {
	return corev1.Volume{Name: tokenVolumeName, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}}
}

func cutKey(k string) (ns, name string, ok bool) { return strings.Cut(k, "/") }
