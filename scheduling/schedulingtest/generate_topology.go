package schedulingtest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// ZonalType is a 4-vCPU instance type (3,900m allocatable) with an on-demand offering in each
// zone given, at $0.20, $0.21 and $0.22 in zone-a, zone-b and zone-c: the type of the
// hand-written topology cases.
func ZonalType(zones ...string) nodeplan.InstanceType {
	price := map[string]float64{"zone-a": 0.20, "zone-b": 0.21, "zone-c": 0.22}
	it := nodeplan.InstanceType{
		Name:   "m-4",
		Labels: map[string]string{nodeplan.LabelInstanceType: "m-4"},
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"),
			corev1.ResourcePods: resource.MustParse("110")},
		Overhead: nodeplan.Overhead{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
	}
	for _, z := range zones {
		it.Offerings = append(it.Offerings, nodeplan.Offering{Zone: z, CapacityType: nodeplan.CapacityTypeOnDemand, Price: price[z], Available: true})
	}
	return it
}

// TopologyInputs generates small inputs that [OptimalTopology] solves exactly, full of the
// constraints it models: one NodePool (sometimes narrowed to some zones or a capacity type,
// sometimes tainted) over 2–4 instance types in 1–3 zones; 2–7 pending pods of 1–3
// deployments carrying DoNotSchedule spread over zone (maxSkew 1–2, sometimes minDomains) and
// hostname, required anti-affinity over hostname or zone (against themselves or another
// deployment) and required affinity over zone or hostname (to themselves, another deployment
// or running pods), some in another namespace; up to two existing nodes, perhaps in zones the
// pool cannot launch into, whose running pods the constraints may count, one perhaps with an
// anti-affinity of its own; DaemonSets. Every generated input passes Input.Validate.
func TopologyInputs() *rapid.Generator[scheduling.Input] {
	return rapid.Custom(generateTopology)
}

func generateTopology(t *rapid.T) scheduling.Input {
	var in scheduling.Input
	cfg := Config{Exact: true}.withDefaults()
	zones := zoneNames[:rapid.IntRange(1, 3).Draw(t, "zones")]
	for i := range rapid.IntRange(2, MaxTopologyTypes).Draw(t, "types") {
		in.InstanceTypes = append(in.InstanceTypes, genType(t, i, zones, cfg))
	}
	in.NodePools = []nodeplan.NodePool{genTopologyPool(t, zones)}
	for i := range rapid.IntRange(0, 1).Draw(t, "daemonsets") {
		in.DaemonSets = append(in.DaemonSets, genDaemonSet(t, i, cfg))
	}
	apps := genTopologyPods(t, &in, zones)
	for i := range rapid.IntRange(0, MaxTopologyNodes).Draw(t, "nodes") {
		n := genNode(t, i, &in, apps)
		if chance(t, "running-anti", 15) {
			for _, p := range n.Pods {
				if len(p.OwnerReferences) > 0 {
					continue // a DaemonSet pod
				}
				key := rapid.SampledFrom([]string{nodeplan.LabelHostname, nodeplan.LabelZone}).Draw(t, "running-anti-key")
				target := rapid.SampledFrom(apps).Draw(t, "running-anti-app")
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{selectApp(key, target)}}}
				break
			}
		}
		in.Nodes = append(in.Nodes, n)
	}
	in.Namespaces = []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"env": "prod"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "team-x", Labels: map[string]string{"env": "dev"}}},
	}
	return in
}

func selectApp(key, app string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}
}

func genTopologyPool(t *rapid.T, zones []string) nodeplan.NodePool {
	np := nodeplan.NodePool{Name: "default"}
	rs := nodeplan.NewRequirements()
	switch rapid.IntRange(0, 5).Draw(t, "capacity-type") {
	case 4:
		rs = rs.Add(nodeplan.In(nodeplan.LabelCapacityType, "on-demand"))
	case 5:
		rs = rs.Add(nodeplan.In(nodeplan.LabelCapacityType, "spot"))
	default:
		rs = rs.Add(nodeplan.In(nodeplan.LabelCapacityType, "spot", "on-demand"))
	}
	if len(zones) > 1 && chance(t, "pool-zone", 20) {
		rs = rs.Add(nodeplan.In(nodeplan.LabelZone, zones[:rapid.IntRange(1, len(zones)-1).Draw(t, "pool-zones")]...))
	}
	np.Template.Requirements = rs
	if chance(t, "pool-taint", 10) {
		np.Template.Taints = []corev1.Taint{{Key: "dedicated", Value: np.Name, Effect: corev1.TaintEffectNoSchedule}}
	}
	if chance(t, "pool-label", 20) {
		np.Template.Labels = map[string]string{"team": "a"}
	}
	return np
}

// genTopologyPods adds 2–7 pending pods of 1–3 deployments and returns the deployments' app
// labels.
func genTopologyPods(t *rapid.T, in *scheduling.Input, zones []string) []string {
	total := rapid.IntRange(2, MaxTopologyPods).Draw(t, "pods")
	var apps []string
	for d := 0; total > 0; d++ {
		replicas := min(total, rapid.IntRange(1, 4).Draw(t, "replicas"))
		if d == 2 {
			replicas = total
		}
		total -= replicas
		app := fmt.Sprintf("app-%d", d)
		apps = append(apps, app)
		ns := "default"
		if chance(t, "other-namespace", 15) {
			ns = "team-x"
		}
		spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: requests(
			rapid.SampledFrom(podCPU).Draw(t, "cpu"), rapid.SampledFrom(podMemory).Draw(t, "memory"))}},
			Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}}
		if chance(t, "intolerant", 10) {
			spec.Tolerations = nil
		}
		if chance(t, "select-capacity-type", 10) {
			spec.NodeSelector = map[string]string{nodeplan.LabelCapacityType: rapid.SampledFrom([]string{"spot", "on-demand"}).Draw(t, "capacity-type")}
		}
		if chance(t, "select-zone", 8) {
			if spec.NodeSelector == nil {
				spec.NodeSelector = map[string]string{}
			}
			spec.NodeSelector[nodeplan.LabelZone] = rapid.SampledFrom(zones).Draw(t, "zone")
		}
		genTopologyConstraints(t, &spec, app, apps)
		var volumeZones []string
		if chance(t, "volume-zone", 8) {
			volumeZones = []string{rapid.SampledFrom(zones).Draw(t, "volume-zone")}
		}
		addReplicas(in, ns, app, replicas, &spec, volumeZones)
	}
	return apps
}

