package schedulingtest_test

import (
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/check"
	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
)

var threeZones = []string{"zone-a", "zone-b", "zone-c"}

func appPods(app string, n int, cpu string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("%s-%d", app, i), Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
		})
	}
	return out
}

func selectorFor(app string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
}

func withSpread(ps []*corev1.Pod, key string, maxSkew int32, minDomains *int32) []*corev1.Pod {
	for _, p := range ps {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule, MinDomains: minDomains,
			LabelSelector: selectorFor(p.Labels["app"])})
	}
	return ps
}

func affinity(p *corev1.Pod) *corev1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	return p.Spec.Affinity
}

func withAnti(ps []*corev1.Pod, key, app string) []*corev1.Pod {
	for _, p := range ps {
		a := affinity(p)
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
			corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: selectorFor(app)})
	}
	return ps
}

func withAffinity(ps []*corev1.Pod, key, app string) []*corev1.Pod {
	for _, p := range ps {
		a := affinity(p)
		if a.PodAffinity == nil {
			a.PodAffinity = &corev1.PodAffinity{}
		}
		a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
			corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: selectorFor(app)})
	}
	return ps
}

// existing is a node in zone with cpu allocatable, running the given pods.
func existing(name, zone, cpu string, pods ...*corev1.Pod) scheduling.Node {
	for _, p := range pods {
		p.Spec.NodeName = name
	}
	return scheduling.Node{
		Node: &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{nodeplan.LabelZone: zone, nodeplan.LabelHostname: name}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu),
				corev1.ResourcePods: resource.MustParse("110")}},
		},
		Pods: pods,
	}
}

func topologyInput(zones []string, nodes []scheduling.Node, groups ...[]*corev1.Pod) scheduling.Input {
	in := scheduling.Input{NodePools: []nodeplan.NodePool{{Name: "default"}}, InstanceTypes: []nodeplan.InstanceType{schedulingtest.ZonalType(zones...)}, Nodes: nodes}
	for _, g := range groups {
		in.Pods = append(in.Pods, g...)
	}
	return in
}

