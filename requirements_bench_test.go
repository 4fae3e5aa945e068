package nodeplan

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// benchNode is a node of a real instance type (c6i.2xlarge from testdata/catalog.json): its
// labels plus zone and capacity type, about 20 keys.
func benchNode(b *testing.B) (map[string]string, Requirements) {
	types, err := DecodeCatalog(mustReadFile(b, "testdata/catalog.json"))
	if err != nil {
		b.Fatal(err)
	}
	var it InstanceType
	for _, t := range types {
		if t.Name == "c6i.2xlarge" {
			it = t
		}
	}
	labels := map[string]string{LabelZone: "us-east-1b", LabelCapacityType: "spot"}
	for k, v := range it.Labels {
		labels[k] = v
	}
	return labels, it.Requirements()
}

// benchPod demands three keys, as a typical nodeSelector plus required affinity does.
func benchPod(b *testing.B) Requirements {
	pod, err := RequirementsFromNodeSelector([]corev1.NodeSelectorRequirement{
		{Key: LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a", "us-east-1b"}},
		{Key: LabelInstanceCPU, Operator: corev1.NodeSelectorOpGt, Values: []string{"4"}},
	})
	if err != nil {
		b.Fatal(err)
	}
	return pod
}

func BenchmarkRequirementsMatches(b *testing.B) {
	labels, _ := benchNode(b)
	pod := benchPod(b)
	b.ReportAllocs()
	for b.Loop() {
		if !pod.Matches(labels) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkRequirementsIntersects(b *testing.B) {
	_, node := benchNode(b)
	pod := benchPod(b)
	b.ReportAllocs()
	for b.Loop() {
		if !node.Intersects(pod) {
			b.Fatal("no intersection")
		}
	}
}

func BenchmarkRequirementsCompatible(b *testing.B) {
	_, node := benchNode(b)
	b.Run("compatible", func(b *testing.B) {
		pod := benchPod(b)
		b.ReportAllocs()
		for b.Loop() {
			if node.Compatible(pod) != nil {
				b.Fatal("incompatible")
			}
		}
	})
	b.Run("incompatible", func(b *testing.B) {
		pod := benchPod(b).Add(In(LabelArch, "arm64"))
		b.ReportAllocs()
		for b.Loop() {
			if node.Compatible(pod) == nil {
				b.Fatal("compatible")
			}
		}
	})
}

func BenchmarkRequirementIntersect(b *testing.B) {
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("type-%03d", i)
		}
		return out
	}
	cases := []struct {
		name string
		a, c Requirement
	}{
		{"zones=3x2", In(LabelZone, "us-east-1a", "us-east-1b", "us-east-1c"), In(LabelZone, "us-east-1b", "us-east-1c")},
		{"types=160x20", In(LabelInstanceType, many(160)...), In(LabelInstanceType, many(20)...)},
		{"In-NotIn", In(LabelCapacityType, "spot", "on-demand"), NotIn(LabelCapacityType, "spot")},
		{"Gt-Lt", mustRequirement(b, LabelInstanceCPU, corev1.NodeSelectorOpGt, "4"), mustRequirement(b, LabelInstanceCPU, corev1.NodeSelectorOpLt, "65")},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = tc.a.Intersect(tc.c)
			}
		})
	}
}
