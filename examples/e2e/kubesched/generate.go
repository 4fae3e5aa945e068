package kubesched

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// Case is one random cluster: the solver's input, with pods as they were written (before the API
// server shaped them).
type Case struct {
	Seed  uint64
	Input scheduling.Input
}

// Config sizes the generated cases. The zero value generates a few hundred pods.
type Config struct {
	// Pods is the approximate number of pending pods; zero means 100 to 400, drawn per seed.
	Pods int
	// Completeness also draws the shapes where completeness is at stake (per-zone
	// deployments under one spread, a spread over a key no node has, an unmeetable heavier
	// preference, minValues). Off, the draws are those the minimised cases were cut from.
	Completeness bool
}

// Generate builds the case for a seed: the same seed gives the same case.
//
// It draws a cluster an operator could run: several NodePools (tainted, labelled, restricted by
// capacity type, zone, architecture and instance category, with weights), DaemonSets, and
// deployments whose pods mix resource shapes (pod-level resources, sidecars, init containers),
// node selectors and node affinity, tolerations, host ports, topology spread over zone and
// hostname (DoNotSchedule and ScheduleAnyway, minDomains, nodeAffinityPolicy and
// nodeTaintsPolicy Honor or Ignore), and required and preferred pod affinity and anti-affinity.
// A share of the pods is drawn as Karpenter's scheduling benchmark draws them (makeDiversePods):
// each pod's labels and each constraint's selector independently, so selectors match other
// pods, several groups, or none.
func Generate(seed uint64, catalog []nodeplan.InstanceType, cfg Config) Case {
	g := &gen{rng: rand.New(rand.NewPCG(seed, 0x6b75626573636864)), more: cfg.Completeness}
	g.zones = zonesOf(catalog)
	in := scheduling.Input{InstanceTypes: g.instanceTypes(catalog)}
	in.NodePools = g.nodePools()
	in.DaemonSets = g.daemonSets()
	in.Namespaces = []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{corev1.LabelMetadataName: "default", "team": "core"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{corev1.LabelMetadataName: "shop", "team": "web"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "batch", Labels: map[string]string{corev1.LabelMetadataName: "batch", "team": "data"}}},
	}
	n := cfg.Pods
	if n == 0 {
		n = 100 + g.rng.IntN(301)
	}
	diverse := n / 3
	if g.rng.IntN(4) == 0 {
		diverse = 0
	}
	g.deployments(n - diverse)
	g.diversePods(diverse)
	in.Pods = g.pods
	return Case{Seed: seed, Input: in}
}

type gen struct {
	rng   *rand.Rand
	more  bool // Config.Completeness
	zones []string
	pools []nodeplan.NodePool
	pods  []*corev1.Pod
	apps  []string // app labels of the deployments drawn so far
}

func (g *gen) pick(n int) int { return g.rng.IntN(n) }

func (g *gen) chance(percent int) bool { return g.rng.IntN(100) < percent }

func pickOf[T any](g *gen, xs []T) T { return xs[g.rng.IntN(len(xs))] }

