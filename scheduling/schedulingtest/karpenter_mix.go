package schedulingtest

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The distribution of Karpenter's scheduling benchmark (makeDiversePods in
// sigs.k8s.io/karpenter v1.14 pkg/controllers/provisioning/scheduling/scheduling_benchmark_test.go),
// as facts; the code below is ours.
var (
	// karpenterCPU and karpenterMemory are the requests it draws from, uniformly.
	karpenterCPU    = []string{"100m", "250m", "500m", "1000m", "1500m"}
	karpenterMemory = []string{"100Mi", "256Mi", "512Mi", "1024Mi", "2048Mi", "4096Mi"}
	// karpenterValues are the values of every label and selector it draws, uniformly.
	karpenterValues = []string{"a", "b", "c", "d", "e", "f", "g"}
)

// The label keys Karpenter's generator uses, spelled as it spells them.
const (
	KarpenterMixLabel    = "my-label"
	KarpenterMixAffinity = "my-affininity"
)

// KarpenterMix returns n pending pods in namespace default distributed as Karpenter's own
// scheduling benchmark draws them: a fifth each of
//
//   - generic pods labelled my-label=v;
//   - pods labelled my-label=v with a DoNotSchedule spread (maxSkew 1) over zones whose
//     selector my-label=w is drawn independently of v;
//   - the same over hostnames;
//   - pods labelled my-affininity=v with required zone affinity to my-affininity=v (themselves);
//   - pods labelled app=nginx with required hostname anti-affinity to app=nginx;
//
// and the remainder generic. Every value is drawn uniformly from a–g, every cpu request from
// 100m–1500m and memory from 100Mi–4Gi, independently per pod. So most spread pods do not
// match their own selector, and a selector matches pods of every kind but the last two — the
// interplay the suite's "karpenter-mix" (whose selectors select their own group) never shows.
//
// The pods are named generic-i, zone-spread-i, host-spread-i, zone-affinity-i, host-anti-i
// and generic-extra-i; uidPrefix+"/"+name is each UID (Karpenter keys its caches by UID). Equal
// rng states give equal pods.
func KarpenterMix(rng *rand.Rand, n int, uidPrefix string) []*corev1.Pod {
	d := &mixDraw{rng: rng, uidPrefix: uidPrefix}
	fifth := n / 5
	for i := range fifth {
		d.add(fmt.Sprintf("generic-%d", i), map[string]string{KarpenterMixLabel: d.pick(karpenterValues)}, nil)
	}
	for _, k := range []struct{ prefix, key string }{{"zone-spread", corev1.LabelTopologyZone}, {"host-spread", corev1.LabelHostname}} {
		for i := range fifth {
			lbl := map[string]string{KarpenterMixLabel: d.pick(karpenterValues)}
			// The selector is drawn after the pod's own label.
			d.add(fmt.Sprintf("%s-%d", k.prefix, i), lbl, mixSpread(k.key, d.pick(karpenterValues)))
		}
	}
	for i := range fifth {
		v := d.pick(karpenterValues)
		d.add(fmt.Sprintf("zone-affinity-%d", i), map[string]string{KarpenterMixAffinity: v}, mixZoneAffinity(v))
	}
	for i := range fifth {
		d.add(fmt.Sprintf("host-anti-%d", i), map[string]string{"app": "nginx"}, mixHostAntiAffinity)
	}
	for i := range n - 5*fifth {
		d.add(fmt.Sprintf("generic-extra-%d", i), map[string]string{KarpenterMixLabel: d.pick(karpenterValues)}, nil)
	}
	return d.pods
}

// mixDraw is KarpenterMix's generator: its random source and the pods drawn so far.
type mixDraw struct {
	rng       *rand.Rand
	uidPrefix string
	pods      []*corev1.Pod
}

// pick draws one of vals uniformly.
func (d *mixDraw) pick(vals []string) string { return vals[d.rng.IntN(len(vals))] }

// add draws a pod's requests, after its labels and selectors (cpu before memory), and adds the
// pod, with constrain (if any) applied to its spec.
func (d *mixDraw) add(name string, labels map[string]string, constrain func(*corev1.PodSpec)) {
	cpu, mem := d.pick(karpenterCPU), d.pick(karpenterMemory)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: labels,
			UID: types.UID(d.uidPrefix + "/" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "app",
			Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if constrain != nil {
		constrain(&p.Spec)
	}
	d.pods = append(d.pods, p)
}

// mixSpread is a DoNotSchedule spread over key, maxSkew 1, selecting my-label=v.
func mixSpread(key, v string) func(*corev1.PodSpec) {
	sel := map[string]string{KarpenterMixLabel: v}
	return func(s *corev1.PodSpec) {
		s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: sel},
		}}
	}
}

// mixZoneAffinity is required pod affinity over zones to my-affininity=v.
func mixZoneAffinity(v string) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{KarpenterMixAffinity: v}},
			TopologyKey:   corev1.LabelTopologyZone,
		}}}}
	}
}

// mixHostAntiAffinity is required pod anti-affinity over hostnames to app=nginx.
func mixHostAntiAffinity(s *corev1.PodSpec) {
	s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
		TopologyKey:   corev1.LabelHostname,
	}}}}
}