func genTopologyConstraints(t *rapid.T, spec *corev1.PodSpec, app string, apps []string) {
	self := &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	if chance(t, "zone-spread", 40) {
		c := corev1.TopologySpreadConstraint{MaxSkew: int32(rapid.IntRange(1, 2).Draw(t, "zone-max-skew")),
			TopologyKey: nodeplan.LabelZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: self}
		if chance(t, "min-domains", 20) {
			c.MinDomains = new(int32(rapid.IntRange(2, 3).Draw(t, "min-domains")))
		}
		spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, c)
	}
	if chance(t, "hostname-spread", 30) {
		spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: int32(rapid.IntRange(1, 2).Draw(t, "hostname-max-skew")), TopologyKey: nodeplan.LabelHostname,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: self})
	}
	a := &corev1.Affinity{}
	if chance(t, "anti-affinity", 30) {
		key := rapid.SampledFrom([]string{nodeplan.LabelHostname, nodeplan.LabelHostname, nodeplan.LabelZone}).Draw(t, "anti-key")
		target := app
		if chance(t, "anti-other", 25) {
			target = rapid.SampledFrom(apps).Draw(t, "anti-app")
		}
		a.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{selectApp(key, target)}}
	}
	if chance(t, "affinity", 20) {
		key := rapid.SampledFrom([]string{nodeplan.LabelZone, nodeplan.LabelZone, nodeplan.LabelHostname}).Draw(t, "affinity-key")
		target := rapid.SampledFrom(append([]string{"other"}, apps...)).Draw(t, "affinity-app")
		a.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{selectApp(key, target)}}
	}
	if *a != (corev1.Affinity{}) {
		spec.Affinity = a
	}
}

// RackKey is a topology key no node, instance type or NodePool of [SpreadDomainInputs] has.
const RackKey = "example.com/rack"

// SpreadDomainInputs generates small inputs that [OptimalTopology] solves exactly, drawn where
// a spread's domains depend on the pod (issue 27, items 1–3): one app label and one zone spread
// (maxSkew 1–5, sometimes minDomains) shared by 1–3 deployments, each pinned by its node
// selector to a zone or not pinned; a NodePool sometimes narrowed to fewer zones than the
// instance types offer; up to two existing nodes in any zone, perhaps where the pool cannot
// launch, perhaps full, running pods the spread counts; and sometimes a deployment with a
// second DoNotSchedule spread over [RackKey], a key no node has. Every generated input passes
// Input.Validate.
func SpreadDomainInputs() *rapid.Generator[scheduling.Input] {
	return rapid.Custom(generateSpreadDomains)
}

func generateSpreadDomains(t *rapid.T) scheduling.Input {
	var in scheduling.Input
	cfg := Config{Exact: true}.withDefaults()
	zones := zoneNames[:rapid.IntRange(2, 3).Draw(t, "zones")]
	for i := range rapid.IntRange(2, 3).Draw(t, "types") {
		in.InstanceTypes = append(in.InstanceTypes, genType(t, i, zones, cfg))
	}
	np := nodeplan.NodePool{Name: "default"}
	if chance(t, "pool-zone", 50) {
		np.Template.Requirements = nodeplan.NewRequirements(nodeplan.In(nodeplan.LabelZone,
			zones[rapid.IntRange(0, len(zones)-1).Draw(t, "pool-zone-from"):]...))
	}
	in.NodePools = []nodeplan.NodePool{np}
	spread := corev1.TopologySpreadConstraint{MaxSkew: int32(rapid.IntRange(1, 5).Draw(t, "max-skew")),
		TopologyKey: nodeplan.LabelZone, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	if chance(t, "min-domains", 15) {
		spread.MinDomains = new(int32(rapid.IntRange(2, 3).Draw(t, "min-domains")))
	}
	total := rapid.IntRange(2, MaxTopologyPods).Draw(t, "pods")
	for d := 0; total > 0 && d < 3; d++ {
		replicas := min(total, rapid.IntRange(1, 4).Draw(t, "replicas"))
		if d == 2 {
			replicas = total
		}
		total -= replicas
		spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: requests(
			rapid.SampledFrom(podCPU).Draw(t, "cpu"), rapid.SampledFrom(podMemory).Draw(t, "memory"))}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{spread}}
		if chance(t, "pinned", 70) {
			spec.NodeSelector = map[string]string{nodeplan.LabelZone: rapid.SampledFrom(zones).Draw(t, "pinned-zone")}
		}
		if chance(t, "rack-spread", 15) {
			rack := spread
			rack.TopologyKey, rack.MinDomains = RackKey, nil
			spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, rack)
		}
		for r := range replicas {
			in.Pods = append(in.Pods, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("web-%d-%d", d, r), Labels: map[string]string{"app": "web"}},
				Spec:       *spec.DeepCopy(),
			})
		}
	}
	for i := range rapid.IntRange(0, MaxTopologyNodes).Draw(t, "nodes") {
		in.Nodes = append(in.Nodes, genNode(t, i, &in, []string{"web"}))
	}
	return in
}