// subset returns a non-empty random subset of xs, in xs's order.
func subset[T any](g *gen, xs []T) []T {
	for {
		var out []T
		for _, x := range xs {
			if g.chance(50) {
				out = append(out, x)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
}

func zonesOf(catalog []nodeplan.InstanceType) []string {
	seen := map[string]bool{}
	for _, it := range catalog {
		for _, o := range it.Offerings {
			seen[o.Zone] = true
		}
	}
	var zs []string
	for z := range seen {
		zs = append(zs, z)
	}
	slices.Sort(zs)
	return zs
}

// catalogFamilies and catalogSizes pick a manageable part of the catalog: both architectures,
// the three categories, burstable types, sizes from large to 8xlarge.
var (
	catalogFamilies = []string{"c6i", "m6i", "r6i", "c7g", "m7g", "r7i", "t3", "m5"}
	catalogSizes    = []string{"large", "xlarge", "2xlarge", "4xlarge", "8xlarge"}
)

// instanceTypes returns the case's part of the catalog, with some offerings made unavailable (as
// after insufficient-capacity errors).
func (g *gen) instanceTypes(catalog []nodeplan.InstanceType) []nodeplan.InstanceType {
	var out []nodeplan.InstanceType
	for _, it := range catalog {
		fam, size, ok := strings.Cut(it.Name, ".")
		if !ok || !slices.Contains(catalogFamilies, fam) || !slices.Contains(catalogSizes, size) {
			continue
		}
		it.Offerings = slices.Clone(it.Offerings)
		for i := range it.Offerings {
			if g.chance(8) {
				it.Offerings[i].Available = false
			}
		}
		out = append(out, it)
	}
	return out
}

var (
	spotAndOnDemand = []string{string(nodeplan.CapacityTypeSpot), string(nodeplan.CapacityTypeOnDemand)}
	arches          = []string{"amd64", "arm64"}
)

// nodePools draws two to four pools: a general pool always, and some of a dedicated batch pool
// (tainted, spot, fewer zones), an arm64 pool (tainted, weighted first) and a critical pool
// (on-demand, labelled, weighted).
func (g *gen) nodePools() []nodeplan.NodePool {
	general := nodeplan.NodePool{Name: "general", Template: nodeplan.NodeClaimTemplate{
		Requirements: nodeplan.NewRequirements(
			nodeplan.In(nodeplan.LabelCapacityType, subset(g, spotAndOnDemand)...),
			nodeplan.In(nodeplan.LabelInstanceCategory, subset(g, []string{"c", "m", "r", "t"})...),
			nodeplan.In(nodeplan.LabelArch, "amd64"),
		),
	}}
	if g.more && g.chance(15) {
		// Karpenter's launch flexibility: at least 2 to 4 instance types per claim.
		it, _ := nodeplan.NewRequirement(nodeplan.LabelInstanceType, corev1.NodeSelectorOpExists)
		it.MinValues = 2 + g.pick(3)
		general.Template.Requirements = general.Template.Requirements.Add(it)
	}
	if g.chance(50) {
		general.Template.Labels = map[string]string{"pool": "general"}
	}
	if g.chance(25) {
		general.Template.Taints = []corev1.Taint{{Key: "soft", Value: "true", Effect: corev1.TaintEffectPreferNoSchedule}}
	}
	g.pools = []nodeplan.NodePool{general}
	if g.chance(60) {
		g.pools = append(g.pools, nodeplan.NodePool{Name: "batch", Template: nodeplan.NodeClaimTemplate{
			Labels: map[string]string{"workload": "batch"},
			Taints: []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}},
			Requirements: nodeplan.NewRequirements(
				nodeplan.In(nodeplan.LabelCapacityType, string(nodeplan.CapacityTypeSpot)),
				nodeplan.In(nodeplan.LabelZone, subset(g, g.zones)...),
			),
		}})
	}
	if g.chance(50) {
		g.pools = append(g.pools, nodeplan.NodePool{Name: "arm", Weight: 10, Template: nodeplan.NodeClaimTemplate{
			Labels: map[string]string{"pool": "arm"},
			Taints: []corev1.Taint{{Key: "arch", Value: "arm64", Effect: corev1.TaintEffectNoSchedule}},
			Requirements: nodeplan.NewRequirements(
				nodeplan.In(nodeplan.LabelArch, "arm64"),
				nodeplan.In(nodeplan.LabelCapacityType, subset(g, spotAndOnDemand)...),
			),
		}})
	}
	if g.chance(50) {
		g.pools = append(g.pools, nodeplan.NodePool{Name: "critical", Weight: 20, Template: nodeplan.NodeClaimTemplate{
			Labels: map[string]string{"tier": "critical"},
			Taints: []corev1.Taint{{Key: "critical", Value: "true", Effect: corev1.TaintEffectNoExecute}},
			Requirements: nodeplan.NewRequirements(
				nodeplan.In(nodeplan.LabelCapacityType, string(nodeplan.CapacityTypeOnDemand)),
				nodeplan.In(nodeplan.LabelZone, subset(g, g.zones)...),
				nodeplan.NotIn(nodeplan.LabelInstanceSize, "large"),
			),
		}})
	}
	return g.pools
}

// daemonSets draws up to three DaemonSets: one that tolerates everything and uses a host port,
// one for amd64 nodes only, one with a sidecar and pod-level resources.
func (g *gen) daemonSets() []*appsv1.DaemonSet {
	var out []*appsv1.DaemonSet
	if g.chance(80) {
		spec := corev1.PodSpec{
			Containers: []corev1.Container{{Name: "exporter", Image: "node-exporter",
				Resources: requests(pickOf(g, []string{"50m", "100m"}), pickOf(g, []string{"64Mi", "128Mi"})),
				Ports:     []corev1.ContainerPort{{ContainerPort: 9100, HostPort: 9100, Protocol: corev1.ProtocolTCP}}}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		}
		out = append(out, daemonSet("node-exporter", spec))
	}
	if g.chance(60) {
		spec := corev1.PodSpec{
			Containers:   []corev1.Container{{Name: "agent", Image: "log-agent", Resources: requests("200m", "256Mi")}},
			NodeSelector: map[string]string{corev1.LabelArchStable: "amd64"},
		}
		if g.chance(50) {
			spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
		}
		out = append(out, daemonSet("log-agent", spec))
	}
	if g.chance(40) {
		spec := corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "proxy", Image: "proxy", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
				Resources: requests("100m", "64Mi")}},
			Containers:  []corev1.Container{{Name: "csi", Image: "csi"}},
			Resources:   &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: qty("300m"), corev1.ResourceMemory: qty("200Mi")}},
			Tolerations: []corev1.Toleration{{Key: "arch", Operator: corev1.TolerationOpExists}, {Key: "critical", Operator: corev1.TolerationOpExists}},
		}
		out = append(out, daemonSet("csi-node", spec))
	}
	return out
}

