package scheduling_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/check"
	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
)

// topologyOracleCases is how many random small inputs TestOracleTopology solves, seeds 0 to
// topologyOracleCases-1; each is reproducible with schedulingtest.TopologyInputs().Example(seed).
const topologyOracleCases = 400

// topologyExtraSeeds are seeds beyond that range that showed a solver bug no seed in it shows;
// TestOracleTopology solves them too, even with -short.
var topologyExtraSeeds = []int{1085, 1905, 1935}

// topologyWithin5 is the share of comparable cases in which Solve must cost at most 5% more than
// the optimum. Measured: 96.9% of the 393 comparable cases of seeds 0–399, 95.2% of seeds
// 0–2999; the misses are packing choices around zone constraints, volume zones and existing
// nodes.
const topologyWithin5 = 0.93

// Why Solve falls short of the optimum on the seeds of knownTopologyOracle and on the known
// cases of TestSolveTopologyKnown. Each was checked by hand against the oracle's plan, which
// package check accepts.
const (
	// Spread and anti-affinity over zones become subgroups pinned to one zone each before
	// packing, sized and placed zone by zone rather than with the other pods: three pods with
	// maxSkew 2 get a node in each of three zones where two zones do, and a lone spread pod
	// gets a node of its own in another zone than the node it would fit on. (The bound was
	// once proved on that split too, and reported such plans optimal; it is now proved on the
	// relaxed problem, so these seeds only count against the 5% rate.)
	knownZoneSplit = "zone split before packing"
	// A group with required affinity to itself over hostnames starts on an existing node with
	// room for only part of it; the rest are left out instead of the group going to a new node.
	knownHostnameAffinityStart = "self-affine hostname group starts on a node too small for it"
	// Self affinity over zones picks the cheapest zone for new nodes and misses free room on
	// existing nodes in another zone.
	knownSelfZoneAffinity = "self zone affinity ignores existing room"
	// Seed 1905: pods with zone affinity to app-0 are left out where the optimum places
	// them all. (It once gave an invalid plan: app-0 was dropped after its followers were
	// placed; seed 1085 placed a pod in the zone of a pending pod its anti-affinity selects,
	// and seed 176 dropped pods placed with a hostname-affinity partner as "MinValues". The
	// three are fixed and stay in topologyExtraSeeds.)
	knownAffinityLeftOut = "zone affinity followers left out"
)

// knownTopologyOracle lists seeds where Solve is known to fall short of the optimum — pods
// placed, or a LowerBound above the optimum — with why; TestOracleTopology logs them instead of
// failing. Whoever fixes a cause deletes its seeds (the test says which no longer fall short).
var knownTopologyOracle = map[int]string{
	57:  knownHostnameAffinityStart,
	101: knownHostnameAffinityStart,
	318: knownHostnameAffinityStart,

	1905: knownAffinityLeftOut,
}

