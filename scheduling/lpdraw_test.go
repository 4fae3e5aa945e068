package scheduling

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"

	"github.com/nodeplan/nodeplan"
)

// drawLPInput draws a small single-pool input whose column generation runs out of work after a
// round or two: up to maxGroups deployments of up to maxPods pods, two to seven compute types
// (with memoryTypes, each may instead be a dearer memory-optimised one), and an effort from
// efforts. The LP tests (colpool_test.go, bound_tail_test.go) share it; the draw labels are
// fixed, so a failing seed replays.
func drawLPInput(rt *rapid.T, maxGroups, maxPods int, memoryTypes bool, efforts []float64) Input {
	var ps []*corev1.Pod
	for i := range rapid.IntRange(2, maxGroups).Draw(rt, "groups") {
		cpu := rapid.SampledFrom([]string{"250m", "500m", "1", "1500m", "3", "5"}).Draw(rt, fmt.Sprintf("cpu-%d", i))
		mem := rapid.SampledFrom([]string{"256Mi", "1Gi", "3Gi", "6Gi", "12Gi", "30Gi"}).Draw(rt, fmt.Sprintf("mem-%d", i))
		ps = append(ps, pods(fmt.Sprintf("g%d", i), rapid.IntRange(1, maxPods).Draw(rt, fmt.Sprintf("n-%d", i)), cpu, mem)...)
	}
	var types []nodeplan.InstanceType
	for _, n := range rapid.SliceOfNDistinct(rapid.SampledFrom([]int{2, 4, 8, 16, 32, 48, 64}), 2, 7, rapid.ID[int]).Draw(rt, "sizes") {
		it := cType(n, rapid.Float64Range(0.03, 0.07).Draw(rt, fmt.Sprintf("price-%d", n))*float64(n))
		if memoryTypes && rapid.Bool().Draw(rt, fmt.Sprintf("memory-%d", n)) {
			// A memory-optimised type: 8 GiB per vCPU, dearer.
			it.Name += "-r"
			it.Labels[nodeplan.LabelInstanceType] = it.Name
			it.Capacity[corev1.ResourceMemory] = *resource.NewQuantity(int64(n)*8<<30, resource.BinarySI)
			it.Offerings[0].Price *= 1.3
		}
		types = append(types, it)
	}
	return Input{Pods: ps, NodePools: []nodeplan.NodePool{{Name: "p"}},
		PoolInstanceTypes: map[string][]nodeplan.InstanceType{"p": types},
		Options:           Options{Effort: rapid.SampledFrom(efforts).Draw(rt, "effort")}}
}