func TestOptimalTopologyKnown(t *testing.T) {
	three := int32(3)
	tests := []struct {
		name string
		in   scheduling.Input
		// The optimum under package check's reading, and with an empty hostname domain.
		cost, emptyNodeCost float64
		out                 int
	}{
		{
			name: "zone spread, maxSkew 1: one pod per zone",
			in:   topologyInput(threeZones, nil, withSpread(appPods("web", 3, "1"), nodeplan.LabelZone, 1, nil)),
			cost: 0.63, emptyNodeCost: 0.63,
		},
		{
			name: "zone spread, maxSkew 2: two in the cheapest zone, one in the next",
			in:   topologyInput(threeZones, nil, withSpread(appPods("web", 3, "1"), nodeplan.LabelZone, 2, nil)),
			cost: 0.41, emptyNodeCost: 0.41,
		},
		{
			name: "hostname anti-affinity: a node each",
			in:   topologyInput([]string{"zone-a"}, nil, withAnti(appPods("web", 3, "500m"), nodeplan.LabelHostname, "web")),
			cost: 0.60, emptyNodeCost: 0.60,
		},
		{
			name: "zone anti-affinity: more pods than zones",
			in:   topologyInput(threeZones, nil, withAnti(appPods("web", 4, "500m"), nodeplan.LabelZone, "web")),
			cost: 0.63, emptyNodeCost: 0.63, out: 1,
		},
		{
			name: "anti-affinity to another deployment works both ways",
			in: topologyInput([]string{"zone-a"}, nil, withAnti(appPods("web", 1, "500m"), nodeplan.LabelHostname, "db"),
				appPods("db", 1, "500m")),
			cost: 0.40, emptyNodeCost: 0.40,
		},
		{
			// Over exactly the plan's nodes, four pods on one node have skew 0; with an empty
			// node somewhere, each node takes one.
			name: "hostname spread, maxSkew 1",
			in:   topologyInput([]string{"zone-a"}, nil, withSpread(appPods("web", 4, "500m"), nodeplan.LabelHostname, 1, nil)),
			cost: 0.20, emptyNodeCost: 0.80,
		},
		{
			name: "hostname spread, maxSkew 2",
			in:   topologyInput([]string{"zone-a"}, nil, withSpread(appPods("web", 4, "500m"), nodeplan.LabelHostname, 2, nil)),
			cost: 0.20, emptyNodeCost: 0.40,
		},
		{
			name: "hostname spread over an existing node",
			in: topologyInput([]string{"zone-a"}, []scheduling.Node{existing("n1", "zone-a", "4", appPods("other", 1, "100m")...)},
				withSpread(appPods("web", 2, "500m"), nodeplan.LabelHostname, 1, nil)),
			cost: 0, emptyNodeCost: 0.20,
		},
		{
			name: "hostname spread counts running pods it selects",
			in: func() scheduling.Input {
				running := appPods("web", 1, "100m")
				running[0].Name = "web-running"
				return topologyInput([]string{"zone-a"}, []scheduling.Node{existing("n1", "zone-a", "4", running...)},
					withSpread(appPods("web", 2, "500m"), nodeplan.LabelHostname, 1, nil))
			}(),
			cost: 0, emptyNodeCost: 0.40,
		},
		{
			name: "minDomains above the zones there are: the minimum is 0",
			in: topologyInput([]string{"zone-a", "zone-b"}, nil,
				withSpread(appPods("web", 3, "1"), nodeplan.LabelZone, 1, &three)),
			cost: 0.41, emptyNodeCost: 0.41, out: 1,
		},
		{
			name: "zone spread counts running pods",
			in: func() scheduling.Input {
				running := withSpread(appPods("web", 2, "500m"), nodeplan.LabelZone, 1, nil)
				for i, p := range running {
					p.Name = fmt.Sprintf("web-running-%d", i)
				}
				return topologyInput(threeZones, []scheduling.Node{existing("full", "zone-a", "1", running...)},
					withSpread(appPods("web", 4, "1"), nodeplan.LabelZone, 1, nil))
			}(),
			cost: 0.43, emptyNodeCost: 0.43,
		},
		{
			// zone-c holds none and can take none, so zone-a takes one.
			name: "an existing node in a zone the pool cannot launch into is a domain",
			in: topologyInput([]string{"zone-a"}, []scheduling.Node{existing("far", "zone-c", "100m")},
				withSpread(appPods("web", 3, "1"), nodeplan.LabelZone, 1, nil)),
			cost: 0.20, emptyNodeCost: 0.20, out: 2,
		},
		{
			name: "affinity to running pods' zone",
			in: func() scheduling.Input {
				db := appPods("db", 1, "1")
				return topologyInput(threeZones, []scheduling.Node{existing("db-node", "zone-c", "1", db...)},
					withAffinity(appPods("web", 2, "1"), nodeplan.LabelZone, "db"))
			}(),
			cost: 0.22, emptyNodeCost: 0.22,
		},
		{
			name: "affinity with no target anywhere",
			in:   topologyInput(threeZones, nil, withAffinity(appPods("web", 2, "1"), nodeplan.LabelZone, "db")),
			out:  2,
		},
		{
			name: "self affinity over zones: every pod in the cheapest zone",
			in:   topologyInput(threeZones, nil, withAffinity(appPods("web", 3, "3"), nodeplan.LabelZone, "web")),
			cost: 0.60, emptyNodeCost: 0.60,
		},
		{
			name: "self affinity over hostnames: one node, as many as fit",
			in:   topologyInput([]string{"zone-a"}, nil, withAffinity(appPods("web", 3, "1500m"), nodeplan.LabelHostname, "web")),
			cost: 0.20, emptyNodeCost: 0.20, out: 1,
		},
		{
			name: "a running pod's anti-affinity keeps pods off its node",
			in: func() scheduling.Input {
				guard := withAnti(appPods("guard", 1, "100m"), nodeplan.LabelHostname, "web")
				return topologyInput([]string{"zone-a"}, []scheduling.Node{existing("n1", "zone-a", "4", guard...)},
					appPods("web", 1, "1"), appPods("other", 1, "1"))
			}(),
			cost: 0.20, emptyNodeCost: 0.20,
		},
		{
			// x (app=f) may only go to zone-a and spreads over app=g; y (app=g) only to zone-b,
			// spreading over app=f; both count both zones (nodeAffinityPolicy Ignore). Together
			// each ends within maxSkew, but x needs y bound first and y needs x: neither binds.
			name: "spread carriers waiting on each other", in: waitingCarriers(), out: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []struct {
				rules schedulingtest.TopologyRules
				want  float64
			}{{schedulingtest.TopologyRules{}, tt.cost}, {schedulingtest.TopologyRules{EmptyHostnameDomain: true}, tt.emptyNodeCost}} {
				res, ok := schedulingtest.OptimalTopologyPlan(tt.in, r.rules)
				if !ok {
					t.Fatalf("OptimalTopologyPlan(%+v) ok = false, want true", r.rules)
				}
				if math.Abs(res.Cost-r.want) > 1e-9 || len(res.Unschedulable) != tt.out {
					t.Errorf("OptimalTopologyPlan(%+v) = $%.4f with %d out, want $%.4f with %d out\n%+v", r.rules, res.Cost, len(res.Unschedulable), r.want, tt.out, res)
				}
				if err := check.Result(tt.in, res); err != nil {
					t.Errorf("check.Result(OptimalTopologyPlan(%+v)) = %v, want nil", r.rules, err)
				}
			}
		})
	}
}

