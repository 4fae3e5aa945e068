package nodeplan

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// NodeOverlayAPIVersion and KindNodeOverlay name Karpenter's NodeOverlay (alpha in v1.14).
const (
	NodeOverlayAPIVersion = "karpenter.sh/v1alpha1"
	KindNodeOverlay       = "NodeOverlay"
)

// NodeOverlay is Karpenter's NodeOverlay: it changes what the solver believes about the instance
// types its requirements select — their price (a Savings Plan, a licence, a preference for a
// newer generation) and extended resources the cloud does not report (hugepages, device plugin
// slices). It changes the model only: what a node really costs or has is up to the cloud and
// the node. Apply overlays with [ApplyNodeOverlays].
type NodeOverlay struct {
	Name string
	// Weight orders overlays that select the same type: higher first; equal weights by name.
	Weight int32
	// Requirements select offerings by the type's labels and the offering's zone and capacity
	// type; empty selects every offering.
	Requirements Requirements
	// Price, when set, replaces the price of every selected offering.
	Price *float64
	// PriceAdjustment, when set, changes the price of every selected offering: by Percent
	// percent, or by Amount in the catalog's currency. At most one of Price and PriceAdjustment
	// is set.
	PriceAdjustment *PriceAdjustment
	// Capacity adds extended resources to every selected type.
	Capacity corev1.ResourceList
}

// PriceAdjustment is "+10%", "-2.5%", "+0.05" or "-0.5".
type PriceAdjustment struct {
	Percent bool
	Value   float64 // signed
}

// Apply returns price adjusted. An adjustment that would make an offering free or negative
// leaves it at a tiny positive price: the cheapest, without looking like a free machine.
func (a PriceAdjustment) Apply(price float64) float64 {
	p := price + a.Value
	if a.Percent {
		p = price * (1 + a.Value/100)
	}
	return max(p, minOverlayPrice)
}

// minOverlayPrice is the floor an overlay can push a price to.
const minOverlayPrice = 1e-6

func (a PriceAdjustment) String() string {
	s := strconv.FormatFloat(a.Value, 'f', -1, 64)
	if a.Value >= 0 {
		s = "+" + s
	}
	if a.Percent {
		s += "%"
	}
	return s
}

// ParsePriceAdjustment reads Karpenter's priceAdjustment: a signed number, optionally a
// percentage ("+10%", "-0.50").
func ParsePriceAdjustment(s string) (PriceAdjustment, error) {
	var a PriceAdjustment
	v := strings.TrimSpace(s)
	if strings.HasSuffix(v, "%") {
		a.Percent = true
		v = strings.TrimSuffix(v, "%")
	}
	if !strings.HasPrefix(v, "+") && !strings.HasPrefix(v, "-") {
		return a, fmt.Errorf("%q: want a signed amount or percentage such as +10%%, -5%% or -0.50", s)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return a, fmt.Errorf("%q: want a signed amount or percentage such as +10%%, -5%% or -0.50", s)
	}
	if a.Percent && f <= -100 {
		return a, fmt.Errorf("%q: a reduction of 100%% or more would make instances free", s)
	}
	a.Value = f
	return a, nil
}

// OverlayConflict is two overlays of equal weight that both set the price of one offering;
// the one whose name sorts first wins, as in Karpenter, and the conflict is reported.
type OverlayConflict struct {
	InstanceType  string
	Winner, Loser string
}

func (c OverlayConflict) String() string {
	return fmt.Sprintf("NodeOverlays %s and %s have the same weight and both price %s; %s applies", c.Winner, c.Loser, c.InstanceType, c.Winner)
}

