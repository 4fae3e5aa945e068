package suite

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// shape is a pod's requests.
type shape struct {
	name     string
	cpu, mem string
	gpu      int64
}

func (s shape) requests() corev1.ResourceList {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s.cpu)}
	if s.mem != "" {
		rl[corev1.ResourceMemory] = resource.MustParse(s.mem)
	}
	if s.gpu > 0 {
		rl[resourceGPU] = *resource.NewQuantity(s.gpu, resource.DecimalSI)
	}
	return rl
}

const resourceGPU corev1.ResourceName = "nvidia.com/gpu"

// podBuilder names pods uniquely within a scenario and gives each a unique, deterministic UID
// (Karpenter's scheduler keys its caches by UID).
type podBuilder struct {
	scenario string
	pods     []*corev1.Pod
}

// add appends one pod with the given labels and requests; mutate, when non-nil, adds the
// constraints. Labels are copied.
func (b *podBuilder) add(ns, name string, labels map[string]string, s shape, mutate func(*corev1.Pod)) {
	lbls := make(map[string]string, len(labels))
	for k, v := range labels {
		lbls[k] = v
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			Name:      name,
			UID:       types.UID(fmt.Sprintf("%s/%s/%s", b.scenario, ns, name)),
			Labels:    lbls,
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:      "app",
			Image:     "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: s.requests()},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if s.gpu > 0 {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{resourceGPU: *resource.NewQuantity(s.gpu, resource.DecimalSI)}
	}
	if mutate != nil {
		mutate(p)
	}
	b.pods = append(b.pods, p)
}

// deployment adds replicas of one workload: pods named app-0…app-(n-1) labelled app=<app>.
func (b *podBuilder) deployment(ns, app string, replicas int, s shape, mutate func(*corev1.Pod)) {
	lbls := map[string]string{"app": app}
	for i := range replicas {
		b.add(ns, fmt.Sprintf("%s-%d", app, i), lbls, s, mutate)
	}
}

// zoneSpread adds a DoNotSchedule spread over zones with maxSkew 1, selecting the pod's own
// label key=value.
func zoneSpread(key, value string) func(*corev1.Pod) {
	return spread(corev1.LabelTopologyZone, key, value)
}

func spread(topologyKey, key, value string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew:           1,
			TopologyKey:       topologyKey,
			WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{key: value}},
		})
	}
}

// podAffinity adds a required pod affinity (anti=false) or anti-affinity (anti=true) to pods
// labelled key=value over topologyKey.
func podAffinity(anti bool, topologyKey, key, value string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		term := corev1.PodAffinityTerm{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{key: value}},
			TopologyKey:   topologyKey,
		}
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{}
		}
		if anti {
			if p.Spec.Affinity.PodAntiAffinity == nil {
				p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
			}
			a := p.Spec.Affinity.PodAntiAffinity
			a.RequiredDuringSchedulingIgnoredDuringExecution = append(a.RequiredDuringSchedulingIgnoredDuringExecution, term)
			return
		}
		if p.Spec.Affinity.PodAffinity == nil {
			p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{}
		}
		a := p.Spec.Affinity.PodAffinity
		a.RequiredDuringSchedulingIgnoredDuringExecution = append(a.RequiredDuringSchedulingIgnoredDuringExecution, term)
	}
}

// tolerate adds a toleration of key (any value) with the given effect.
func tolerate(key string, effect corev1.TaintEffect) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect})
	}
}

// DaemonSets returns the DaemonSets of a typical EKS cluster: the VPC CNI, kube-proxy, the EBS
// CSI node plugin, the pod identity agent, a metrics node exporter and a log shipper on every
// node, and NVIDIA's device plugin on GPU nodes only.
func DaemonSets() []*appsv1.DaemonSet {
	everywhere := []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	ds := func(ns, name, cpu, mem string, affinity *corev1.Affinity) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
					Spec: corev1.PodSpec{
						Tolerations: everywhere,
						Affinity:    affinity,
						Containers: []corev1.Container{{Name: name, Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}},
					},
				},
			},
		}
	}
	gpuOnly := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: "karpenter.k8s.aws/instance-gpu-count", Operator: corev1.NodeSelectorOpExists,
		}}}},
	}}}
	return []*appsv1.DaemonSet{
		ds("kube-system", "aws-node", "25m", "64Mi", nil),
		ds("kube-system", "kube-proxy", "100m", "64Mi", nil),
		ds("kube-system", "ebs-csi-node", "30m", "120Mi", nil),
		ds("kube-system", "eks-pod-identity-agent", "25m", "32Mi", nil),
		ds("monitoring", "node-exporter", "50m", "64Mi", nil),
		ds("logging", "fluent-bit", "100m", "128Mi", nil),
		ds("kube-system", "nvidia-device-plugin", "50m", "100Mi", gpuOnly),
	}
}
