package suite

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
)

// Scenario is one provisioning problem of the suite.
type Scenario struct {
	// Name is unique within the suite, e.g. "karpenter-mix-5000".
	Name string
	// Family groups scenarios that differ only in size, e.g. "karpenter-mix"; charts draw one
	// line per family.
	Family string
	// Description says what the scenario models, in one sentence.
	Description string
	// Input is the problem; its Pods all pend and there are no existing nodes.
	Input scheduling.Input
}

// Size selects the scale of the suite.
type Size int

const (
	// Full is the published suite: up to 100,000 pods.
	Full Size = iota
	// Small is every scenario at a size that solves in well under a second, for tests.
	Small
)

// Scenarios generates the suite at the given size, in a fixed order. Each call builds fresh
// inputs, so callers may keep or modify them.
//
// Pods are shaped as a kube-apiserver returns them (schedulingtest.APIServerShapedPods): the
// defaults, admission plugins' tolerations and priority, the ReplicaSet controller's metadata
// and the scheduler's status — what a solver meets in a real cluster.
func Scenarios(size Size) ([]Scenario, error) {
	scs, err := BareScenarios(size)
	if err != nil {
		return nil, err
	}
	for i := range scs {
		scs[i].Input.Pods = schedulingtest.APIServerShapedPods(scs[i].Input.Pods)
	}
	return scs, nil
}

// BareScenarios is [Scenarios] with the pods as the suite builds them — names, labels,
// requests and constraints only — to show that what the API server adds changes no plan.
func BareScenarios(size Size) ([]Scenario, error) {
	cat, err := Catalog()
	if err != nil {
		return nil, err
	}
	pick := func(full, small int) int {
		if size == Small {
			return small
		}
		return full
	}
	var out []Scenario
	for _, n := range []int{pick(100, 10), pick(1000, 50), pick(5000, 200)} {
		out = append(out, inflate(n))
	}
	for _, n := range []int{pick(1000, 40), pick(5000, 70), pick(20000, 100)} {
		out = append(out, karpenterMix(n))
	}
	for _, n := range []int{pick(1000, 40), pick(5000, 70), pick(20000, 100)} {
		out = append(out, karpenterMixDrawn(n))
	}
	out = append(out,
		webMix(pick(3000, 90)),
		antiAffinity(pick(40, 5)),
		gpuPools(pick(64, 4), pick(1000, 40)),
		spotOnDemand(pick(1500, 60), pick(200, 12)),
		deployments(pick(5000, 10)),
	)
	for i := range out {
		out[i].Input.InstanceTypes = cat
		out[i].Input.DaemonSets = DaemonSets()
	}
	return out, nil
}