// TestOracleTopology compares Solve with the exhaustive optimum on small random inputs full
// of zone and hostname spread, pod anti-affinity and affinity.
//
// The optimum is taken twice. The "check" optimum reads hostname spread as package check
// does, over exactly the input's nodes and the plan's: every plan check accepts costs at least
// that much, so Solve may never beat it — if it does, the oracle is wrong. The "empty node"
// optimum reads hostname spread as Solve's doc says it does (and Karpenter): some eligible node
// always holds none of the pods, so each node takes at most maxSkew of them. Solve is judged
// against that one: it must place as many pods, cost no less, cost at most 5% more in
// topologyWithin5 of the cases, and its LowerBound may not exceed the optimum for the pods it
// placed. Where the readings differ the check optimum stacks more than maxSkew pods on a node,
// which Solve declines on purpose; the test logs how often, and how often LowerBound is above
// the check optimum for that reason.
func TestOracleTopology(t *testing.T) {
	n := topologyOracleCases
	if testing.Short() {
		n = 100
	}
	gen := schedulingtest.TopologyInputs()
	var (
		ratios    []float64 // Solve / empty-node optimum, where both place the same pods
		worst     float64
		worstSeed = -1
		failures  = map[int][]string{}
		above     []string // seeds beyond 5%, with their ratio
		readings  int      // cases where the two readings of hostname spread differ
		// boundAboveCheck counts cases where LowerBound is valid for Solve's reading of hostname
		// spread but above the check optimum.
		boundAboveCheck int
	)
	seeds := slices.Concat(seedRange(n), topologyExtraSeeds)
	for _, seed := range seeds {
		in := gen.Example(seed)
		res, err := scheduling.Solve(context.Background(), in)
		if err != nil {
			t.Fatalf("seed %d: Solve() error = %v, want nil", seed, err)
		}
		fail := func(format string, args ...any) {
			failures[seed] = append(failures[seed], fmt.Sprintf("seed %d: ", seed)+fmt.Sprintf(format, args...))
		}
		if err := check.Result(in, res); err != nil {
			fail("check.Result(in, Solve(in)) = %v", err)
			continue
		}
		loose, looseOut, ok := schedulingtest.OptimalTopology(in, schedulingtest.TopologyRules{})
		if !ok {
			t.Fatalf("seed %d: OptimalTopology() ok = false on a TopologyInputs input", seed)
		}
		strict, strictOut, _ := schedulingtest.OptimalTopology(in, schedulingtest.TopologyRules{EmptyHostnameDomain: true})
		if len(strictOut) != len(looseOut) || math.Abs(strict-loose) > 1e-9 {
			readings++
		}
		out := len(res.Unschedulable)
		switch {
		case out < len(looseOut):
			t.Fatalf("seed %d: Solve leaves %d pods out, the check optimum %d %v: the oracle is wrong\n%s",
				seed, out, len(looseOut), looseOut, schedulingtest.Describe(in))
		case out == len(looseOut) && res.Cost < loose-1e-9:
			t.Fatalf("seed %d: Solve costs $%.4f, below the check optimum $%.4f: the oracle is wrong\n%s",
				seed, res.Cost, loose, schedulingtest.Describe(in))
		}

		// The bound is for the pods Solve placed: compare it with the optimum for those alone.
		placedOnly := in
		placedOnly.Pods = slices.DeleteFunc(slices.Clone(in.Pods), func(p *corev1.Pod) bool {
			return slices.ContainsFunc(res.Unschedulable, func(u scheduling.Unschedulable) bool { return u.Pod == nodeplan.PodKey(p) })
		})
		bound, boundOut, _ := schedulingtest.OptimalTopology(placedOnly, schedulingtest.TopologyRules{EmptyHostnameDomain: true})
		looseBound, _, _ := schedulingtest.OptimalTopology(placedOnly, schedulingtest.TopologyRules{})
		switch {
		case len(boundOut) > 0:
			fail("the empty-node oracle cannot place %v, which Solve placed: Solve stacks more than maxSkew on a node, against its doc, or the oracle is wrong", boundOut)
		case res.LowerBound > bound+1e-9:
			fail("LowerBound $%.4f is above the optimum $%.4f for the pods Solve placed (Solve costs $%.4f)", res.LowerBound, bound, res.Cost)
		case res.LowerBound > looseBound+1e-9:
			boundAboveCheck++
		}

		switch {
		case out > len(strictOut):
			fail("Solve leaves %d pods out (%s), the optimum %d %v", out, unplacedKeys(res), len(strictOut), strictOut)
			continue
		case out < len(strictOut):
			fail("Solve places more pods than the empty-node optimum (%d out vs %v): Solve stacks more than maxSkew on a node, against its doc, or the oracle is wrong", out, strictOut)
			continue
		case res.Cost < strict-1e-9:
			fail("Solve costs $%.4f, below the empty-node optimum $%.4f: Solve stacks more than maxSkew on a node, against its doc, or the oracle is wrong", res.Cost, strict)
			continue
		}
		r := 1.0
		if strict > 0 {
			r = res.Cost / strict
		} else if res.Cost > 0 {
			r = math.Inf(1)
		}
		ratios = append(ratios, r)
		if r > 1.05+1e-9 {
			above = append(above, fmt.Sprintf("%d (%.3f)", seed, r))
		}
		if r > worst {
			worst, worstSeed = r, seed
		}
	}

	within := 0
	for _, r := range ratios {
		if r <= 1.05+1e-9 {
			within++
		}
	}
	sorted := slices.Clone(ratios)
	sort.Float64s(sorted)
	mean, finite := 0.0, 0
	for _, r := range ratios {
		if !math.IsInf(r, 1) {
			mean += r
			finite++
		}
	}
	mean /= math.Max(1, float64(finite))
	t.Logf("Solve vs the empty-node optimum over %d of %d cases: within 5%%: %d (%.1f%%); optimal %d; mean of the %d finite ratios %.4f; worst %.4f (seed %d)",
		len(ratios), len(seeds), within, 100*float64(within)/math.Max(1, float64(len(ratios))), countAtMost(sorted, 1+1e-9), finite, mean, worst, worstSeed)
	if len(sorted) > 0 {
		t.Logf("percentiles: p50 %.4f, p90 %.4f, p99 %.4f", sorted[len(sorted)/2], sorted[len(sorted)*9/10], sorted[len(sorted)*99/100])
	}
	t.Logf("beyond 5%%: %s", strings.Join(above, ", "))
	t.Logf("the two readings of hostname spread differ in %d cases; LowerBound is above the check optimum in %d", readings, boundAboveCheck)
	for _, seed := range seeds {
		for _, f := range failures[seed] {
			if why, ok := knownTopologyOracle[seed]; ok {
				t.Logf("known (%s): %s", why, f)
			} else {
				t.Errorf("%s\n%s", f, schedulingtest.Describe(gen.Example(seed)))
			}
		}
		if _, ok := knownTopologyOracle[seed]; ok && len(failures[seed]) == 0 {
			t.Logf("seed %d no longer falls short: delete it from knownTopologyOracle", seed)
		}
	}
	if len(ratios) > 0 && float64(within) < topologyWithin5*float64(len(ratios)) {
		t.Errorf("Solve is within 5%% of the optimum in %d of %d cases, want ≥ %.0f%%", within, len(ratios), 100*topologyWithin5)
	}
}