// TestOptimalTopologyPlans checks the oracle on random inputs: its plans keep every rule of
// package check, OptimalTopology reports them, and an empty hostname domain never helps.
func TestOptimalTopologyPlans(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 60
	}
	gen := schedulingtest.TopologyInputs()
	for seed := range n {
		in := gen.Example(seed)
		loose, ok := schedulingtest.OptimalTopologyPlan(in, schedulingtest.TopologyRules{})
		if !ok {
			t.Fatalf("seed %d: OptimalTopologyPlan() ok = false on a TopologyInputs input", seed)
		}
		strict, _ := schedulingtest.OptimalTopologyPlan(in, schedulingtest.TopologyRules{EmptyHostnameDomain: true})
		for _, res := range []scheduling.Result{loose, strict} {
			if err := check.Result(in, res); err != nil {
				t.Fatalf("seed %d: check.Result(OptimalTopologyPlan()) = %v, want nil\n%s", seed, err, schedulingtest.Describe(in))
			}
		}
		cost, out, _ := schedulingtest.OptimalTopology(in, schedulingtest.TopologyRules{})
		if cost != loose.Cost || len(out) != len(loose.Unschedulable) {
			t.Fatalf("seed %d: OptimalTopology() = $%v, %v; its plan says $%v, %d out", seed, cost, out, loose.Cost, len(loose.Unschedulable))
		}
		if lo, so := len(loose.Unschedulable), len(strict.Unschedulable); lo > so || (lo == so && loose.Cost > strict.Cost+1e-9) {
			t.Fatalf("seed %d: the stricter reading does better: $%v with %d out, against $%v with %d out\n%s",
				seed, strict.Cost, so, loose.Cost, lo, schedulingtest.Describe(in))
		}
	}
}

// TestOptimalTopologyAgreesWithOptimal: without topology constraints both oracles solve the
// same problem.
func TestOptimalTopologyAgreesWithOptimal(t *testing.T) {
	gen := schedulingtest.Inputs(schedulingtest.Config{Exact: true, MaxPods: schedulingtest.MaxTopologyPods, MaxTypes: schedulingtest.MaxTopologyTypes})
	compared := 0
	for seed := range 300 {
		in := gen.Example(seed)
		want, wantOut, ok := schedulingtest.Optimal(in)
		got, gotOut, inScope := schedulingtest.OptimalTopology(in, schedulingtest.TopologyRules{})
		if !inScope {
			continue
		}
		compared++
		if !ok || math.Abs(got-want) > 1e-9 || len(gotOut) != len(wantOut) {
			t.Errorf("seed %d: OptimalTopology() = $%v, %v; Optimal() = $%v, %v (ok %v)\n%s", seed, got, gotOut, want, wantOut, ok, schedulingtest.Describe(in))
		}
	}
	if compared < 50 {
		t.Errorf("compared %d inputs, want at least 50", compared)
	}
}

