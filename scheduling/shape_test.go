package scheduling

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"

	"github.com/nodeplan/nodeplan"
)

// allocatableInto must give InstanceType.Allocatable's amounts exactly: a shape's room decides
// what fits, so a unit off changes plans.
func TestAllocatableIntoIsAllocatable(t *testing.T) {
	q := resource.MustParse
	tests := []struct {
		name string
		it   nodeplan.InstanceType
	}{
		{"no overhead", nodeplan.InstanceType{Capacity: corev1.ResourceList{"cpu": q("4"), "memory": q("16Gi")}}},
		{"every part", nodeplan.InstanceType{
			Capacity: corev1.ResourceList{"cpu": q("4"), "memory": q("16Gi"), "pods": q("110")},
			Overhead: nodeplan.Overhead{
				KubeReserved:      corev1.ResourceList{"cpu": q("80m"), "memory": q("893Mi")},
				SystemReserved:    corev1.ResourceList{"cpu": q("100m"), "memory": q("100Mi")},
				EvictionThreshold: corev1.ResourceList{"memory": q("100Mi")},
			},
		}},
		{"overhead above capacity floors at zero", nodeplan.InstanceType{
			Capacity: corev1.ResourceList{"cpu": q("1"), "memory": q("1Gi")},
			Overhead: nodeplan.Overhead{KubeReserved: corev1.ResourceList{"cpu": q("700m")}, SystemReserved: corev1.ResourceList{"cpu": q("400m")}},
		}},
		{"overhead on a resource the type lacks", nodeplan.InstanceType{
			Capacity: corev1.ResourceList{"cpu": q("2")},
			Overhead: nodeplan.Overhead{KubeReserved: corev1.ResourceList{"nvidia.com/gpu": q("1")}},
		}},
		{"sub-milli amounts round as one difference", nodeplan.InstanceType{
			Capacity: corev1.ResourceList{"cpu": q("2.0004"), "memory": q("1000.5")},
			Overhead: nodeplan.Overhead{KubeReserved: corev1.ResourceList{"cpu": q("0.0003")}, SystemReserved: corev1.ResourceList{"cpu": q("0.0003"), "memory": q("0.25")}},
		}},
		{"beyond int64 milli-units saturates", nodeplan.InstanceType{
			Capacity: corev1.ResourceList{"cpu": q("1e17"), "memory": q("9e18")},
			Overhead: nodeplan.Overhead{KubeReserved: corev1.ResourceList{"cpu": q("1")}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDims()
			d.addAll(tt.it.Capacity)
			want := d.vec(tt.it.Allocatable())
			got := make(vec, len(d.names))
			d.allocatableInto(got, &tt.it)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("allocatableInto (-want +got):\n%s", diff)
			}
		})
	}
}

// mayLaunch must say no exactly when the pool's requirements and the type's labels intersect
// to nothing, the slow test it replaces.
func TestMayLaunchIsIntersectionNotEmpty(t *testing.T) {
	keys := []string{nodeplan.LabelInstanceType, "category", "generation"}
	values := []string{"1", "4", "5", "c", "m5.large"}
	rapid.Check(t, func(rt *rapid.T) {
		var desc nodeplan.Requirements
		for _, k := range keys {
			op := rapid.SampledFrom([]corev1.NodeSelectorOperator{"", corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn,
				corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt,
				corev1.NodeSelectorOpLt, nodeplan.NodeSelectorOpGte}).Draw(rt, "op")
			var vals []string
			switch op {
			case "":
				continue
			case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
				vals = rapid.SliceOfNDistinct(rapid.SampledFrom(values), 1, 3, rapid.ID).Draw(rt, "vals")
			case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, nodeplan.NodeSelectorOpGte:
				vals = []string{rapid.SampledFrom([]string{"1", "4", "5"}).Draw(rt, "n")}
			}
			r, err := nodeplan.NewRequirement(k, op, vals...)
			if err != nil {
				rt.Fatal(err)
			}
			desc = desc.Add(r)
		}
		labels := map[string]string{}
		for _, k := range keys {
			if rapid.Bool().Draw(rt, "has "+k) {
				labels[k] = rapid.SampledFrom(values).Draw(rt, "value")
			}
		}
		it := &nodeplan.InstanceType{Name: "m5.large", Labels: labels}
		typeReqs := nodeplan.RequirementsFromLabels(labels)
		if _, ok := labels[nodeplan.LabelInstanceType]; !ok {
			typeReqs = typeReqs.Add(nodeplan.In(nodeplan.LabelInstanceType, it.Name))
		}
		want := !desc.Intersect(typeReqs).IsEmpty()
		if got := (&pool{desc: desc}).mayLaunch(it); got != want {
			rt.Fatalf("mayLaunch(%v, labels %v) = %v, intersection not empty = %v", desc, labels, got, want)
		}
	})
}
