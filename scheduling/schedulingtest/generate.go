package schedulingtest

import (
	"fmt"
	"math"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// Config says what [Inputs] may generate. The zero value gives small inputs with every basic
// feature and no topology constraints.
type Config struct {
	// MaxPods caps the pending pods; zero means 8.
	MaxPods int
	// MaxTypes caps the catalog, which has at least 2 types; zero means 8.
	MaxTypes int
	// Topology adds topology spread (zone and hostname), pod affinity and anti-affinity, host
	// ports and volume zones.
	Topology bool
	// Exact keeps to what [Optimal] models: at most MaxOptimalPods pods and MaxOptimalTypes
	// types, no limits and no in-flight claims; Topology is ignored.
	Exact bool
}

func (c Config) withDefaults() Config {
	if c.MaxPods <= 0 {
		c.MaxPods = 8
	}
	if c.MaxTypes <= 0 {
		c.MaxTypes = 8
	}
	c.MaxTypes = max(c.MaxTypes, 2)
	if c.Exact {
		c.MaxPods = min(c.MaxPods, MaxOptimalPods)
		c.MaxTypes = min(c.MaxTypes, MaxOptimalTypes)
		c.Topology = false
	}
	return c
}

// Inputs generates random, valid, small solver inputs: pods from a few deployments with cpu and
// memory from small sets, node selectors on zone, arch and capacity type, tolerations; one to
// three NodePools with weights, taints, labels, requirements and limits; a catalog of 2–8 types
// in 1–3 zones with spot and on-demand offerings (some unavailable); existing nodes with bound
// pods; DaemonSets. Every generated input passes Input.Validate.
func Inputs(cfg Config) *rapid.Generator[scheduling.Input] {
	cfg = cfg.withDefaults()
	return rapid.Custom(func(t *rapid.T) scheduling.Input { return generate(t, cfg) })
}

var (
	zoneNames = []string{"zone-a", "zone-b", "zone-c"}
	podCPU    = []string{"100m", "250m", "500m", "1", "1500m", "2", "3", "4"}
	podMemory = []string{"128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi", "6Gi"}
)

func qty(s string) resource.Quantity { return resource.MustParse(s) }

func requests(cpu, mem string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: qty(cpu), corev1.ResourceMemory: qty(mem)}}
}

// chance is true about percent% of the time. rapid favours small numbers and shrinks toward
// them, so small draws mean "no": failures shrink to inputs with fewer features.
func chance(t *rapid.T, label string, percent int) bool {
	return rapid.IntRange(0, 99).Draw(t, label) >= 100-percent
}

func generate(t *rapid.T, cfg Config) scheduling.Input {
	var in scheduling.Input
	zones := zoneNames[:rapid.IntRange(1, 3).Draw(t, "zones")]

	nTypes := rapid.IntRange(2, cfg.MaxTypes).Draw(t, "types")
	for i := range nTypes {
		in.InstanceTypes = append(in.InstanceTypes, genType(t, i, zones, cfg))
	}

	nPools := rapid.IntRange(1, 3).Draw(t, "pools")
	for i := range nPools {
		in.NodePools = append(in.NodePools, genPool(t, i, zones, cfg))
	}

	nDS := rapid.IntRange(0, 2).Draw(t, "daemonsets")
	for i := range nDS {
		in.DaemonSets = append(in.DaemonSets, genDaemonSet(t, i, cfg))
	}

	apps := genPods(t, &in, zones, cfg)

	nNodes := rapid.IntRange(0, 2).Draw(t, "nodes")
	if cfg.Exact {
		// Packing, not feasibility, is what the oracle judges: fewer free bins.
		nNodes = rapid.IntRange(0, 1).Draw(t, "nodes")
	}
	for i := range nNodes {
		in.Nodes = append(in.Nodes, genNode(t, i, &in, apps))
	}
	if !cfg.Exact && chance(t, "inflight", 20) {
		if nc, ok := genInFlight(t, &in); ok {
			in.NodeClaims = append(in.NodeClaims, nc)
		}
	}
	in.Namespaces = []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"env": "prod"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "team-x", Labels: map[string]string{"env": "dev"}}},
	}
	return in
}

