package scheduling

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
)

// cType is a compute type of the synthetic catalog the reference notes use: n vCPUs at $0.05
// per vCPU, 2 GiB per vCPU, 100m reserved, one zone.
func cType(n int, price float64) nodeplan.InstanceType {
	name := fmt.Sprintf("c-%d", n)
	return nodeplan.InstanceType{
		Name:   name,
		Labels: map[string]string{nodeplan.LabelInstanceType: name, nodeplan.LabelArch: "amd64", nodeplan.LabelOS: "linux"},
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(int64(n), resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(int64(n)*2<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
		},
		Overhead:  nodeplan.Overhead{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		Offerings: []nodeplan.Offering{{Zone: "zone-a", CapacityType: nodeplan.CapacityTypeOnDemand, Price: price, Available: true}},
	}
}

func pod(name, cpu, mem string) *corev1.Pod {
	rl := corev1.ResourceList{}
	if cpu != "" {
		rl[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		rl[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl}}}},
	}
}

func pods(prefix string, n int, cpu, mem string) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = pod(fmt.Sprintf("%s-%d", prefix, i), cpu, mem)
		out[i].Labels["app"] = prefix
	}
	return out
}

type claimSummary struct {
	Type string
	Pods int
}

func summarize(res Result) []claimSummary {
	var out []claimSummary
	for _, c := range res.NodeClaims {
		out = append(out, claimSummary{c.InstanceType, len(c.Pods)})
	}
	slices.SortFunc(out, func(a, b claimSummary) int {
		return cmp.Or(strings.Compare(a.Type, b.Type), a.Pods-b.Pods)
	})
	return out
}

func TestSolveBeatsFirstFit(t *testing.T) {
	catalog := []nodeplan.InstanceType{cType(2, 0.10), cType(4, 0.20), cType(8, 0.40), cType(16, 0.80)}
	pricey16 := []nodeplan.InstanceType{cType(2, 0.10), cType(4, 0.20), cType(8, 0.40), cType(16, 0.90)}
	tests := []struct {
		name    string
		pods    []*corev1.Pod
		catalog []nodeplan.InstanceType
		want    []claimSummary
		cost    float64
	}{
		{
			// kubernetes-sigs/karpenter#2457: Karpenter launches one 8-vCPU node ($0.40).
			name:    "3+1 vCPU",
			pods:    []*corev1.Pod{pod("big", "3", ""), pod("small", "1", "")},
			catalog: catalog,
			want:    []claimSummary{{"c-2", 1}, {"c-4", 1}},
			cost:    0.30,
		},
		{
			// A 16-vCPU type priced above two 8s: Karpenter takes the 16 ($0.90).
			name:    "2x5 vCPU with a pricey c-16",
			pods:    pods("five", 2, "5", ""),
			catalog: pricey16,
			want:    []claimSummary{{"c-8", 1}, {"c-8", 1}},
			cost:    0.80,
		},
		{
			name:    "identical replicas fill whole nodes",
			pods:    pods("inflate", 30, "1", ""),
			catalog: catalog,
			want:    []claimSummary{{"c-16", 15}, {"c-16", 15}},
			cost:    1.60,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Solve(context.Background(), Input{
				Pods:          tt.pods,
				NodePools:     []nodeplan.NodePool{{Name: "default"}},
				InstanceTypes: tt.catalog,
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := gocmp.Diff(tt.want, summarize(res)); diff != "" {
				t.Errorf("Solve() claims mismatch (-want +got):\n%s", diff)
			}
			if math.Abs(res.Cost-tt.cost) > 1e-9 {
				t.Errorf("Solve().Cost = %v, want %v", res.Cost, tt.cost)
			}
			if res.LowerBound > res.Cost+1e-9 {
				t.Errorf("Solve().LowerBound = %v > Cost %v", res.LowerBound, res.Cost)
			}
			if len(res.Unschedulable) != 0 {
				t.Errorf("Solve().Unschedulable = %v, want none", res.Unschedulable)
			}
		})
	}
}

func loadCatalog(t testing.TB) []nodeplan.InstanceType {
	t.Helper()
	data, err := os.ReadFile("../../shared/data/catalog.json")
	if err != nil {
		t.Skipf("shared catalog not available: %v", err)
	}
	its, err := nodeplan.DecodeCatalog(data)
	if err != nil {
		t.Fatal(err)
	}
	return its
}

func TestSolveInflateOnRealCatalog(t *testing.T) {
	catalog := loadCatalog(t)
	inflate := pods("inflate", 5, "1", "")
	for _, p := range inflate {
		p.Spec.NodeSelector = map[string]string{"eks-team": "my-team"}
	}
	// The EKS workshop's default pool: compute, general purpose and memory families of a
	// recent generation, on-demand.
	gen, err := nodeplan.NewRequirement(nodeplan.LabelInstanceGeneration, corev1.NodeSelectorOpGt, "4")
	if err != nil {
		t.Fatal(err)
	}
	pool := nodeplan.NodePool{Name: "default", Template: nodeplan.NodeClaimTemplate{
		Labels: map[string]string{"eks-team": "my-team"},
		Requirements: nodeplan.NewRequirements(gen,
			nodeplan.In(nodeplan.LabelInstanceCategory, "c", "m", "r"),
			nodeplan.In(nodeplan.LabelCapacityType, "on-demand")),
	}}
	res, err := Solve(context.Background(), Input{Pods: inflate, NodePools: []nodeplan.NodePool{pool}, InstanceTypes: catalog, DaemonSets: testDaemonSets()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NodeClaims) != 1 || len(res.NodeClaims[0].Pods) != 5 {
		t.Fatalf("Solve() = %+v, want one node with 5 pods", summarize(res))
	}
	c := res.NodeClaims[0]
	t.Logf("chosen %s %s %s $%.4f; options %v; LB %.4f", c.InstanceType, c.Offering.Zone, c.Offering.CapacityType, c.Offering.Price, c.InstanceTypeOptions[:min(5, len(c.InstanceTypeOptions))], res.LowerBound)
	if c.Labels["eks-team"] != "my-team" || c.Labels[nodeplan.LabelNodePool] != "default" {
		t.Errorf("claim labels = %v, want eks-team=my-team and the nodepool", c.Labels)
	}
}

func testDaemonSets() []*appsv1.DaemonSet {
	ds := func(name, cpu, mem string) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name},
			Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Containers: []corev1.Container{{Name: name, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}},
			}}},
		}
	}
	return []*appsv1.DaemonSet{ds("aws-node", "25m", "64Mi"), ds("kube-proxy", "100m", "64Mi"), ds("ebs-csi-node", "30m", "120Mi")}
}