func daemonSet(name string, spec corev1.PodSpec) *appsv1.DaemonSet {
	labels := map[string]string{"app": name}
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name, UID: k8stypes.UID("ds-" + dnsName(name))},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}

func dnsName(s string) string { return strings.ReplaceAll(s, ".", "-") }

func qty(s string) resource.Quantity { return resource.MustParse(s) }

func requests(cpu, mem string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: qty(cpu), corev1.ResourceMemory: qty(mem)}}
}

var (
	cpus     = []string{"100m", "250m", "500m", "1", "1500m", "2", "3500m"}
	memories = []string{"128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi", "7Gi"}
	// labelValues are the values Karpenter's benchmark draws labels and selectors from.
	labelValues = []string{"a", "b", "c", "d", "e", "f", "g"}
)

// deployments draws deployments until about n pods exist.
func (g *gen) deployments(n int) {
	namespaces := []string{"default", "shop", "batch"}
	for i := 0; n > 0; i++ {
		replicas := min(n, 1+g.pick(30))
		n -= replicas
		app := fmt.Sprintf("app-%d", i)
		ns := pickOf(g, namespaces)
		labels := map[string]string{"app": app, "my-label": pickOf(g, labelValues)}
		if g.more && g.chance(8) {
			g.zonalSiblings(ns, app, labels, replicas)
			continue
		}
		spec := g.podSpec(app)
		g.apps = append(g.apps, app)
		for r := range replicas {
			g.pods = append(g.pods, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", app, r), Labels: labels,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app, UID: k8stypes.UID("rs-" + dnsName(app)), Controller: ptr.To(true)}}},
				Spec: *spec.DeepCopy(),
			})
		}
	}
}

// zonalSiblings draws per-zone deployments of one app, the shape of a service deployed once per
// zone: each pinned to its zone by a nodeSelector, all with the same labels and one zone spread
// over them (maxSkew 1). kube-scheduler's default nodeAffinityPolicy Honor counts, for each
// pod, only the zones its own selector admits, so every pod has a domain however uneven the
// replica counts.
func (g *gen) zonalSiblings(ns, app string, labels map[string]string, replicas int) {
	g.apps = append(g.apps, app)
	for zi, zone := range subset(g, g.zones) {
		spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: app,
			Resources: requests(pickOf(g, cpus[:4]), pickOf(g, memories[:4]))}}}
		spec.NodeSelector = map[string]string{nodeplan.LabelZone: zone}
		spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: nodeplan.LabelZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
		g.tolerations(&spec)
		name := fmt.Sprintf("%s-%s", app, zone)
		for r := range 1 + g.pick(max(1, replicas)) {
			g.pods = append(g.pods, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", name, r), Labels: labels,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: k8stypes.UID(fmt.Sprintf("rs-%s-%d", dnsName(app), zi)), Controller: ptr.To(true)}}},
				Spec: *spec.DeepCopy(),
			})
		}
	}
}