func genType(t *rapid.T, i int, zones []string, cfg Config) nodeplan.InstanceType {
	unavailable := 10
	if cfg.Exact {
		unavailable = 5
	}
	sizes := []int64{1, 2, 4, 8, 16}
	if cfg.Exact {
		// Without the largest size most inputs need several nodes, so packing matters.
		sizes = sizes[:4]
	}
	cpu := rapid.SampledFrom(sizes).Draw(t, "cpu")
	ratio := rapid.SampledFrom([]int64{2, 4, 8}).Draw(t, "ratio")
	arch := rapid.SampledFrom([]string{"amd64", "amd64", "arm64"}).Draw(t, "arch")
	category := map[int64]string{2: "c", 4: "m", 8: "r"}[ratio]
	pods := rapid.SampledFrom([]int64{110, 110, 110, 8}).Draw(t, "maxpods")
	name := fmt.Sprintf("%s%d-%d.%dx", category, i, cpu, ratio)
	it := nodeplan.InstanceType{
		Name: name,
		Labels: map[string]string{
			nodeplan.LabelInstanceType: name, nodeplan.LabelArch: arch, nodeplan.LabelOS: "linux",
			nodeplan.LabelInstanceCategory: category, nodeplan.LabelInstanceCPU: fmt.Sprint(cpu),
		},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(cpu*ratio<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(pods, resource.DecimalSI),
		},
		Overhead: nodeplan.Overhead{KubeReserved: corev1.ResourceList{
			corev1.ResourceCPU: qty("100m"), corev1.ResourceMemory: qty("300Mi")}},
	}
	// Prices are about linear in size, with a per-type premium or discount so that packing
	// choices matter.
	base := float64(cpu)*0.034 + float64(cpu*ratio)*0.0045
	factor := rapid.SampledFrom([]float64{0.85, 1, 1, 1.15, 1.4}).Draw(t, "price-factor")
	round := func(p float64) float64 { return math.Round(p*1e4) / 1e4 }
	for zi, z := range zones {
		od := round(base * factor * (1 + 0.02*float64(zi)))
		it.Offerings = append(it.Offerings, nodeplan.Offering{Zone: z, CapacityType: nodeplan.CapacityTypeOnDemand,
			Price: od, Available: !chance(t, "od-unavailable", unavailable)})
		if chance(t, "spot", 70) {
			sf := rapid.SampledFrom([]float64{0.3, 0.45, 0.6}).Draw(t, "spot-factor")
			it.Offerings = append(it.Offerings, nodeplan.Offering{Zone: z, CapacityType: nodeplan.CapacityTypeSpot,
				Price: max(round(od*sf), 0.0001), Available: !chance(t, "spot-unavailable", unavailable+5)})
		}
	}
	return it
}

func genPool(t *rapid.T, i int, zones []string, cfg Config) nodeplan.NodePool {
	name := fmt.Sprintf("pool-%c", 'a'+i)
	np := nodeplan.NodePool{Name: name, Weight: rapid.SampledFrom([]int32{0, 0, 10, 50}).Draw(t, "weight")}
	rs := nodeplan.NewRequirements()
	switch rapid.IntRange(0, 3).Draw(t, "capacity-type") {
	case 2:
		rs = rs.Add(nodeplan.In(nodeplan.LabelCapacityType, "on-demand"))
	case 3:
		rs = rs.Add(nodeplan.In(nodeplan.LabelCapacityType, "spot"))
	default:
		rs = rs.Add(nodeplan.In(nodeplan.LabelCapacityType, "spot", "on-demand"))
	}
	rare := 100 // percent of the usual chance of a narrowing requirement or taint
	if cfg.Exact {
		rare = 40
	}
	if chance(t, "pool-arch", 25*rare/100) {
		rs = rs.Add(nodeplan.In(nodeplan.LabelArch, rapid.SampledFrom([]string{"amd64", "arm64"}).Draw(t, "arch")))
	}
	if len(zones) > 1 && chance(t, "pool-zone", 25*rare/100) {
		rs = rs.Add(nodeplan.In(nodeplan.LabelZone, zones[:rapid.IntRange(1, len(zones)-1).Draw(t, "pool-zones")]...))
	}
	if chance(t, "pool-category", 20*rare/100) {
		rs = rs.Add(nodeplan.NotIn(nodeplan.LabelInstanceCategory, "r"))
	}
	np.Template.Requirements = rs
	if chance(t, "pool-taint", 25*rare/100) {
		np.Template.Taints = []corev1.Taint{{Key: "dedicated", Value: name, Effect: corev1.TaintEffectNoSchedule}}
	}
	if chance(t, "pool-label", 30) {
		np.Template.Labels = map[string]string{"team": name}
	}
	if !cfg.Exact && chance(t, "pool-limits", 25) {
		if chance(t, "limit-nodes", 50) {
			np.Limits = corev1.ResourceList{nodeplan.ResourceNodes: *resource.NewQuantity(rapid.Int64Range(1, 3).Draw(t, "nodes"), resource.DecimalSI)}
		} else {
			np.Limits = corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(rapid.SampledFrom([]int64{4, 8, 16, 32}).Draw(t, "cpu-limit"), resource.DecimalSI)}
		}
	}
	return np
}

