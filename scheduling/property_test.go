package scheduling_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/check"
	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
)

// Properties of Solve over random inputs, judged by package check (written apart from the
// solver) rather than by the solver's own bookkeeping.

var configs = []schedulingtest.Config{{}, {Topology: true}}

// Known solver bugs, each with a reproducer below (skipped while the bug stands). While a flag is
// set, the properties tolerate that bug's violations so that they still guard everything else;
// whoever fixes the bug clears the flag and removes the reproducer's t.Skip.
const (
	// knownInFlightAffinity: pods are matched to an in-flight claim by its Requirements, not by
	// the labels of the instance type it launched as (TestKnownInFlightNodeAffinity).
	knownInFlightAffinity = false
	// knownTopology: Solve does not yet enforce required pod (anti-)affinity, DoNotSchedule
	// spread and host ports across deployments (TestKnownPodAntiAffinity).
	knownTopology = false
)

// unknownViolations drops the violations of known bugs from err.
func unknownViolations(err error) []*check.Violation {
	var out []*check.Violation
	for _, v := range check.Violations(err) {
		if knownInFlightAffinity && v.Rule == check.RuleNodeAffinity && strings.Contains(v.Detail, "on in-flight claim") {
			continue
		}
		if knownTopology {
			switch v.Rule {
			case check.RulePodAffinity, check.RulePodAntiAffinity, check.RuleTopologySpread, check.RuleHostPorts:
				continue
			}
		}
		out = append(out, v)
	}
	return out
}

func joinViolations(vs []*check.Violation) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString(v.Error())
		b.WriteString("\n")
	}
	return b.String()
}

func configName(c schedulingtest.Config) string {
	if c.Topology {
		return "topology"
	}
	return "basic"
}

func solveOK(t *rapid.T, in scheduling.Input) scheduling.Result {
	res, err := scheduling.Solve(context.Background(), in)
	if err != nil {
		t.Fatalf("Solve() error = %v, want nil", err)
	}
	return res
}

// resultCmp compares results exactly, the way cmp.Diff can see inside the root package's types.
var resultCmp = []cmp.Option{
	cmp.Comparer(func(a, b nodeplan.Requirements) bool { return a.Equal(b) }),
	cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 && a.Format == b.Format }),
}

func TestSolveIsValid(t *testing.T) {
	for _, cfg := range configs {
		t.Run(configName(cfg), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				in := schedulingtest.Inputs(cfg).Draw(rt, "input")
				res := solveOK(rt, in)
				if vs := unknownViolations(check.Result(in, res)); len(vs) > 0 {
					rt.Fatalf("check.Result(in, Solve(in)) =\n%s\ninput:\n%s", joinViolations(vs), schedulingtest.Describe(in))
				}
			})
		})
	}
}

func TestSolvePodOrderDoesNotMatter(t *testing.T) {
	for _, cfg := range configs {
		t.Run(configName(cfg), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				in := schedulingtest.Inputs(cfg).Draw(rt, "input")
				res := solveOK(rt, in)
				perm := in
				perm.Pods = rapid.Permutation(in.Pods).Draw(rt, "pods")
				got := solveOK(rt, perm)
				before, after := unknownViolations(check.Result(in, res)), unknownViolations(check.Result(perm, got))
				if (len(before) == 0) != (len(after) == 0) {
					rt.Fatalf("check.Result after permuting the pods =\n%s\nbefore:\n%s", joinViolations(after), joinViolations(before))
				}
				if math.Abs(got.Cost-res.Cost) > 1e-9*math.Max(1, res.Cost) {
					rt.Fatalf("Solve(permuted pods).Cost = %v, want %v", got.Cost, res.Cost)
				}
				if len(got.Unschedulable) != len(res.Unschedulable) {
					rt.Fatalf("Solve(permuted pods) leaves %d pods unplaced, want %d", len(got.Unschedulable), len(res.Unschedulable))
				}
			})
		})
	}
}

func TestSolveInputOrderDoesNotMatter(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		in := schedulingtest.Inputs(schedulingtest.Config{}).Draw(rt, "input")
		res := solveOK(rt, in)
		perm := in
		perm.NodePools = rapid.Permutation(in.NodePools).Draw(rt, "pools")
		perm.InstanceTypes = rapid.Permutation(in.InstanceTypes).Draw(rt, "types")
		perm.Nodes = rapid.Permutation(in.Nodes).Draw(rt, "nodes")
		perm.DaemonSets = rapid.Permutation(in.DaemonSets).Draw(rt, "daemonsets")
		got := solveOK(rt, perm)
		if math.Abs(got.Cost-res.Cost) > 1e-9*math.Max(1, res.Cost) {
			rt.Fatalf("Solve(permuted pools, types, nodes, daemonsets).Cost = %v, want %v", got.Cost, res.Cost)
		}
	})
}