// ApplyNodeOverlays returns copies of types changed by the overlays, and the conflicts found.
// For each offering, the selecting overlay that comes first (highest weight, then name) and
// sets a price or an adjustment decides its price; capacity from every selecting overlay is
// merged, the first one deciding a resource both set. An overlay selects a type's capacity when
// its requirements, without the zone and capacity-type ones, match the type's labels. The input
// is not modified.
func ApplyNodeOverlays(types []InstanceType, overlays []NodeOverlay) ([]InstanceType, []OverlayConflict) {
	ordered := slices.Clone(overlays)
	slices.SortStableFunc(ordered, func(a, b NodeOverlay) int {
		if c := cmp.Compare(b.Weight, a.Weight); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	typeReqs := make([]Requirements, len(ordered))
	for i, o := range ordered {
		typeReqs[i] = withoutOfferingKeys(o.Requirements)
	}
	var conflicts []OverlayConflict
	out := make([]InstanceType, len(types))
	for ti, it := range types {
		it.Offerings = slices.Clone(it.Offerings)
		for oi := range it.Offerings {
			off := &it.Offerings[oi]
			labels := offeringLabels(it, *off)
			var decided *NodeOverlay
			for i := range ordered {
				o := &ordered[i]
				if (o.Price == nil && o.PriceAdjustment == nil) || !o.Requirements.Matches(labels) {
					continue
				}
				if decided == nil {
					decided = o
					continue
				}
				if o.Weight == decided.Weight && !slices.ContainsFunc(conflicts, func(c OverlayConflict) bool {
					return c.InstanceType == it.Name && c.Loser == o.Name
				}) {
					conflicts = append(conflicts, OverlayConflict{InstanceType: it.Name, Winner: decided.Name, Loser: o.Name})
				}
			}
			switch {
			case decided == nil:
			case decided.Price != nil:
				off.Price = *decided.Price
			default:
				off.Price = decided.PriceAdjustment.Apply(off.Price)
			}
		}
		var added corev1.ResourceList
		for i, o := range ordered {
			if len(o.Capacity) == 0 || !typeReqs[i].Matches(it.Labels) {
				continue
			}
			if added == nil {
				added = corev1.ResourceList{}
			}
			for name, q := range o.Capacity {
				if _, ok := added[name]; !ok {
					added[name] = q.DeepCopy()
				}
			}
		}
		if added != nil {
			capacity := it.Capacity.DeepCopy()
			if capacity == nil {
				capacity = corev1.ResourceList{}
			}
			for name, q := range added {
				capacity[name] = q
			}
			it.Capacity = capacity
		}
		out[ti] = it
	}
	return out, conflicts
}

func offeringLabels(it InstanceType, o Offering) map[string]string {
	labels := make(map[string]string, len(it.Labels)+2)
	for k, v := range it.Labels {
		labels[k] = v
	}
	labels[LabelZone] = o.Zone
	labels[LabelCapacityType] = string(o.CapacityType)
	return labels
}

func withoutOfferingKeys(rs Requirements) Requirements {
	var keep []Requirement
	for _, r := range rs.All() {
		if r.Key != LabelZone && r.Key != LabelCapacityType {
			keep = append(keep, r)
		}
	}
	return NewRequirements(keep...)
}

// nodeOverlayObject is the wire shape of a NodeOverlay.
type nodeOverlayObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Weight          *int32                                    `json:"weight"`
		Requirements    []corev1.NodeSelectorRequirement          `json:"requirements"`
		Price           *string                                   `json:"price"`
		PriceAdjustment *string                                   `json:"priceAdjustment"`
		Capacity        map[corev1.ResourceName]resource.Quantity `json:"capacity"`
	} `json:"spec"`
}