// generalPool is the EKS workshop's default pool: on-demand compute, general-purpose and
// memory-optimized families of generation 5 and later.
func generalPool(name string, weight int32, capacityType nodeplan.CapacityType) nodeplan.NodePool {
	gen, err := nodeplan.NewRequirement(nodeplan.LabelInstanceGeneration, corev1.NodeSelectorOpGt, "4")
	if err != nil {
		panic(err) // a constant requirement: cannot fail
	}
	return nodeplan.NodePool{Name: name, Weight: weight, Template: nodeplan.NodeClaimTemplate{
		Requirements: nodeplan.NewRequirements(gen,
			nodeplan.In(nodeplan.LabelInstanceCategory, "c", "m", "r"),
			nodeplan.In(nodeplan.LabelCapacityType, string(capacityType)),
			nodeplan.In(nodeplan.LabelOS, "linux")),
		NodeClassRef: nodeplan.NodeClassRef{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
	}}
}

func onePool() []nodeplan.NodePool {
	return []nodeplan.NodePool{generalPool("general", 0, nodeplan.CapacityTypeOnDemand)}
}

// inflate is the Karpenter getting-started workload: n replicas of a pause pod asking for one
// cpu.
func inflate(n int) Scenario {
	b := podBuilder{scenario: fmt.Sprintf("inflate-%d", n)}
	b.deployment("default", "inflate", n, shape{cpu: "1"}, nil)
	return Scenario{
		Name: b.scenario, Family: "inflate",
		Description: fmt.Sprintf("%d identical replicas requesting 1 cpu", n),
		Input:       scheduling.Input{Pods: b.pods, NodePools: onePool()},
	}
}

// Karpenter's benchmark draws requests from these lists.
var (
	mixCPU = []string{"100m", "250m", "500m", "1", "1500m"}
	mixMem = []string{"100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"}
	// mixValues are the label values pods are grouped by: seven "deployments" per group.
	mixValues = []string{"a", "b", "c", "d", "e", "f", "g"}
)

// karpenterMix follows the structure of Karpenter's own scheduling benchmark
// (makeDiversePods): a fifth each of generic pods, zone spread, hostname spread, zone
// self-affinity and hostname anti-affinity, with requests drawn at random. Unlike Karpenter's
// generator, every constraint selects the pod's own group, so each constraint binds the pods
// that carry it.
func karpenterMix(n int) Scenario {
	name := fmt.Sprintf("karpenter-mix-%d", n)
	rng := rand.New(rand.NewPCG(42, uint64(n)))
	b := podBuilder{scenario: name}
	req := func() shape {
		return shape{cpu: mixCPU[rng.IntN(len(mixCPU))], mem: mixMem[rng.IntN(len(mixMem))]}
	}
	fifth := n / 5
	groups := []struct {
		prefix, key string
		constrain   func(value string) func(*corev1.Pod)
	}{
		{"generic", "mix-generic", nil},
		{"zone-spread", "mix-zone-spread", func(v string) func(*corev1.Pod) { return zoneSpread("mix-zone-spread", v) }},
		{"host-spread", "mix-host-spread", func(v string) func(*corev1.Pod) {
			return spread(corev1.LabelHostname, "mix-host-spread", v)
		}},
		{"zone-affinity", "mix-zone-affinity", func(v string) func(*corev1.Pod) {
			return podAffinity(false, corev1.LabelTopologyZone, "mix-zone-affinity", v)
		}},
	}
	for _, g := range groups {
		for i := range fifth {
			v := mixValues[rng.IntN(len(mixValues))]
			var mutate func(*corev1.Pod)
			if g.constrain != nil {
				mutate = g.constrain(v)
			}
			b.add("default", fmt.Sprintf("%s-%d", g.prefix, i), map[string]string{g.key: v}, req(), mutate)
		}
	}
	anti := podAffinity(true, corev1.LabelHostname, "app", "nginx")
	for i := range fifth {
		b.add("default", fmt.Sprintf("host-anti-%d", i), map[string]string{"app": "nginx"}, req(), anti)
	}
	for i := range n - 5*fifth {
		b.add("default", fmt.Sprintf("generic-extra-%d", i), map[string]string{"mix-generic": "a"}, req(), nil)
	}
	return Scenario{
		Name: name, Family: "karpenter-mix",
		Description: fmt.Sprintf("Karpenter's benchmark mix of %d pods: generic, zone spread, hostname spread, zone self-affinity, hostname anti-affinity", n),
		Input:       scheduling.Input{Pods: b.pods, NodePools: onePool()},
	}
}

// karpenterMixDrawn is Karpenter's benchmark mix exactly as its generator draws it
// (schedulingtest.KarpenterMix): every pod's labels and every spread's selector drawn
// independently, so spreads count pods of other kinds and most spread pods do not match their
// own selector, and pods of several sizes share one self-affinity.
func karpenterMixDrawn(n int) Scenario {
	name := fmt.Sprintf("karpenter-mix-drawn-%d", n)
	rng := rand.New(rand.NewPCG(42, uint64(n)))
	return Scenario{
		Name: name, Family: "karpenter-mix-drawn",
		Description: fmt.Sprintf("Karpenter's benchmark mix of %d pods as its generator draws it: labels and selectors drawn independently", n),
		Input:       scheduling.Input{Pods: schedulingtest.KarpenterMix(rng, n, name), NodePools: onePool()},
	}
}

// webShapes are six typical service shapes.
var webShapes = []shape{
	{name: "web", cpu: "250m", mem: "512Mi"},
	{name: "api", cpu: "500m", mem: "1Gi"},
	{name: "worker", cpu: "1", mem: "2Gi"},
	{name: "cache", cpu: "500m", mem: "4Gi"},
	{name: "batch", cpu: "2", mem: "1Gi"},
	{name: "search", cpu: "1500m", mem: "6Gi"},
}

// webMix is deployments of the six web shapes in three namespaces, each spread evenly over the
// zones, with replica counts drawn so that they add up to n.
func webMix(n int) Scenario {
	name := fmt.Sprintf("web-mix-%d", n)
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	namespaces := []string{"shop", "payments", "catalog"}
	type dep struct {
		ns string
		s  shape
		w  int
	}
	var deps []dep
	total := 0
	for _, ns := range namespaces {
		for _, s := range webShapes {
			w := 1 + rng.IntN(10)
			deps = append(deps, dep{ns, s, w})
			total += w
		}
	}
	b := podBuilder{scenario: name}
	left := n
	for i, d := range deps {
		replicas := n * d.w / total
		if i == len(deps)-1 {
			replicas = left
		}
		left -= replicas
		app := d.s.name
		b.deployment(d.ns, app, replicas, d.s, zoneSpread("app", app))
	}
	return Scenario{
		Name: name, Family: "web-mix",
		Description: fmt.Sprintf("%d pods of %d deployments of six shapes, each spread over zones (maxSkew 1)", n, len(deps)),
		Input:       scheduling.Input{Pods: b.pods, NodePools: onePool()},
	}
}

// antiAffinity is eight deployments of the given replicas, each keeping its replicas on
// separate nodes (required hostname anti-affinity with itself); replicas of different
// deployments may share a node.
func antiAffinity(replicas int) Scenario {
	const deployments = 8
	name := fmt.Sprintf("anti-affinity-%d", deployments*replicas)
	b := podBuilder{scenario: name}
	for i := range deployments {
		s := webShapes[i%len(webShapes)]
		app := fmt.Sprintf("%s-%d", s.name, i)
		b.deployment("default", app, replicas, s, podAffinity(true, corev1.LabelHostname, "app", app))
	}
	return Scenario{
		Name: name, Family: "anti-affinity",
		Description: fmt.Sprintf("%d deployments of %d replicas, each with required hostname anti-affinity to itself", deployments, replicas),
		Input:       scheduling.Input{Pods: b.pods, NodePools: onePool()},
	}
}

// gpuPools is a tainted GPU pool (g5, preferred by weight) beside the general pool: GPU pods
// tolerate the taint and ask for one GPU each; the rest are web-shaped and must stay off GPUs.
func gpuPools(gpuPods, webPods int) Scenario {
	name := fmt.Sprintf("gpu-pools-%d", gpuPods+webPods)
	gpu := nodeplan.NodePool{Name: "gpu", Weight: 10, Template: nodeplan.NodeClaimTemplate{
		Requirements: nodeplan.NewRequirements(
			nodeplan.In(nodeplan.LabelInstanceFamily, "g5"),
			nodeplan.In(nodeplan.LabelCapacityType, string(nodeplan.CapacityTypeOnDemand))),
		Taints:       []corev1.Taint{{Key: string(resourceGPU), Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		NodeClassRef: nodeplan.NodeClassRef{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "gpu"},
	}}
	b := podBuilder{scenario: name}
	tol := tolerate(string(resourceGPU), corev1.TaintEffectNoSchedule)
	train := gpuPods * 3 / 4
	b.deployment("ml", "train", train, shape{cpu: "3", mem: "12Gi", gpu: 1}, tol)
	b.deployment("ml", "infer", gpuPods-train, shape{cpu: "1", mem: "4Gi", gpu: 1}, tol)
	per := webPods / len(webShapes)
	for i, s := range webShapes {
		r := per
		if i == 0 {
			r += webPods - per*len(webShapes)
		}
		b.deployment("default", s.name, r, s, nil)
	}
	return Scenario{
		Name: name, Family: "gpu-pools",
		Description: fmt.Sprintf("%d one-GPU pods for a tainted g5 pool (weight 10) and %d web pods for the general pool", gpuPods, webPods),
		Input:       scheduling.Input{Pods: b.pods, NodePools: []nodeplan.NodePool{gpu, generalPool("general", 0, nodeplan.CapacityTypeOnDemand)}},
	}
}

// spotOnDemand is a spot pool of weight 50 limited to cpuLimit cpus beside an unlimited
// on-demand pool of weight 10: spot first, on-demand for the overflow.
func spotOnDemand(n, cpuLimit int) Scenario {
	name := fmt.Sprintf("spot-od-limit-%d", n)
	spot := generalPool("spot", 50, nodeplan.CapacityTypeSpot)
	spot.Limits = corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(cpuLimit), resource.DecimalSI)}
	od := generalPool("on-demand", 10, nodeplan.CapacityTypeOnDemand)
	b := podBuilder{scenario: name}
	per := n / len(webShapes)
	for i, s := range webShapes {
		r := per
		if i == 0 {
			r += n - per*len(webShapes)
		}
		b.deployment("default", s.name, r, s, nil)
	}
	return Scenario{
		Name: name, Family: "spot-od-limit",
		Description: fmt.Sprintf("%d web pods; a spot pool (weight 50, limit %d cpu) beside an on-demand pool (weight 10)", n, cpuLimit),
		Input:       scheduling.Input{Pods: b.pods, NodePools: []nodeplan.NodePool{spot, od}},
	}
}

// deployments is 20 deployments of the given replicas each, with requests drawn from common
// sizes: the many-replica case where grouping identical pods matters.
func deployments(replicas int) Scenario {
	const count = 20
	name := fmt.Sprintf("deployments-%d", count*replicas)
	rng := rand.New(rand.NewPCG(20, uint64(replicas)))
	cpus := []string{"100m", "250m", "500m", "750m", "1", "2", "4"}
	mems := []string{"128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi", "8Gi"}
	b := podBuilder{scenario: name}
	for i := range count {
		s := shape{cpu: cpus[rng.IntN(len(cpus))], mem: mems[rng.IntN(len(mems))]}
		b.deployment("default", fmt.Sprintf("svc-%02d", i), replicas, s, nil)
	}
	return Scenario{
		Name: name, Family: "deployments",
		Description: fmt.Sprintf("%d pods: %d deployments of %d replicas with assorted requests", count*replicas, count, replicas),
		Input:       scheduling.Input{Pods: b.pods, NodePools: onePool()},
	}
}