func genDaemonSet(t *rapid.T, i int, cfg Config) *appsv1.DaemonSet {
	name := fmt.Sprintf("ds-%d", i)
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Resources: requests(
		rapid.SampledFrom([]string{"50m", "100m", "200m"}).Draw(t, "ds-cpu"),
		rapid.SampledFrom([]string{"64Mi", "128Mi", "256Mi"}).Draw(t, "ds-memory"))}}}
	if chance(t, "ds-arch", 30) {
		spec.NodeSelector = map[string]string{nodeplan.LabelArch: "amd64"}
	}
	if chance(t, "ds-tolerate-all", 50) {
		spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	}
	if cfg.Topology && chance(t, "ds-port", 30) {
		spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 9100, HostPort: 9100}}
	}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
			Spec:       spec,
		}},
	}
}

// genPods adds the pending pods of one to four deployments and returns the deployments' app
// labels.
func genPods(t *rapid.T, in *scheduling.Input, zones []string, cfg Config) []string {
	total := rapid.IntRange(1, cfg.MaxPods).Draw(t, "pods")
	// Selectors narrow where pods may go; the oracle's inputs keep them rarer, so most pods
	// are placeable and the packing decides the cost.
	sel := 100
	if cfg.Exact {
		total = rapid.IntRange((cfg.MaxPods+1)/2, cfg.MaxPods).Draw(t, "pods")
		sel = 50
	}
	var apps []string
	for d := 0; total > 0; d++ {
		replicas := min(total, rapid.IntRange(1, 4).Draw(t, "replicas"))
		total -= replicas
		app := fmt.Sprintf("app-%d", d)
		apps = append(apps, app)
		ns := rapid.SampledFrom([]string{"default", "default", "team-x"}).Draw(t, "namespace")
		spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: requests(
			rapid.SampledFrom(podCPU).Draw(t, "cpu"), rapid.SampledFrom(podMemory).Draw(t, "memory"))}}}
		selector := map[string]string{}
		if chance(t, "select-zone", 15*sel/100) {
			selector[nodeplan.LabelZone] = rapid.SampledFrom(zones).Draw(t, "zone")
		}
		if chance(t, "select-arch", 20*sel/100) {
			selector[nodeplan.LabelArch] = rapid.SampledFrom([]string{"amd64", "arm64"}).Draw(t, "arch")
		}
		if chance(t, "select-capacity-type", 15*sel/100) {
			selector[nodeplan.LabelCapacityType] = rapid.SampledFrom([]string{"spot", "on-demand"}).Draw(t, "capacity-type")
		}
		if len(selector) > 0 {
			spec.NodeSelector = selector
		}
		if chance(t, "node-affinity", 15*sel/100) {
			spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{
					{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: nodeplan.LabelInstanceCPU, Operator: corev1.NodeSelectorOpGt, Values: []string{"2"}}}},
					{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: nodeplan.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"m"}}}},
				}}}}
		}
		switch rapid.IntRange(0, 9).Draw(t, "tolerations") {
		case 8, 9:
			spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		case 7:
			spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Value: "pool-a", Effect: corev1.TaintEffectNoSchedule}}
		}
		var volumeZones []string
		if cfg.Topology {
			volumeZones = genTopology(t, &spec, app, apps, zones)
		}
		addReplicas(in, ns, app, replicas, &spec, volumeZones)
	}
	return apps
}