// podSpec draws one deployment's pod template.
func (g *gen) podSpec(app string) corev1.PodSpec {
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: app}}}
	cpu, mem := pickOf(g, cpus), pickOf(g, memories)
	switch g.pick(6) {
	case 0: // pod-level resources; the containers ask for less or nothing
		spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: qty(cpu), corev1.ResourceMemory: qty(mem)}}
		if g.chance(50) {
			spec.Containers[0].Resources = requests("100m", "128Mi")
		}
	case 1: // a sidecar: its requests add to the main container's
		spec.Containers[0].Resources = requests(cpu, mem)
		spec.InitContainers = []corev1.Container{{Name: "mesh", Image: "mesh", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
			Resources: requests(pickOf(g, []string{"100m", "250m"}), "128Mi")}}
	case 2: // a plain init container asking for more than the app: the pod needs the larger
		spec.Containers[0].Resources = requests("250m", mem)
		spec.InitContainers = []corev1.Container{{Name: "migrate", Image: "migrate", Resources: requests(cpu, "256Mi")}}
	default:
		spec.Containers[0].Resources = requests(cpu, mem)
		if g.chance(20) {
			spec.Containers = append(spec.Containers, corev1.Container{Name: "helper", Image: "helper", Resources: requests("100m", "64Mi")})
		}
	}
	if g.chance(15) {
		spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: int32(8080 + g.pick(2)), Protocol: corev1.ProtocolTCP}}
	}
	g.nodeConstraints(&spec)
	g.tolerations(&spec)
	g.spread(&spec, app)
	g.affinity(&spec, app)
	return spec
}

// nodeConstraints draws node selectors and node affinity over the labels pools give nodes.
func (g *gen) nodeConstraints(spec *corev1.PodSpec) {
	var reqs []corev1.NodeSelectorRequirement
	switch g.pick(8) {
	case 0:
		spec.NodeSelector = map[string]string{nodeplan.LabelCapacityType: pickOf(g, spotAndOnDemand)}
	case 1:
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: nodeplan.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: subset(g, g.zones)})
	case 2:
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: nodeplan.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{pickOf(g, arches)}})
	case 3:
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: nodeplan.LabelInstanceCategory, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"t"}})
	case 4:
		spec.NodeSelector = map[string]string{"workload": "batch"}
	}
	if len(reqs) > 0 {
		spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: reqs}}}}}
	}
	if g.chance(15) {
		if spec.Affinity == nil {
			spec.Affinity = &corev1.Affinity{}
		}
		if spec.Affinity.NodeAffinity == nil {
			spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
		}
		spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.PreferredSchedulingTerm{{Weight: 50,
			Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: nodeplan.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{string(nodeplan.CapacityTypeSpot)}}}}}}
		if g.more && g.chance(40) {
			// A heavier term no node can meet, the shape of a preference for a zone or a
			// family the pools do not offer: relaxing it must not relax the lighter one too.
			spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append([]corev1.PreferredSchedulingTerm{{Weight: 100,
				Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: nodeplan.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"nowhere-1z"}}}}}},
				spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
		}
	}
}

// tolerations draws tolerations of the pools' taints.
func (g *gen) tolerations(spec *corev1.PodSpec) {
	if spec.NodeSelector["workload"] == "batch" || g.chance(25) {
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "batch", Effect: corev1.TaintEffectNoSchedule})
	}
	if g.chance(30) {
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: "arch", Operator: corev1.TolerationOpExists})
	}
	if g.chance(20) {
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: "critical", Operator: corev1.TolerationOpEqual, Value: "true"})
	}
}

// selector draws a label selector: the pod's own app (the common case), another deployment,
// or a Karpenter-style label drawn independently of the pod's own.
func (g *gen) selector(app string) *metav1.LabelSelector {
	switch g.pick(4) {
	case 0, 1:
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	case 2:
		if len(g.apps) > 0 {
			return &metav1.LabelSelector{MatchLabels: map[string]string{"app": pickOf(g, g.apps)}}
		}
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	default:
		return &metav1.LabelSelector{MatchLabels: map[string]string{"my-label": pickOf(g, labelValues)}}
	}
}

func (g *gen) topologyKey() string {
	if g.chance(50) {
		return nodeplan.LabelZone
	}
	return nodeplan.LabelHostname
}