func TestSolveIsDeterministic(t *testing.T) {
	for _, cfg := range configs {
		t.Run(configName(cfg), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				in := schedulingtest.Inputs(cfg).Draw(rt, "input")
				want := solveOK(rt, in)
				got := solveOK(rt, in)
				if diff := cmp.Diff(want, got, resultCmp...); diff != "" {
					rt.Fatalf("Solve(in) twice differs (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestSolveLowerBound(t *testing.T) {
	for _, cfg := range configs {
		t.Run(configName(cfg), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				in := schedulingtest.Inputs(cfg).Draw(rt, "input")
				res := solveOK(rt, in)
				if res.LowerBound < 0 || math.IsNaN(res.LowerBound) {
					rt.Fatalf("Solve(in).LowerBound = %v, want ≥ 0", res.LowerBound)
				}
				if len(res.Unschedulable) == 0 && res.LowerBound > res.Cost*(1+1e-9)+1e-12 {
					rt.Fatalf("Solve(in).LowerBound = %v, want ≤ Cost %v", res.LowerBound, res.Cost)
				}
			})
		})
	}
}

// The reproducers of known bugs: minimal inputs on which Solve breaks a rule or loses to the
// Karpenter-like baseline.

func knownPod(name, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
}

func knownType(name string, cpu int64, category string, price float64) nodeplan.InstanceType {
	return nodeplan.InstanceType{
		Name:   name,
		Labels: map[string]string{nodeplan.LabelInstanceType: name, nodeplan.LabelInstanceCategory: category},
		Capacity: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourcePods: resource.MustParse("110")},
		Offerings: []nodeplan.Offering{{Zone: "zone-a", CapacityType: nodeplan.CapacityTypeOnDemand, Price: price, Available: true}},
	}
}

func solveAndCheck(t *testing.T, in scheduling.Input) scheduling.Result {
	t.Helper()
	res, err := scheduling.Solve(context.Background(), in)
	if err != nil {
		t.Fatalf("Solve() error = %v, want nil", err)
	}
	if err := check.Result(in, res); err != nil {
		t.Errorf("check.Result(in, Solve(in)) = %v, want nil", err)
	}
	return res
}

// An in-flight claim launched as a category-c type must not take a pod that requires category m,
// even though the claim's requirements (category NotIn [r]) would allow m.
func TestKnownInFlightNodeAffinity(t *testing.T) {
	// fixed: t.Skip("known: Solve matches pods to in-flight claims by Requirements, not by the launched type's labels")
	pod := knownPod("a", "100m")
	pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: nodeplan.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"m"}}}}}}}}
	c := knownType("c-2", 2, "c", 0.08)
	in := scheduling.Input{
		Pods:          []*corev1.Pod{pod},
		NodePools:     []nodeplan.NodePool{{Name: "p"}},
		InstanceTypes: []nodeplan.InstanceType{c, knownType("m-2", 2, "m", 0.10)},
		NodeClaims: []nodeplan.NodeClaim{{Name: "nc", NodePool: "p", InstanceTypeOptions: []string{"c-2"},
			Requirements: nodeplan.NewRequirements(nodeplan.NotIn(nodeplan.LabelInstanceCategory, "r")),
			Status: nodeplan.NodeClaimStatus{ProviderID: "test:///nc", InstanceType: "c-2", Zone: "zone-a",
				CapacityType: nodeplan.CapacityTypeOnDemand, Capacity: c.Capacity, Allocatable: c.Capacity}}},
	}
	res := solveAndCheck(t, in)
	if len(res.InFlight) != 0 {
		t.Errorf("Solve(in).InFlight = %v, want none", res.InFlight)
	}
}

// Two pods that each refuse to share a host with the other need two nodes.
func TestKnownPodAntiAffinity(t *testing.T) {
	// fixed: t.Skip("known: Solve ignores required pod anti-affinity")
	anti := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
		{TopologyKey: nodeplan.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}
	a, b := knownPod("a", "100m"), knownPod("b", "100m")
	a.Spec.Affinity, b.Spec.Affinity = anti, anti
	in := scheduling.Input{Pods: []*corev1.Pod{a, b}, NodePools: []nodeplan.NodePool{{Name: "p"}},
		InstanceTypes: []nodeplan.InstanceType{knownType("c-2", 2, "c", 0.08)}}
	if res := solveAndCheck(t, in); len(res.NodeClaims) != 2 {
		t.Errorf("Solve(in) makes %d claims, want 2", len(res.NodeClaims))
	}
}

// The 3-cpu pod fits only the existing node; the 1-cpu pods fit a new node too. Karpenter (big
// pods first) places all three; Solve gives the node to the small pods and leaves the big one
// pending.
func TestKnownExistingRoomStarvesPod(t *testing.T) {
	// fixed: t.Skip("known: Solve fills existing nodes without regard to pods that have nowhere else to go")
	in := scheduling.Input{
		Pods:          []*corev1.Pod{knownPod("big", "3"), knownPod("small-1", "1"), knownPod("small-2", "1")},
		NodePools:     []nodeplan.NodePool{{Name: "p"}},
		InstanceTypes: []nodeplan.InstanceType{knownType("c-2", 2, "c", 0.04)},
		Nodes: []scheduling.Node{{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"),
				corev1.ResourcePods: resource.MustParse("110")}}}}},
	}
	res := solveAndCheck(t, in)
	if len(res.Unschedulable) != 0 || math.Abs(res.Cost-0.04) > 1e-9 {
		t.Errorf("Solve(in) = cost %v with %d pods unplaced, want cost 0.04 with none", res.Cost, len(res.Unschedulable))
	}
}

// Seeds of schedulingtest.Inputs(Config{Exact: true}) where Solve costs more than
// first-fit-decreasing (see knownOracle for why).
func TestKnownCostAboveFirstFit(t *testing.T) {
	gen := schedulingtest.Inputs(schedulingtest.Config{Exact: true})
	for _, seed := range []int{316, 326, 518, 591} {
		in := gen.Example(seed)
		res := solveAndCheck(t, in)
		if ffd, _ := schedulingtest.FirstFitDecreasing(in); res.Cost > ffd+1e-9 {
			t.Errorf("seed %d: Solve(in).Cost = %v, want ≤ first-fit-decreasing's %v\n%s", seed, res.Cost, ffd, schedulingtest.Describe(in))
		}
	}
}
