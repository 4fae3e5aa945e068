package scheduling

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeplan/nodeplan"
)

// memoType is an instance type of arch with cpu vCPUs and memGi GiB at price, 100m reserved,
// one on-demand offering.
func memoType(name, arch string, cpu, memGi int64, price float64) nodeplan.InstanceType {
	return nodeplan.InstanceType{
		Name:   name,
		Labels: map[string]string{nodeplan.LabelInstanceType: name, nodeplan.LabelArch: arch, nodeplan.LabelOS: "linux"},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(memGi<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
		},
		Overhead:  nodeplan.Overhead{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		Offerings: []nodeplan.Offering{{Zone: "zone-a", CapacityType: nodeplan.CapacityTypeOnDemand, Price: price, Available: true}},
	}
}

// TestMergeRetriedWhereALimitFreedRoom: the merge pass remembers the pairs of nodes that did
// not merge and skips them in the next pass (pairsTried), except in a pool with limits, where
// a pair refused for want of room may merge once another merge has freed some.
//
// A pool capped at 13 cpu holds four one-pod nodes: memory pods a0 and a1 on r-2 (2 cpu,
// $0.30 each; together they need r-6: 6 cpu, $0.50) and arm64 pods c0 and c1 on g-4 (4 cpu,
// $0.20 each; together g-6: 6 cpu, $0.28). Merging a0 and a1 first would take the pool to
// 14 cpu; merging c0 and c1 next frees 2, and the next pass merges a0 and a1 (12 cpu). With
// the memo trusted under the limit, the plan stays at $0.88/h instead of $0.78/h.
func TestMergeRetriedWhereALimitFreedRoom(t *testing.T) {
	mem := pods("a", 2, "1", "20Gi")
	arm := pods("c", 2, "2500m", "1Gi")
	for _, p := range arm {
		p.Spec.NodeSelector = map[string]string{nodeplan.LabelArch: "arm64"}
	}
	in := Input{
		Pods: append(mem, arm...),
		NodePools: []nodeplan.NodePool{{Name: "capped", Limits: corev1.ResourceList{
			corev1.ResourceCPU: *resource.NewQuantity(13, resource.DecimalSI)}}},
		PoolInstanceTypes: map[string][]nodeplan.InstanceType{"capped": {
			memoType("r-2", "amd64", 2, 32, 0.30), memoType("r-6", "amd64", 6, 64, 0.50),
			memoType("g-4", "arm64", 4, 8, 0.20), memoType("g-6", "arm64", 6, 12, 0.28),
		}},
	}
	p, err := newProblem(&in, preferences{})
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string]*shape{}
	for _, s := range p.shapes {
		shapes[s.it.Name] = s
	}
	groupOf := map[string]*group{}
	for _, g := range p.groups {
		for _, k := range g.keys {
			groupOf[k] = g
		}
	}
	pl := p.pools[0]
	u := poolUsage{used: pl.used0.clone()}
	var claims []*claim
	for _, x := range []struct{ pod, shape string }{{"default/a-0", "r-2"}, {"default/a-1", "r-2"}, {"default/c-0", "g-4"}, {"default/c-1", "g-4"}} {
		g, s := groupOf[x.pod], shapes[x.shape]
		if g == nil || s == nil {
			t.Fatalf("no group for %s or no shape %s (groups %v)", x.pod, x.shape, groupOf)
		}
		e, ok := p.fit(s, g.id)
		if !ok {
			t.Fatalf("%s does not fit %s", x.pod, x.shape)
		}
		claims = append(claims, &claim{shape: s, mask: e.mask, used: g.req.clone(), placed: []placement{{g: g.id, k: 1}}, value: 0.1})
		u.used.add(s.capacity)
		u.nodes++
	}
	claims = p.improve(&u, claims, defaultImprovementRounds)
	got := claimsCost(claims)
	if want := 0.78; math.Abs(got-want) > 1e-9 {
		var names []string
		for _, c := range claims {
			names = append(names, c.shape.it.Name)
		}
		t.Errorf("improve(a0, a1 on r-2; c0, c1 on g-4; 13 cpu) = $%v/h on %v, want $%v/h (r-6 and g-6)", got, names, want)
	}
}