// genTopology adds constraints to a deployment's pod spec and returns the zones its volumes
// allow, if they are restricted.
func genTopology(t *rapid.T, spec *corev1.PodSpec, app string, apps []string, zones []string) []string {
	self := &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	if chance(t, "zone-spread", 25) {
		spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: nodeplan.LabelZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: self})
	}
	if chance(t, "hostname-spread", 15) {
		spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: int32(rapid.IntRange(1, 2).Draw(t, "max-skew")), TopologyKey: nodeplan.LabelHostname,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: self})
	}
	if chance(t, "schedule-anyway", 10) {
		spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: nodeplan.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: self})
	}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if chance(t, "anti-affinity", 20) {
		key := rapid.SampledFrom([]string{nodeplan.LabelHostname, nodeplan.LabelHostname, nodeplan.LabelZone}).Draw(t, "anti-key")
		spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			{TopologyKey: key, LabelSelector: self}}}
	}
	if chance(t, "affinity", 15) {
		target := rapid.SampledFrom(apps).Draw(t, "affinity-to")
		key := rapid.SampledFrom([]string{nodeplan.LabelHostname, nodeplan.LabelZone}).Draw(t, "affinity-key")
		spec.Affinity.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": target}}}}}
	}
	if *spec.Affinity == (corev1.Affinity{}) {
		spec.Affinity = nil
	}
	if chance(t, "host-port", 15) {
		spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080,
			HostPort: rapid.SampledFrom([]int32{8080, 9100}).Draw(t, "host-port")}}
	}
	if chance(t, "volume-zone", 15) {
		return []string{rapid.SampledFrom(zones).Draw(t, "volume-zone")}
	}
	return nil
}

// genNode adds an existing node of some pool, as some type in some offering, with bound pods
// and the DaemonSet pods that run there (some of them not yet).
func genNode(t *rapid.T, i int, in *scheduling.Input, apps []string) scheduling.Node {
	np := &in.NodePools[rapid.IntRange(0, len(in.NodePools)-1).Draw(t, "node-pool")]
	its := in.InstanceTypes
	it := &its[rapid.IntRange(0, len(its)-1).Draw(t, "node-type")]
	o := it.Offerings[rapid.IntRange(0, len(it.Offerings)-1).Draw(t, "node-offering")]
	n := scheduling.Node{Node: nodeObject(fmt.Sprintf("node-%d", i), np, it, o)}
	room := &nodeRoom{free: it.Allocatable()}
	n.Pods = append(n.Pods, genDaemonPods(t, in.DaemonSets, n.Node, room)...)
	n.Pods = append(n.Pods, genBoundPods(t, n.Node.Name, apps, room)...)
	return n
}

// nodeObject is the Node of pool np launched as it in offering o: the pool's labels and taints,
// the type's labels, capacity and allocatable, and the well-known labels.
func nodeObject(name string, np *nodeplan.NodePool, it *nodeplan.InstanceType, o nodeplan.Offering) *corev1.Node {
	lbls := map[string]string{}
	for k, v := range np.Template.Labels {
		lbls[k] = v
	}
	for k, v := range it.Labels {
		lbls[k] = v
	}
	lbls[nodeplan.LabelZone] = o.Zone
	lbls[nodeplan.LabelCapacityType] = string(o.CapacityType)
	lbls[nodeplan.LabelNodePool] = np.Name
	lbls[nodeplan.LabelHostname] = name
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
		Spec:       corev1.NodeSpec{Taints: slices.Clone(np.Template.Taints)},
		Status:     corev1.NodeStatus{Capacity: it.Capacity, Allocatable: it.Allocatable()},
	}
}

// nodeRoom is what a generated node has left for the pods bound to it.
type nodeRoom struct{ free corev1.ResourceList }

// take reports whether p fits in the room left, and takes its requests if so.
func (r *nodeRoom) take(p *corev1.Pod) bool {
	req := nodeplan.PodRequests(p)
	if _, ok := nodeplan.Fits(req, r.free); !ok {
		return false
	}
	r.free = nodeplan.SubtractResources(r.free, req)
	return true
}

