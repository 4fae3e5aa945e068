package scheduling

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/internal/apiserverpod"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenScenarios are the solver's reference cases (their validity is the property tests' job,
// with the independent checker): each plan is compared with testdata/golden/<name>.txt, a summary a person can read (and review
// in a diff when the solver changes on purpose: go test ./scheduling -run TestGolden -update).
func goldenScenarios(t *testing.T) map[string]Input {
	small := []nodeplan.InstanceType{cType(2, 0.10), cType(4, 0.20), cType(8, 0.40), cType(16, 0.80)}
	pricey := []nodeplan.InstanceType{cType(2, 0.10), cType(4, 0.20), cType(8, 0.40), cType(16, 0.90)}
	catalog := loadCatalog(t)
	pool := []nodeplan.NodePool{{Name: "default"}}
	three := int32(3)

	hostAnti := pods("inflate", 5, "1", "")
	antiAffinity(hostAnti, nodeplan.LabelHostname, true)
	together := pods("together", 12, "1", "2Gi")
	for _, p := range together {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: nodeplan.LabelZone, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "together"}}}}}}
	}
	prefAnti := pods("pref", 4000, "100m", "128Mi")
	antiAffinity(prefAnti, nodeplan.LabelHostname, false)
	four := int32(4)
	return map[string]Input{
		"three-plus-one-vcpu": {Pods: []*corev1.Pod{pod("big", "3", ""), pod("small", "1", "")}, NodePools: pool, InstanceTypes: small},
		// With $0.15/h per node (a root volume, an IPv4 address, a monitoring agent...), one
		// 8-vCPU node ($0.55/h) beats a 4 and a 2 ($0.60/h).
		"three-plus-one-vcpu-node-cost": {Pods: []*corev1.Pod{pod("big", "3", ""), pod("small", "1", "")}, NodePools: pool, InstanceTypes: small,
			Options: Options{NodeCost: NodeCost{PerNode: 0.05, Pools: map[string]float64{"default": 0.10}}}},
		"two-five-vcpu-pricey-c16":   {Pods: pods("five", 2, "5", ""), NodePools: pool, InstanceTypes: pricey},
		"inflate-30":                 {Pods: pods("inflate", 30, "1", ""), NodePools: pool, InstanceTypes: small},
		"mixed-1000-real-catalog":    {Pods: mixedPods(1000), NodePools: pool, InstanceTypes: catalog, DaemonSets: testDaemonSets()},
		"zone-spread-min-domains-3":  {Pods: spreadPods(9, nodeplan.LabelZone, 1, &three, corev1.DoNotSchedule), NodePools: pool, InstanceTypes: catalog},
		"zone-spread-unmet":          {Pods: spreadPods(5, nodeplan.LabelZone, 1, &four, corev1.DoNotSchedule), NodePools: pool, InstanceTypes: catalog},
		"hostname-anti-affinity":     {Pods: hostAnti, NodePools: pool, InstanceTypes: catalog},
		"zone-self-affinity":         {Pods: together, NodePools: pool, InstanceTypes: catalog},
		"preferred-anti-affinity-4k": {Pods: prefAnti, NodePools: pool, InstanceTypes: catalog, DaemonSets: testDaemonSets()},
	}
}

// TestGolden also runs every scenario on its pods as the API server returns them
// (apiserverpod.ShapeAll: default tolerations, priority, managed fields, status…) against the
// same golden file: the fields the API server adds must not change a plan.
func TestGolden(t *testing.T) {
	for name, in := range goldenScenarios(t) {
		shaped := in
		shaped.Pods = apiserverpod.ShapeAll(in.Pods)
		t.Run(name, func(t *testing.T) { checkGolden(t, name, in, *update) })
		t.Run(name+"/apiserver-shaped", func(t *testing.T) { checkGolden(t, name, shaped, false) })
	}
}

// checkGolden compares the plan for in with testdata/golden/<name>.txt, or rewrites the file
// when write is set.
func checkGolden(t *testing.T, name string, in Input, write bool) {
	res, err := Solve(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	got := summary(res)
	path := filepath.Join("testdata", "golden", name+".txt")
	if write {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./scheduling -run TestGolden -update)", err)
	}
	if diff := gocmp.Diff(string(want), got); diff != "" {
		t.Errorf("Solve() for %s differs from %s (-want +got); if on purpose, rerun with -update and review:\n%s", name, path, diff)
	}
}

// summary prints a plan as nodes by type, zone and capacity type with their pod counts, the
// cost and bound, and the unplaced pods' reasons — what a reviewer wants to see change.
func summary(res Result) string {
	var b strings.Builder
	counts := map[string]int{}
	for _, c := range res.NodeClaims {
		counts[fmt.Sprintf("%s %s %s $%.4f/h, %d pods", c.InstanceType, c.Offering.Zone, c.Offering.CapacityType, c.Offering.Price, len(c.Pods))]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(&b, "nodes: %d\n", len(res.NodeClaims))
	for _, k := range keys {
		fmt.Fprintf(&b, "  %d × %s\n", counts[k], k)
	}
	fmt.Fprintf(&b, "cost: $%.4f/h\nlower bound: $%.4f/h\n", res.Cost, res.LowerBound)
	if res.NodeCost != 0 {
		fmt.Fprintf(&b, "node cost: $%.4f/h of the cost\n", res.NodeCost)
	}
	reasons := map[string]int{}
	for _, u := range res.Unschedulable {
		reasons[string(u.Code)+": "+u.Message]++
	}
	keys = keys[:0]
	for k := range reasons {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(&b, "unschedulable: %d\n", len(res.Unschedulable))
	for _, k := range keys {
		fmt.Fprintf(&b, "  %d × %s\n", reasons[k], k)
	}
	return b.String()
}