// spread draws up to two topology spread constraints.
func (g *gen) spread(spec *corev1.PodSpec, app string) {
	for range g.pick(3) {
		c := corev1.TopologySpreadConstraint{
			MaxSkew:           int32(1 + g.pick(2)),
			TopologyKey:       g.topologyKey(),
			WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector:     g.selector(app),
		}
		if slices.ContainsFunc(spec.TopologySpreadConstraints, func(o corev1.TopologySpreadConstraint) bool {
			return o.TopologyKey == c.TopologyKey
		}) {
			continue // kube-apiserver rejects two constraints with the same key and effect
		}
		if g.chance(20) {
			c.WhenUnsatisfiable = corev1.ScheduleAnyway
		}
		if c.WhenUnsatisfiable == corev1.DoNotSchedule && c.TopologyKey == nodeplan.LabelZone && g.chance(25) {
			c.MinDomains = ptr.To(int32(len(g.zones)))
		}
		if g.more && g.chance(4) {
			// A key no node carries: kube-scheduler filters out every node without it, so a
			// DoNotSchedule carrier can never bind and must be left unplaced.
			c.TopologyKey = "example.com/rack"
		}
		if g.chance(30) {
			c.NodeAffinityPolicy = ptr.To(pickOf(g, []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore}))
		}
		if g.chance(30) {
			c.NodeTaintsPolicy = ptr.To(pickOf(g, []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore}))
		}
		spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, c)
	}
}

// affinity draws required and preferred pod affinity and anti-affinity.
func (g *gen) affinity(spec *corev1.PodSpec, app string) {
	term := func() corev1.PodAffinityTerm {
		t := corev1.PodAffinityTerm{LabelSelector: g.selector(app), TopologyKey: g.topologyKey()}
		if g.chance(10) {
			t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": pickOf(g, []string{"core", "web", "data"})}}
		}
		return t
	}
	var pa corev1.PodAffinity
	var anti corev1.PodAntiAffinity
	switch g.pick(8) {
	case 0:
		pa.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{term()}
	case 1, 2:
		anti.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{term()}
	case 3:
		pa.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 10, PodAffinityTerm: term()}}
	case 4:
		anti.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 10, PodAffinityTerm: term()}}
	}
	if pa.Size() == 0 && anti.Size() == 0 {
		return
	}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if pa.Size() > 0 {
		spec.Affinity.PodAffinity = &pa
	}
	if anti.Size() > 0 {
		spec.Affinity.PodAntiAffinity = &anti
	}
}

// diversePods draws n pods as Karpenter's benchmark does: a sixth each of generic pods, zone
// spread, hostname spread, hostname and zone affinity, and hostname anti-affinity, every pod's
// labels and every selector drawn on their own.
func (g *gen) diversePods(n int) {
	sixth := n / 6
	mk := func(kind string, i int, labels map[string]string, mutate func(*corev1.PodSpec)) {
		spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "pause",
			Resources: requests(pickOf(g, []string{"100m", "250m", "500m", "1", "1500m"}), pickOf(g, []string{"100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"}))}}}
		if mutate != nil {
			mutate(&spec)
		}
		g.pods = append(g.pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("%s-%d", kind, i), Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: kind, UID: k8stypes.UID("rs-" + dnsName(kind)), Controller: ptr.To(true)}}},
			Spec: spec})
	}
	random := func(key string) map[string]string { return map[string]string{key: pickOf(g, labelValues)} }
	spread := func(key string) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) {
			s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: key,
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: random("my-label")}}}
		}
	}
	affinity := func(key string) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				{LabelSelector: &metav1.LabelSelector{MatchLabels: random("my-affinity")}, TopologyKey: key}}}}
		}
	}
	for i := range sixth {
		mk("diverse-generic", i, random("my-label"), nil)
		mk("diverse-zone-spread", i, random("my-label"), spread(nodeplan.LabelZone))
		mk("diverse-host-spread", i, random("my-label"), spread(nodeplan.LabelHostname))
		mk("diverse-host-affinity", i, random("my-affinity"), affinity(nodeplan.LabelHostname))
		mk("diverse-zone-affinity", i, random("my-affinity"), affinity(nodeplan.LabelZone))
		nginx := map[string]string{"app": "nginx"}
		mk("diverse-host-anti", i, nginx, func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				{LabelSelector: &metav1.LabelSelector{MatchLabels: nginx}, TopologyKey: nodeplan.LabelHostname}}}}
		})
	}
	for i := range n - 6*sixth {
		mk("diverse-extra", i, random("my-label"), nil)
	}
}