func seedRange(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func countAtMost(sorted []float64, x float64) int {
	return sort.Search(len(sorted), func(i int) bool { return sorted[i] > x })
}

func unplacedKeys(res scheduling.Result) string {
	var keys []string
	for _, u := range res.Unschedulable {
		keys = append(keys, u.Pod+" ("+string(u.Code)+")")
	}
	return strings.Join(keys, ", ")
}

// replicas are n pods app-0 … app-(n-1) with label app, asking cpu each, each changed by opts.
func replicas(app string, n int, cpu string, opts ...func(*corev1.Pod)) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("%s-%d", app, i), Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
		}
		for _, o := range opts {
			o(p)
		}
		out = append(out, p)
	}
	return out
}

func selectsApp(app string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
}

func spreadOver(key string, maxSkew int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selectsApp(p.Labels["app"])})
	}
}

func antiTo(key, app string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			{TopologyKey: key, LabelSelector: selectsApp(app)}}}}
	}
}

func affineTo(key, app string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			{TopologyKey: key, LabelSelector: selectsApp(app)}}}}
	}
}

func runningOn(node string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Name, p.Spec.NodeName = "running-"+p.Name, node }
}

// zonalNode is an existing node in zone with cpu allocatable, running pods.
func zonalNode(name, zone, cpu string, pods []*corev1.Pod) scheduling.Node {
	return scheduling.Node{
		Node: &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{nodeplan.LabelZone: zone, nodeplan.LabelHostname: name}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu),
				corev1.ResourcePods: resource.MustParse("110")}},
		},
		Pods: pods,
	}
}

