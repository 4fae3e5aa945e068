package scheduling

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"

	"github.com/nodeplan/nodeplan"
)

// capacityInto must give InstanceType.Allocatable's amounts exactly: a shape's room decides
// what fits, so a unit off changes plans; and the capacity as dims.vec gives it.
func TestCapacityIntoIsAllocatable(t *testing.T) {
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
			got, capacity := make(vec, len(d.names)), make(vec, len(d.names))
			d.capacityInto(capacity, got, &tt.it)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("capacityInto's allocatable (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(d.vec(tt.it.Capacity), capacity); diff != "" {
				t.Errorf("capacityInto's capacity (-want +got):\n%s", diff)
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
		if _, got := (&pool{desc: desc}).launchable(it); got != want {
			rt.Fatalf("launchable(%v, labels %v) = %v, intersection not empty = %v", desc, labels, got, want)
		}
	})
}

// shapeReqs must answer every question as the requirements it stands for would:
// where.IntersectLabels(labels), with the type's name added as the instance-type label when
// the labels lack one — the list newShape built before.
func TestShapeReqsIsIntersection(t *testing.T) {
	keys := []string{nodeplan.LabelInstanceType, nodeplan.LabelZone, "category", "generation", "other"}
	rapid.Check(t, func(rt *rapid.T) {
		where := drawRequirements(rt, "where", keys)
		labels := map[string]string{}
		for _, k := range keys {
			if rapid.Bool().Draw(rt, "has "+k) {
				labels[k] = rapid.SampledFrom(shapeReqsValues).Draw(rt, "value")
			}
		}
		n := shapeReqs{where: where, labels: labels, name: "m5.large", named: true}
		full := where
		if _, ok := labels[nodeplan.LabelInstanceType]; !ok {
			full = full.Add(nodeplan.In(nodeplan.LabelInstanceType, n.name))
		}
		full = full.IntersectLabels(labels)
		if rapid.Bool().Draw(rt, "unnamed") { // a shape with no facts (binBound's) is unnamed
			n.named, n.labels, full = false, nil, where
		}
		pod := drawRequirements(rt, "pod", keys)
		if got, want := n.compatible(pod), full.Compatible(pod) == nil; got != want {
			rt.Fatalf("compatible(%v) on %v = %v, want %v", pod, full, got, want)
		}
		skip := rapid.SampledFrom(keys).Draw(rt, "skip")
		if got, want := n.compatibleIgnoring(pod, skip), compatibleIgnoring(full, pod, skip) == nil; got != want {
			rt.Fatalf("compatibleIgnoring(%v, %s) on %v = %v, want %v", pod, skip, full, got, want)
		}
		for _, k := range keys {
			got, gotOK := n.get(k)
			want, wantOK := full.Get(k)
			if gotOK != wantOK || !got.Equal(want) || got.MinValues != want.MinValues {
				rt.Fatalf("get(%s) on %v = %v %v, want %v %v", k, full, got, gotOK, want, wantOK)
			}
		}
		var narrow []string
		for _, r := range full.All() {
			if _, single := r.Single(); !single && r.Key != nodeplan.LabelZone && r.Key != nodeplan.LabelCapacityType {
				narrow = append(narrow, r.Key)
			}
		}
		if diff := cmp.Diff(narrow, n.narrowKeys()); diff != "" {
			rt.Fatalf("narrowKeys of %v (-want +got):\n%s", full, diff)
		}
	})
}

var shapeReqsValues = []string{"1", "4", "5", "c", "m5.large"}

// drawRequirements draws a requirement, or none, on each key, with any operator.
func drawRequirements(rt *rapid.T, label string, keys []string) nodeplan.Requirements {
	var rs nodeplan.Requirements
	for _, k := range keys {
		op := rapid.SampledFrom([]corev1.NodeSelectorOperator{"", corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn,
			corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt,
			corev1.NodeSelectorOpLt, nodeplan.NodeSelectorOpGte, nodeplan.NodeSelectorOpLte}).Draw(rt, label+" op")
		var vals []string
		switch op {
		case "":
			continue
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			vals = rapid.SliceOfNDistinct(rapid.SampledFrom(shapeReqsValues), 1, 3, rapid.ID).Draw(rt, label+" vals")
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, nodeplan.NodeSelectorOpGte, nodeplan.NodeSelectorOpLte:
			vals = []string{rapid.SampledFrom([]string{"1", "4", "5"}).Draw(rt, label+" n")}
		}
		r, err := nodeplan.NewRequirement(k, op, vals...)
		if err != nil {
			rt.Fatal(err)
		}
		r.MinValues = rapid.IntRange(0, 2).Draw(rt, label+" minValues")
		rs = rs.Add(r)
	}
	return rs
}

// The builder's narrow keys, worked out from the keys launchable found labelled and kept from
// type to type, must be the shape's own (shapeReqs.narrowKeys).
func TestBuilderNarrowKeysAreShapeReqs(t *testing.T) {
	keys := []string{nodeplan.LabelInstanceType, nodeplan.LabelZone, nodeplan.LabelCapacityType, "category", "other"}
	rapid.Check(t, func(rt *rapid.T) {
		pl := &pool{desc: drawRequirements(rt, "desc", keys)}
		b := &shapeBuilder{pl: pl, narrowFor: math.MaxUint64}
		where := pl.desc.Intersect(nodeplan.NewRequirements(nodeplan.In(nodeplan.LabelZone, "a", "b"), nodeplan.In(nodeplan.LabelCapacityType, "spot")))
		for range rapid.IntRange(1, 4).Draw(rt, "types") {
			labels := map[string]string{}
			for _, k := range keys {
				if rapid.Bool().Draw(rt, "has "+k) {
					labels[k] = rapid.SampledFrom(shapeReqsValues).Draw(rt, "value")
				}
			}
			it := &nodeplan.InstanceType{Name: "m5.large", Labels: labels}
			labelled, ok := pl.launchable(it)
			if !ok {
				continue
			}
			reqs := shapeReqs{where: where, labels: labels, name: it.Name, named: true}
			if diff := cmp.Diff(reqs.narrowKeys(), b.narrowKeys(&reqs, labelled)); diff != "" {
				rt.Fatalf("narrowKeys of %v with labels %v (-want +got):\n%s", pl.desc, labels, diff)
			}
		}
	})
}