// genDaemonPods returns the pods of the DaemonSets that run on node, each already running there
// with probability 0.7 if it fits.
func genDaemonPods(t *rapid.T, daemonSets []*appsv1.DaemonSet, node *corev1.Node, room *nodeRoom) []*corev1.Pod {
	var out []*corev1.Pod
	for _, ds := range daemonSets {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Name: fmt.Sprintf("%s-%s", ds.Name, node.Name),
				Labels: ds.Spec.Template.Labels, OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: ds.Name}}},
			Spec: *ds.Spec.Template.Spec.DeepCopy(),
		}
		p.Spec.NodeName = node.Name
		if !matchNode(p, node.Name, node.Labels) {
			continue
		}
		if _, bad := nodeplan.UntoleratedTaint(daemonTolerations(p.Spec.Tolerations), node.Spec.Taints); bad {
			continue
		}
		if chance(t, "ds-running", 70) && room.take(p) {
			out = append(out, p)
		}
	}
	return out
}

// genBoundPods returns up to three pods bound to node name, of one of apps or of none, each if
// it fits.
func genBoundPods(t *rapid.T, name string, apps []string, room *nodeRoom) []*corev1.Pod {
	var out []*corev1.Pod
	nBound := rapid.IntRange(0, 3).Draw(t, "bound")
	for j := range nBound {
		app := "other"
		if chance(t, "bound-app", 40) {
			app = rapid.SampledFrom(apps).Draw(t, "bound-app-name")
		}
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("%s-bound-%d", name, j), Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{NodeName: name, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Containers: []corev1.Container{{Name: "main", Resources: requests(
					rapid.SampledFrom(podCPU[:5]).Draw(t, "bound-cpu"), rapid.SampledFrom(podMemory[:5]).Draw(t, "bound-memory"))}}},
		}
		if room.take(p) {
			out = append(out, p)
		}
	}
	return out
}

// genInFlight adds a launched claim of the first pool that has not registered yet.
func genInFlight(t *rapid.T, in *scheduling.Input) (nodeplan.NodeClaim, bool) {
	np := &in.NodePools[0]
	it := &in.InstanceTypes[rapid.IntRange(0, len(in.InstanceTypes)-1).Draw(t, "inflight-type")]
	for _, o := range it.Offerings {
		lbls := map[string]string{nodeplan.LabelZone: o.Zone, nodeplan.LabelCapacityType: string(o.CapacityType)}
		for k, v := range it.Labels {
			lbls[k] = v
		}
		for k, v := range np.Template.Labels {
			lbls[k] = v
		}
		lbls[nodeplan.LabelNodePool] = np.Name
		if !o.Available || !np.Template.Requirements.Matches(lbls) {
			continue
		}
		return nodeplan.NodeClaim{
			Name: "inflight-0", NodePool: np.Name,
			Requirements:        np.Template.Requirements.Add(nodeplan.In(nodeplan.LabelNodePool, np.Name)),
			InstanceTypeOptions: []string{it.Name},
			Labels:              np.Template.Labels,
			Taints:              np.Template.Taints,
			Resources:           corev1.ResourceList{corev1.ResourceCPU: qty("500m"), corev1.ResourceMemory: qty("512Mi")},
			Status: nodeplan.NodeClaimStatus{ProviderID: "test:///inflight-0", InstanceType: it.Name, Zone: o.Zone,
				CapacityType: o.CapacityType, Price: o.Price, Capacity: it.Capacity, Allocatable: it.Allocatable()},
		}, true
	}
	return nodeplan.NodeClaim{}, false
}

// addReplicas adds n pods of app with spec to in, and their volume zones if any.
func addReplicas(in *scheduling.Input, ns, app string, n int, spec *corev1.PodSpec, volumeZones []string) {
	for r := range n {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", app, r), Labels: map[string]string{"app": app}},
			Spec:       *spec.DeepCopy(),
		}
		in.Pods = append(in.Pods, p)
		if len(volumeZones) > 0 {
			if in.VolumeZones == nil {
				in.VolumeZones = map[string][]string{}
			}
			in.VolumeZones[nodeplan.PodKey(p)] = volumeZones
		}
	}
}
