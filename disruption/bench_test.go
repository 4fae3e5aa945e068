package disruption_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
)

// benchCluster builds a cluster of n nodes running about podsPerNode pods each, from 40
// deployments (50m-400m cpu each), so nodes run at 20%-95% of their cpu, in two pools with the
// default budget of 10%: the shape of a large cluster some weeks after a scale-down.
func benchCluster(tb tb, n, podsPerNode int, seed uint64, spread bool) disruption.Input {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	types := []string{"m5.2xlarge", "m5.4xlarge", "c5.4xlarge", "r5.2xlarge", "m6i.4xlarge"}
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	type deployment struct {
		name     string
		cpu, mem string
		milli    int64
	}
	var deps []deployment
	for i := range 40 {
		milli := int64(50 + rng.IntN(8)*50) // 50m-400m
		deps = append(deps, deployment{name: fmt.Sprintf("app%02d", i), cpu: fmt.Sprintf("%dm", milli),
			mem: fmt.Sprintf("%dMi", 64+rng.IntN(8)*64), milli: milli})
	}
	in := disruption.Input{InstanceTypes: testCatalog(tb), Now: t0}
	for _, name := range []string{"general", "batch"} {
		np := nodeplan.NodePool{Name: name}
		np.Template.Requirements = nodeplan.NewRequirements(nodeplan.In(nodeplan.LabelCapacityType, "on-demand"))
		in.NodePools = append(in.NodePools, np)
	}
	for i := range n {
		typ := types[rng.IntN(len(types))]
		it := instanceType(tb, typ)
		alloc := it.Allocatable()[corev1.ResourceCPU]
		limit := alloc.MilliValue() * 95 / 100
		count := podsPerNode - podsPerNode/3 + rng.IntN(2*podsPerNode/3+1)
		var ps []*corev1.Pod
		var used int64
		for j := 0; j < count; j++ {
			d := deps[rng.IntN(len(deps))]
			if used+d.milli > limit {
				break
			}
			p := newPod(fmt.Sprintf("%s-n%05d-%d", d.name, i, j), d.cpu, d.mem, app(d.name))
			if spread && d.name < "app08" {
				// A fifth of the deployments spread over zones, so their pods need the solver.
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1 + int32(n/100),
					TopologyKey: nodeplan.LabelZone, WhenUnsatisfiable: corev1.DoNotSchedule,
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": d.name}}}}
			}
			ps = append(ps, p)
			used += d.milli
		}
		pool := in.NodePools[i%2].Name
		in.Nodes = append(in.Nodes, newNode(tb, fmt.Sprintf("node-%05d", i), typ, pool, inZone(zones[i%3]), withPods(ps...)))
	}
	return in
}

// BenchmarkDriftRollout plans one pass of a rollout in which every node has drifted: the
// default 10% budget lets a tenth of the nodes be replaced at once.
func BenchmarkDriftRollout(b *testing.B) {
	for _, nodes := range []int{1000, 5000} {
		in := benchCluster(b, nodes, 30, 3, false)
		for i := range in.Nodes {
			in.Nodes[i].Drift = "NodeClassDrifted"
		}
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			b.ReportAllocs()
			var r disruption.Result
			cpu0 := cpuTime()
			for b.Loop() {
				var err error
				if r, err = disruption.Plan(context.Background(), in); err != nil {
					b.Fatal(err)
				}
			}
			replaced := 0
			for _, c := range r.Commands {
				replaced += len(c.Nodes)
			}
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(replaced), "nodes-replaced")
			b.ReportMetric(float64(r.Simulations), "simulations")
		})
	}
}

func BenchmarkPlan(b *testing.B) {
	for _, size := range []struct {
		nodes, podsPerNode int
		spread             bool
	}{{100, 30, false}, {1000, 30, false}, {5000, 30, false}, {1000, 30, true}, {5000, 30, true}} {
		in := benchCluster(b, size.nodes, size.podsPerNode, 1, size.spread)
		pods := 0
		for _, n := range in.Nodes {
			pods += len(n.Pods)
		}
		name := fmt.Sprintf("nodes=%d/pods=%d", size.nodes, pods)
		if size.spread {
			name += "/zone-spread"
		} else {
			name += "/plain"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var r disruption.Result
			cpu0 := cpuTime()
			for b.Loop() {
				var err error
				r, err = disruption.Plan(context.Background(), in)
				if err != nil {
					b.Fatal(err)
				}
			}
			disrupted := 0
			for _, c := range r.Commands {
				disrupted += len(c.Nodes)
			}
			perOp := b.Elapsed().Seconds() / float64(b.N)
			// CPU seconds per plan, all threads: what the plan costs when the machine is shared.
			b.ReportMetric((cpuTime()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(size.nodes)/perOp, "nodes/s")
			b.ReportMetric(r.Savings, "$/h-saved")
			b.ReportMetric(float64(disrupted), "nodes-disrupted")
			b.ReportMetric(float64(r.Simulations), "simulations")
		})
	}
}

// TestBenchClusterPlan keeps the benchmark's cluster honest: the plan it gives keeps every
// invariant.
func TestBenchClusterPlan(t *testing.T) {
	in := benchCluster(t, 60, 30, 2, true)
	start := time.Now()
	r, err := disruption.Plan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("60 nodes: %d commands, $%.2f/h saved, %d simulations, %v", len(r.Commands), r.Savings, r.Simulations, time.Since(start))
	checkInvariants(t, in, r)
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