func TestSolveExplains(t *testing.T) {
	catalog := []nodeplan.InstanceType{cType(2, 0.10), cType(4, 0.20)}
	gpuPool := nodeplan.NodePool{Name: "gpu", Weight: 100, Template: nodeplan.NodeClaimTemplate{
		Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}}}
	limited := nodeplan.NodePool{Name: "default", Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}
	huge := pod("huge", "96", "")
	zoned := pod("zoned", "1", "")
	zoned.Spec.NodeSelector = map[string]string{nodeplan.LabelZone: "zone-d"}
	many := pods("many", 6, "1", "")
	in := Input{
		Pods:          append([]*corev1.Pod{huge, zoned}, many...),
		NodePools:     []nodeplan.NodePool{gpuPool, limited},
		InstanceTypes: catalog,
	}
	res, err := Solve(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Unschedulable{}
	for _, u := range res.Unschedulable {
		got[u.Pod] = u
		t.Logf("%s: %s: %s", u.Pod, u.Code, u.Message)
	}
	want := map[string]Reason{"default/huge": ReasonNoInstanceType, "default/zoned": ReasonNoOffering}
	for pod, code := range want {
		if got[pod].Code != code {
			t.Errorf("Unschedulable[%s].Code = %q, want %q (%s)", pod, got[pod].Code, code, got[pod].Message)
		}
	}
	limitHits := 0
	for _, u := range res.Unschedulable {
		if u.Code == ReasonLimit {
			limitHits++
		}
	}
	// 4 cpu of limit: one c-4 (3 pods) fits; the other 3 pods hit the limit.
	if limitHits != 3 {
		t.Errorf("pods stopped by the limit = %d, want 3", limitHits)
	}
	if u := got["default/huge"]; len(u.Pools) != 2 || u.Pools[0].Message != "nodepool default: no instance type of the pool has 96 cpu allocatable (largest: c-4, 3900m)" {
		t.Errorf("huge pod reasons = %+v", u.Pools)
	}
}
