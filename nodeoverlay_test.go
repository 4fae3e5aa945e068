package nodeplan

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func overlayTypes() []InstanceType {
	mk := func(name, family string, od, spot float64) InstanceType {
		return InstanceType{
			Name:     name,
			Labels:   map[string]string{LabelInstanceType: name, "karpenter.k8s.aws/instance-family": family},
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Offerings: []Offering{
				{Zone: "us-east-1a", CapacityType: CapacityTypeOnDemand, Price: od, Available: true},
				{Zone: "us-east-1a", CapacityType: CapacityTypeSpot, Price: spot, Available: true},
			},
		}
	}
	return []InstanceType{mk("m5.large", "m5", 0.096, 0.04), mk("m7i.large", "m7i", 0.1008, 0.05)}
}

func TestDecodeNodeOverlays(t *testing.T) {
	stream := `apiVersion: v1
kind: List
items:
- apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: default}
  spec: {}
- apiVersion: karpenter.sh/v1alpha1
  kind: NodeOverlay
  metadata: {name: savings-plan}
  spec:
    weight: 10
    requirements:
    - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m7i]}
    priceAdjustment: "-30%"
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: hugepages}
spec:
  capacity: {hugepages-2Mi: 100Mi}
`
	got, err := DecodeNodeOverlays([]byte(stream))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "savings-plan" || got[0].Weight != 10 || got[0].PriceAdjustment == nil ||
		*got[0].PriceAdjustment != (PriceAdjustment{Percent: true, Value: -30}) || got[1].Name != "hugepages" {
		t.Errorf("DecodeNodeOverlays() = %+v", got)
	}
}

func TestDecodeNodeOverlaysErrors(t *testing.T) {
	for _, tt := range []struct{ spec, want string }{
		{`price: "0"`, "spec.price"},
		{`price: "1"` + "\n  priceAdjustment: \"+1\"", "not both"},
		{`priceAdjustment: "10%"`, "signed"},
		{`priceAdjustment: "-100%"`, "free"},
		{`capacity: {cpu: "2"}`, "extended resource"},
		{`requirements: [{key: a, operator: Bogus, values: [x]}]`, "spec.requirements"},
	} {
		doc := "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: bad}\nspec:\n  " + tt.spec + "\n"
		_, err := DecodeNodeOverlays([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("DecodeNodeOverlays(%s) error = %v, want one mentioning %q", tt.spec, err, tt.want)
		}
	}
}

func TestApplyNodeOverlays(t *testing.T) {
	spotOnly, _ := RequirementsFromNodeSelector([]corev1.NodeSelectorRequirement{{Key: LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}}})
	m7i, _ := RequirementsFromNodeSelector([]corev1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m7i"}}})
	five := 0.05
	overlays := []NodeOverlay{
		{Name: "b-cheaper-m7i", Weight: 10, Requirements: m7i, PriceAdjustment: &PriceAdjustment{Percent: true, Value: -50}},
		{Name: "a-fixed-m7i", Weight: 10, Requirements: m7i, Price: &five},
		{Name: "spot-penalty", Weight: 1, Requirements: spotOnly, PriceAdjustment: &PriceAdjustment{Value: 0.01}},
		{Name: "devices", Capacity: corev1.ResourceList{"example.com/fuse": resource.MustParse("4")}},
	}
	in := overlayTypes()
	got, conflicts := ApplyNodeOverlays(in, overlays)
	prices := func(it InstanceType) []float64 {
		var p []float64
		for _, o := range it.Offerings {
			p = append(p, o.Price)
		}
		return p
	}
	if diff := cmp.Diff([]float64{0.096, 0.05}, prices(got[0])); diff != "" {
		t.Errorf("m5.large prices (-want +got):\n%s", diff)
	}
	// Equal weights: a-fixed-m7i sorts first and wins both offerings; the spot penalty has a lower weight.
	if diff := cmp.Diff([]float64{0.05, 0.05}, prices(got[1])); diff != "" {
		t.Errorf("m7i.large prices (-want +got):\n%s", diff)
	}
	if len(conflicts) != 1 || conflicts[0] != (OverlayConflict{InstanceType: "m7i.large", Winner: "a-fixed-m7i", Loser: "b-cheaper-m7i"}) {
		t.Errorf("conflicts = %v, want a-fixed-m7i over b-cheaper-m7i on m7i.large", conflicts)
	}
	for _, it := range got {
		if q := it.Capacity["example.com/fuse"]; q.Value() != 4 {
			t.Errorf("%s example.com/fuse = %v, want 4", it.Name, q.String())
		}
	}
	if in[1].Offerings[0].Price != 0.1008 || len(in[0].Capacity) != 1 {
		t.Errorf("ApplyNodeOverlays changed its input")
	}
}

func TestPriceAdjustmentNeverMakesAnInstanceFree(t *testing.T) {
	a := PriceAdjustment{Value: -1}
	if got := a.Apply(0.1); !(got > 0) {
		t.Errorf("PriceAdjustment(-1).Apply(0.1) = %v, want a positive price", got)
	}
}