// TestSolveTopologyKnown solves small cases whose optimum is known by hand, and checks that
// the oracle finds the same.
func TestSolveTopologyKnown(t *testing.T) {
	all := []string{"zone-a", "zone-b", "zone-c"}
	input := func(zones []string, nodes []scheduling.Node, groups ...[]*corev1.Pod) scheduling.Input {
		in := scheduling.Input{NodePools: []nodeplan.NodePool{{Name: "default"}}, InstanceTypes: []nodeplan.InstanceType{schedulingtest.ZonalType(zones...)}, Nodes: nodes}
		for _, g := range groups {
			in.Pods = append(in.Pods, g...)
		}
		return in
	}
	tests := []struct {
		name string
		in   scheduling.Input
		cost float64
		out  int
		// known says why Solve misses this optimum today; the case then logs instead of
		// failing. Whoever fixes the cause clears it.
		known string
	}{
		{
			name: "3 pods, zone spread maxSkew 1 over 3 zones: a node per zone",
			in:   input(all, nil, replicas("web", 3, "1", spreadOver(nodeplan.LabelZone, 1))),
			cost: 0.63,
		},
		{
			name: "3 pods, hostname anti-affinity: 3 nodes",
			in:   input([]string{"zone-a"}, nil, replicas("web", 3, "500m", antiTo(nodeplan.LabelHostname, "web"))),
			cost: 0.60,
		},
		{
			name: "4 pods, zone anti-affinity over 3 zones: one left out",
			in:   input(all, nil, replicas("web", 4, "500m", antiTo(nodeplan.LabelZone, "web"))),
			cost: 0.63, out: 1,
		},
		{
			name: "4 pods, hostname spread maxSkew 1: a node each",
			in:   input([]string{"zone-a"}, nil, replicas("web", 4, "500m", spreadOver(nodeplan.LabelHostname, 1))),
			cost: 0.80,
		},
		{
			name: "zone spread counts running pods: zone-a already has 2",
			in: input(all, []scheduling.Node{zonalNode("full", "zone-a", "1",
				replicas("web", 2, "500m", spreadOver(nodeplan.LabelZone, 1), runningOn("full")))},
				replicas("web", 4, "1", spreadOver(nodeplan.LabelZone, 1))),
			cost: 0.43,
		},
		{
			name: "affinity to a running pod's zone",
			in: input(all, []scheduling.Node{zonalNode("db", "zone-c", "1", replicas("db", 1, "1", runningOn("db")))},
				replicas("web", 2, "1", affineTo(nodeplan.LabelZone, "db"))),
			cost: 0.22,
		},
		{
			name: "self affinity over zones: both nodes in the cheapest zone",
			in:   input(all, nil, replicas("web", 2, "3", affineTo(nodeplan.LabelZone, "web"))),
			cost: 0.40,
		},
		{
			name: "a running pod's anti-affinity keeps a pod off its node",
			in: input([]string{"zone-a"}, []scheduling.Node{zonalNode("n1", "zone-a", "4",
				replicas("guard", 1, "100m", antiTo(nodeplan.LabelHostname, "web"), runningOn("n1")))},
				replicas("web", 1, "1"), replicas("other", 1, "1")),
			cost: 0.20,
		},
		{
			// Two pods in zone-a and one in zone-b have skew 2.
			name:  "3 pods, zone spread maxSkew 2: two zones are enough",
			in:    input(all, nil, replicas("web", 3, "1", spreadOver(nodeplan.LabelZone, 2))),
			cost:  0.41,
			known: knownZoneSplit,
		},
		{
			name:  "self affinity over zones, free room in zone-c",
			in:    input(all, []scheduling.Node{zonalNode("free", "zone-c", "4", nil)}, replicas("web", 2, "1", affineTo(nodeplan.LabelZone, "web"))),
			cost:  0,
			known: knownSelfZoneAffinity,
		},
		{
			// zone-b has one web pod, so zone-a may take two.
			name: "zone spread with volumes in zone-a, a running pod in zone-b",
			in: func() scheduling.Input {
				in := input([]string{"zone-a", "zone-b"}, []scheduling.Node{zonalNode("full", "zone-b", "500m", replicas("web", 1, "500m", runningOn("full")))},
					replicas("web", 2, "1", spreadOver(nodeplan.LabelZone, 1)))
				in.VolumeZones = map[string][]string{"default/web-0": {"zone-a"}, "default/web-1": {"zone-a"}}
				return in
			}(),
			cost: 0.20,
		},
		{
			name:  "self affinity over hostnames, an existing node with room for one",
			in:    input(all, []scheduling.Node{zonalNode("small", "zone-c", "1", nil)}, replicas("web", 3, "1", affineTo(nodeplan.LabelHostname, "web"))),
			cost:  0.20,
			known: knownHostnameAffinityStart,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := solveAndCheck(t, tt.in)
			var misses []string
			if math.Abs(res.Cost-tt.cost) > 1e-9 || len(res.Unschedulable) != tt.out {
				misses = append(misses, fmt.Sprintf("Solve() = $%.4f with %d pods out (%s), want $%.4f with %d out", res.Cost, len(res.Unschedulable), unplacedKeys(res), tt.cost, tt.out))
			}
			if len(res.Unschedulable) == tt.out && res.LowerBound > tt.cost+1e-9 {
				misses = append(misses, fmt.Sprintf("Solve().LowerBound = $%.4f, above the optimum $%.4f", res.LowerBound, tt.cost))
			}
			for _, m := range misses {
				if tt.known != "" {
					t.Logf("known (%s): %s", tt.known, m)
				} else {
					t.Error(m)
				}
			}
			if tt.known != "" && len(misses) == 0 {
				t.Logf("Solve finds the optimum now: clear known")
			}
			cost, out, ok := schedulingtest.OptimalTopology(tt.in, schedulingtest.TopologyRules{EmptyHostnameDomain: true})
			if !ok || math.Abs(cost-tt.cost) > 1e-9 || len(out) != tt.out {
				t.Errorf("OptimalTopology() = $%.4f, %v, %v; want $%.4f with %d out", cost, out, ok, tt.cost, tt.out)
			}
		})
	}
}