// A DoNotSchedule spread over a key no node, type or pool has: kube-scheduler binds the pod
// nowhere, and the oracle places none.
func TestOptimalTopologyKeylessSpreadPlacesNothing(t *testing.T) {
	in := topologyInput(threeZones, nil, withSpread(appPods("web", 3, "1"), "example.com/rack", 1, nil))
	cost, out, ok := schedulingtest.OptimalTopology(in, schedulingtest.TopologyRules{})
	if !ok || cost != 0 || len(out) != 3 {
		t.Errorf("OptimalTopology(spread over example.com/rack) = $%v, %v unplaced, ok %t; want $0, all 3, true", cost, out, ok)
	}
}

func TestOptimalTopologyOutOfScope(t *testing.T) {
	base := func() scheduling.Input {
		return topologyInput(threeZones, nil, withSpread(appPods("web", 3, "1"), nodeplan.LabelZone, 1, nil))
	}
	tests := []struct {
		name   string
		change func(in *scheduling.Input)
	}{
		{"too many pods", func(in *scheduling.Input) {
			in.Pods = append(in.Pods, appPods("more", schedulingtest.MaxTopologyPods, "100m")...)
		}},
		{"two pools", func(in *scheduling.Input) {
			in.NodePools = append(in.NodePools, nodeplan.NodePool{Name: "other"})
		}},
		{"ScheduleAnyway", func(in *scheduling.Input) {
			in.Pods[0].Spec.TopologySpreadConstraints[0].WhenUnsatisfiable = corev1.ScheduleAnyway
		}},
		{"another topology key some type has", func(in *scheduling.Input) {
			in.Pods[0].Spec.TopologySpreadConstraints[0].TopologyKey = "rack"
			in.InstanceTypes[0].Labels = map[string]string{"rack": "r1"}
		}},
		{"matchLabelKeys", func(in *scheduling.Input) {
			in.Pods[0].Spec.TopologySpreadConstraints[0].MatchLabelKeys = []string{"pod-template-hash"}
		}},
		{"host ports", func(in *scheduling.Input) {
			in.Pods[0].Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}}
		}},
		{"preferred anti-affinity", func(in *scheduling.Input) {
			affinity(in.Pods[0]).PodAntiAffinity = &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
				{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: nodeplan.LabelHostname, LabelSelector: selectorFor("web")}}}}
		}},
		{"in-flight claims", func(in *scheduling.Input) {
			in.NodeClaims = []nodeplan.NodeClaim{{Name: "c", NodePool: "default"}}
		}},
	}
	if _, _, ok := schedulingtest.OptimalTopology(base(), schedulingtest.TopologyRules{}); !ok {
		t.Fatalf("OptimalTopology(base) ok = false, want true")
	}
	for _, tt := range tests {
		in := base()
		tt.change(&in)
		if _, _, ok := schedulingtest.OptimalTopology(in, schedulingtest.TopologyRules{}); ok {
			t.Errorf("%s: OptimalTopology() ok = true, want false", tt.name)
		}
	}
}

// waitingCarriers is the input of "spread carriers waiting on each other": zone-a runs two
// app=g pods, zone-b two app=f pods; x (app=f, in zone-a) spreads over app=g, y (app=g, in
// zone-b) over app=f.
func waitingCarriers() scheduling.Input {
	running := func(app, zone string) []*corev1.Pod {
		ps := appPods(app, 2, "100m")
		for i, p := range ps {
			p.Name = fmt.Sprintf("%s-%s-%d", app, zone, i)
		}
		return ps
	}
	ignore := corev1.NodeInclusionPolicyIgnore
	carrier := func(name, label, over, zone string) *corev1.Pod {
		p := appPods(label, 1, "1")[0]
		p.Name = name
		p.Spec.NodeSelector = map[string]string{nodeplan.LabelZone: zone}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: nodeplan.LabelZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selectorFor(over), NodeAffinityPolicy: &ignore}}
		return p
	}
	return topologyInput([]string{"zone-a", "zone-b"},
		[]scheduling.Node{existing("na", "zone-a", "2", running("g", "a")...), existing("nb", "zone-b", "2", running("f", "b")...)},
		[]*corev1.Pod{carrier("x", "f", "g", "zone-a"), carrier("y", "g", "f", "zone-b")})
}
