package scheduling

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
	"github.com/nodeplan/nodeplan/internal/apiserverpod"
)

// mixedShapes is a realistic mix of deployments: web and API tiers, workers, caches heavy on
// memory, batch heavy on cpu, a few large services. Weights are replica shares.
var mixedShapes = []struct {
	name     string
	cpu, mem string
	weight   int
}{
	{"web", "250m", "512Mi", 20}, {"api", "500m", "1Gi", 15}, {"worker", "1", "2Gi", 12},
	{"cache", "500m", "4Gi", 8}, {"batch", "2", "1Gi", 8}, {"search", "1500m", "6Gi", 5},
	{"ml", "4", "16Gi", 2}, {"sidecar", "100m", "128Mi", 15}, {"queue", "750m", "1536Mi", 6},
	{"report", "3", "12Gi", 3}, {"frontend", "200m", "256Mi", 6},
}

// mixedPods returns n pending pods drawn from mixedShapes, spread over deployments so that each
// shape has several (namespace, deployment) groups.
func mixedPods(n int) []*corev1.Pod {
	total := 0
	for _, s := range mixedShapes {
		total += s.weight
	}
	var out []*corev1.Pod
	for i, s := range mixedShapes {
		count := n * s.weight / total
		if i == 0 {
			count += n - n/total*total // keep the total exact-ish
		}
		for j := 0; j < count && len(out) < n; j++ {
			p := pod(fmt.Sprintf("%s-%d", s.name, j), s.cpu, s.mem)
			p.Labels["app"] = s.name
			out = append(out, p)
		}
	}
	for len(out) < n {
		out = append(out, pod(fmt.Sprintf("extra-%d", len(out)), "250m", "512Mi"))
	}
	return out
}

func BenchmarkSolve(b *testing.B) {
	catalog := loadCatalog(b)
	pool := nodeplan.NodePool{Name: "default"}
	for _, n := range []int{100, 1000, 10000, 100000} {
		for _, v := range podVariants {
			b.Run(v.prefix+fmt.Sprintf("pods=%d", n), func(b *testing.B) {
				in := Input{Pods: v.shape(mixedPods(n)), NodePools: []nodeplan.NodePool{pool}, InstanceTypes: catalog, DaemonSets: testDaemonSets()}
				benchSolve(b, in, n)
			})
		}
	}
}

// podVariants are the two forms every benchmark runs on: pods as tests build them, and the same
// pods as the API server returns them (apiserverpod.ShapeAll). Their figures must match.
var podVariants = []struct {
	prefix string
	shape  func([]*corev1.Pod) []*corev1.Pod
}{
	{"", func(p []*corev1.Pod) []*corev1.Pod { return p }},
	{"apiserver-shaped/", apiserverpod.ShapeAll},
}

// benchSolve solves in b.N times and reports the domain metrics.
func benchSolve(b *testing.B, in Input, n int) {
	var res Result
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		var err error
		res, err = Solve(context.Background(), in)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()*1000/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
	b.ReportMetric(res.Cost, "$/h")
	b.ReportMetric(res.Cost/res.LowerBound, "cost/LB")
	b.ReportMetric(float64(len(res.NodeClaims)), "nodes")
	if len(res.Unschedulable) > 0 {
		b.Fatalf("%d pods unschedulable: %s", len(res.Unschedulable), res.Unschedulable[0].Message)
	}
}

// karpenterMix is Karpenter's own scheduling benchmark mix: a fifth each of generic pods, zone
// spread, hostname spread, zone self-affinity and hostname anti-affinity, cpu from 100m to 1.5
// and memory from 100Mi to 4Gi, drawn with a fixed seed.
func karpenterMix(n int) []*corev1.Pod {
	rng := rand.New(rand.NewPCG(42, 42))
	cpus := []string{"100m", "250m", "500m", "1", "1500m"}
	mems := []string{"100Mi", "512Mi", "1Gi", "2Gi", "4Gi"}
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		kind := i % 5
		app := []string{"generic", "zone-spread", "host-spread", "zone-affinity", "host-anti"}[kind]
		p := pod(fmt.Sprintf("%s-%d", app, i), cpus[rng.IntN(len(cpus))], mems[rng.IntN(len(mems))])
		p.Labels["app"] = app
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
		switch kind {
		case 1, 2:
			key := nodeplan.LabelZone
			if kind == 2 {
				key = nodeplan.LabelHostname
			}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel}}
		case 3:
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: nodeplan.LabelZone, LabelSelector: sel}}}}
		case 4:
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: nodeplan.LabelHostname, LabelSelector: sel}}}}
		}
		out = append(out, p)
	}
	return out
}

func BenchmarkSolveKarpenterMix(b *testing.B) {
	catalog := loadCatalog(b)
	for _, n := range []int{1000, 5000, 20000} {
		for _, v := range podVariants {
			b.Run(v.prefix+fmt.Sprintf("pods=%d", n), func(b *testing.B) {
				in := Input{Pods: v.shape(karpenterMix(n)), NodePools: []nodeplan.NodePool{{Name: "default"}}, InstanceTypes: catalog, DaemonSets: testDaemonSets()}
				benchSolve(b, in, n)
			})
		}
	}
}

// cpuTime is the process's user and system CPU time: on a machine shared with other work it
// measures the solver better than the wall clock does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBuild measures the model build alone (newProblem: grouping, shapes, topology, fits)
// on API-server-shaped pods, where most of a small solve's time goes: the web mix over a spot
// and an on-demand pool, and Karpenter's mix with its topology.
func BenchmarkBuild(b *testing.B) {
	catalog := loadCatalog(b)
	spot := nodeplan.NodePool{Name: "spot", Weight: 50, Template: nodeplan.NodeClaimTemplate{
		Requirements: nodeplan.NewRequirements(nodeplan.In(nodeplan.LabelCapacityType, string(nodeplan.CapacityTypeSpot)))}}
	od := nodeplan.NodePool{Name: "on-demand", Weight: 10, Template: nodeplan.NodeClaimTemplate{
		Requirements: nodeplan.NewRequirements(nodeplan.In(nodeplan.LabelCapacityType, string(nodeplan.CapacityTypeOnDemand)))}}
	inputs := []struct {
		name string
		in   Input
	}{
		{"inflate-100", Input{Pods: apiserverpod.ShapeAll(pods("inflate", 100, "1", "")), NodePools: []nodeplan.NodePool{od},
			InstanceTypes: catalog, DaemonSets: testDaemonSets()}},
		{"mixed-1500-two-pools", Input{Pods: apiserverpod.ShapeAll(mixedPods(1500)), NodePools: []nodeplan.NodePool{spot, od},
			InstanceTypes: catalog, DaemonSets: testDaemonSets()}},
		{"karpenter-mix-1000", Input{Pods: apiserverpod.ShapeAll(karpenterMix(1000)), NodePools: []nodeplan.NodePool{{Name: "default"}},
			InstanceTypes: catalog, DaemonSets: testDaemonSets()}},
	}
	for _, c := range inputs {
		b.Run(c.name+"/groupPending", func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				groupPending(&c.in)
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
		b.Run(c.name+"/newProblem", func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := newProblem(&c.in, preferences{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