// DecodeNodeOverlays reads karpenter.sh/v1alpha1 NodeOverlays from YAML or JSON — single
// objects, "---"-separated documents, or "kind: List" documents as `kubectl get -o yaml`
// prints them — and leaves every other kind alone, so the same stream can hold NodePools and
// EC2NodeClasses. Every problem is reported at once, naming the overlay and the field.
func DecodeNodeOverlays(data []byte) ([]NodeOverlay, error) {
	var out []NodeOverlay
	var errs []error
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				errs = append(errs, fmt.Errorf("nodeplan: document %d: %w", doc, err))
			}
			break
		}
		var head struct {
			Kind  string            `json:"kind"`
			Items []json.RawMessage `json:"items"`
		}
		if err := sigsyaml.Unmarshal(raw, &head); err != nil {
			errs = append(errs, fmt.Errorf("nodeplan: document %d: %w", doc, err))
			continue
		}
		objects := [][]byte{raw}
		if head.Kind == "List" {
			objects = nil
			for _, it := range head.Items {
				objects = append(objects, it)
			}
		}
		for _, obj := range objects {
			o, ok, err := decodeNodeOverlay(obj)
			if err != nil {
				errs = append(errs, err)
			}
			if ok {
				out = append(out, o)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func decodeNodeOverlay(raw []byte) (NodeOverlay, bool, error) {
	var kind struct {
		Kind string `json:"kind"`
	}
	if err := sigsyaml.Unmarshal(raw, &kind); err != nil || kind.Kind != KindNodeOverlay {
		return NodeOverlay{}, false, nil
	}
	var w nodeOverlayObject
	if err := sigsyaml.UnmarshalStrict(raw, &w); err != nil {
		if err := sigsyaml.Unmarshal(raw, &w); err != nil {
			return NodeOverlay{}, false, fmt.Errorf("nodeplan: NodeOverlay: %w", err)
		}
	}
	obj := fmt.Sprintf("NodeOverlay %q", w.Metadata.Name)
	var errs []error
	fe := func(field, value, expected string) {
		errs = append(errs, &FieldError{Object: obj, Field: field, Value: value, Expected: expected})
	}
	if w.APIVersion != NodeOverlayAPIVersion {
		fe("apiVersion", w.APIVersion, NodeOverlayAPIVersion)
	}
	if msgs := validation.IsDNS1123Subdomain(w.Metadata.Name); len(msgs) > 0 {
		fe("metadata.name", w.Metadata.Name, "a valid object name")
	}
	o := NodeOverlay{Name: w.Metadata.Name}
	if w.Spec.Weight != nil {
		o.Weight = *w.Spec.Weight
	}
	reqs, err := RequirementsFromNodeSelector(w.Spec.Requirements)
	if err != nil {
		fe("spec.requirements", "", err.Error())
	}
	o.Requirements = reqs
	if w.Spec.Price != nil && w.Spec.PriceAdjustment != nil {
		fe("spec.price", *w.Spec.Price, "either price or priceAdjustment, not both")
	}
	if w.Spec.Price != nil {
		p, err := strconv.ParseFloat(strings.TrimSpace(*w.Spec.Price), 64)
		if err != nil || !(p > 0) || math.IsInf(p, 0) {
			fe("spec.price", *w.Spec.Price, "a positive price such as \"0.05\" (a zero price would make instances look free)")
		} else {
			o.Price = &p
		}
	}
	if w.Spec.PriceAdjustment != nil {
		a, err := ParsePriceAdjustment(*w.Spec.PriceAdjustment)
		if err != nil {
			fe("spec.priceAdjustment", *w.Spec.PriceAdjustment, err.Error())
		} else {
			o.PriceAdjustment = &a
		}
	}
	for name, q := range w.Spec.Capacity {
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage:
			fe("spec.capacity."+string(name), q.String(), "an extended resource: overlays cannot change cpu, memory, pods or ephemeral-storage")
			continue
		}
		if q.Sign() < 0 {
			fe("spec.capacity."+string(name), q.String(), "a non-negative quantity")
			continue
		}
		if o.Capacity == nil {
			o.Capacity = corev1.ResourceList{}
		}
		o.Capacity[name] = q
	}
	if len(errs) > 0 {
		return NodeOverlay{}, false, errors.Join(errs...)
	}
	return o, true, nil
}
