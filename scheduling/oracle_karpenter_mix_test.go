package scheduling_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/check"
	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
)

// karpenterMixOracleCases is how many small draws of Karpenter's benchmark mix
// TestOracleKarpenterMix solves exactly.
const karpenterMixOracleCases = 300

// karpenterMixType is a type with cpu vCPUs and mem GiB, on demand in three zones at the
// given prices (zone-a, zone-b, zone-c): different types are cheapest in different zones, so
// pods of different sizes, left to themselves, would start their affinity group in different
// zones.
func karpenterMixType(name string, cpu, mem int64, prices ...float64) nodeplan.InstanceType {
	it := nodeplan.InstanceType{
		Name:   name,
		Labels: map[string]string{nodeplan.LabelInstanceType: name},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(mem<<30, resource.BinarySI),
			corev1.ResourcePods:   resource.MustParse("110"),
		},
	}
	for i, z := range []string{"zone-a", "zone-b", "zone-c"} {
		it.Offerings = append(it.Offerings, nodeplan.Offering{Zone: z, CapacityType: nodeplan.CapacityTypeOnDemand, Price: prices[i], Available: true})
	}
	return it
}

// karpenterMixInput draws a small input from Karpenter's mix: 5–35 pods of it, of which
// schedulingtest.MaxTopologyPods are kept (chosen at random), for one pool over three types.
func karpenterMixInput(seed int) scheduling.Input {
	rng := rand.New(rand.NewPCG(uint64(seed), 13))
	pods := schedulingtest.KarpenterMix(rng, 5+rng.IntN(31), fmt.Sprintf("oracle-%d", seed))
	rng.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
	pods = pods[:min(len(pods), schedulingtest.MaxTopologyPods)]
	return scheduling.Input{
		Pods:      pods,
		NodePools: []nodeplan.NodePool{{Name: "default"}},
		InstanceTypes: []nodeplan.InstanceType{
			karpenterMixType("s-1", 1, 2, 0.055, 0.050, 0.060),
			karpenterMixType("m-4", 4, 16, 0.200, 0.210, 0.220),
			karpenterMixType("l-8", 8, 32, 0.420, 0.410, 0.400),
		},
	}
}

// TestOracleKarpenterMix solves small draws of Karpenter's benchmark mix — labels and
// selectors drawn independently, so spreads count pods of other kinds and pods of several
// sizes share one self-affinity — and compares Solve with the exhaustive optimum. Every plan
// must be valid; Solve must place as many pods as the optimum (with Solve's reading of hostname
// spread) and is reported against its cost.
func TestOracleKarpenterMix(t *testing.T) {
	n := karpenterMixOracleCases
	if testing.Short() {
		n = 60
	}
	var ratios []float64
	var short []string
	for seed := range n {
		in := karpenterMixInput(seed)
		res, err := scheduling.Solve(context.Background(), in)
		if err != nil {
			t.Fatalf("seed %d: Solve() error = %v, want nil", seed, err)
		}
		if err := check.Result(in, res); err != nil {
			t.Errorf("seed %d: check.Result(in, Solve(in)) = %v, want nil\n%s", seed, err, schedulingtest.Describe(in))
			continue
		}
		opt, optOut, ok := schedulingtest.OptimalTopology(in, schedulingtest.TopologyRules{EmptyHostnameDomain: true})
		if !ok {
			t.Fatalf("seed %d: OptimalTopology() ok = false on a Karpenter mix input\n%s", seed, schedulingtest.Describe(in))
		}
		switch out := len(res.Unschedulable); {
		case out > len(optOut):
			short = append(short, fmt.Sprintf("seed %d: Solve leaves %d pods out (%s), the optimum %d %v", seed, out, unplacedKeys(res), len(optOut), optOut))
			continue
		case out < len(optOut) || res.Cost < opt-1e-9:
			t.Errorf("seed %d: Solve places %d pods for $%.4f, beating the optimum (%d out, $%.4f): the oracle is wrong\n%s",
				seed, len(in.Pods)-out, res.Cost, len(optOut), opt, schedulingtest.Describe(in))
			continue
		}
		r := 1.0
		if opt > 0 {
			r = res.Cost / opt
		}
		ratios = append(ratios, r)
	}
	sort.Float64s(ratios)
	within := countAtMost(ratios, 1.05+1e-9)
	if len(ratios) > 0 {
		t.Logf("Solve vs the optimum on %d draws of Karpenter's mix: %d place as many pods; within 5%%: %d (%.1f%%); optimal %d; p90 %.4f; worst %.4f",
			n, len(ratios), within, 100*float64(within)/float64(len(ratios)), countAtMost(ratios, 1+1e-9), ratios[len(ratios)*9/10], ratios[len(ratios)-1])
	}
	for _, s := range short {
		t.Log(s)
	}
	// Measured: 81.3% of 300 draws within 5% since spreads count every matching pod (85.7%
	// when only carriers counted, plans kube-scheduler partly refused); the misses are zone
	// starts and spreads packed zone by zone, as in TestOracleTopology.
	if len(ratios) > 0 && float64(within) < 0.8*float64(len(ratios)) {
		t.Errorf("Solve is within 5%% of the optimum in %d of %d draws, want ≥ 80%%", within, len(ratios))
	}
	if len(short) > n/20 {
		t.Errorf("Solve leaves pods out where the optimum places them in %d of %d draws, want at most 5%%:\n%s", len(short), n, strings.Join(short, "\n"))
	}
}
