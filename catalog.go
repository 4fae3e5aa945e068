package nodeplan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// catalogFile is the JSON shape of an instance catalog: an object with an instanceTypes array,
// each with name, labels, capacity, allocatable and offerings (see shared/data/catalog.json).
type catalogFile struct {
	Region        string            `json:"region"`
	Zones         []string          `json:"zones"`
	Notes         []string          `json:"notes"`
	InstanceTypes []json.RawMessage `json:"instanceTypes"`
}

type catalogType struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels"`
	Capacity    map[string]string `json:"capacity"`
	Allocatable map[string]string `json:"allocatable"`
	Offerings   []catalogOffering `json:"offerings"`
}

// catalogTypeRaw is catalogType as decoded: offerings one by one, so an error names its index.
type catalogTypeRaw struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels"`
	Capacity    map[string]string `json:"capacity"`
	Allocatable map[string]string `json:"allocatable"`
	Offerings   []json.RawMessage `json:"offerings"`
}

type catalogOffering struct {
	Zone         string   `json:"zone"`
	CapacityType string   `json:"capacityType"`
	Price        *float64 `json:"price"`
	Available    *bool    `json:"available"`
}

// Prices a catalog may hold, in USD per hour. Below the minimum a price prints as $0.0000 and
// reads as free; above the maximum, sums over a cluster lose meaning (and 1e308 overflows to
// +Inf, which JSON cannot carry). Real prices are between about $0.001 and $400 an hour.
const (
	MinCatalogPrice = 1e-6
	MaxCatalogPrice = 1e6
)

// DecodeCatalog reads an instance catalog: a JSON object with an "instanceTypes" array (and,
// for people, optional "region", "zones" and "notes") whose
// elements have name, labels, capacity and allocatable (resource name → Kubernetes quantity
// string) and offerings (zone, capacityType, price in USD per hour, available).
//
// The overhead of each type is capacity − allocatable, kept as kube-reserved. Every problem is
// reported, naming the type and field: unknown fields (a misspelt "availabel" would otherwise
// leave the offering available), a missing price or one outside [MinCatalogPrice,
// MaxCatalogPrice] (never a free instance), two offerings for the same zone and capacity type,
// a type named twice.
func DecodeCatalog(data []byte) ([]InstanceType, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("nodeplan: catalog: %w", err)
	}
	if _, ok := top["instanceTypes"]; !ok {
		return nil, errors.New(`nodeplan: catalog: no "instanceTypes" array`)
	}
	var f catalogFile
	if err := strictJSON(data, &f); err != nil {
		return nil, fmt.Errorf("nodeplan: catalog: %w", err)
	}
	if f.InstanceTypes == nil {
		return nil, errors.New(`nodeplan: catalog: no "instanceTypes" array`)
	}
	var errs []error
	seen := map[string]bool{}
	out := make([]InstanceType, 0, len(f.InstanceTypes))
	for i, raw := range f.InstanceTypes {
		var ct catalogTypeRaw
		err := strictJSON(raw, &ct)
		if err != nil {
			_ = json.Unmarshal(raw, &struct{ Name *string }{&ct.Name}) // for the object's name
		}
		obj := fmt.Sprintf("instanceTypes[%d]", i)
		if ct.Name != "" {
			obj = fmt.Sprintf("instanceTypes[%d] (%s)", i, ct.Name)
		}
		fe := func(field, value, expected string) {
			errs = append(errs, &FieldError{Object: "catalog " + obj, Field: field, Value: value, Expected: expected})
		}
		if err != nil {
			jsonFieldError(err, "", fe)
			continue
		}
		if ct.Name == "" {
			fe("name", "", "required")
		} else if seen[ct.Name] {
			fe("name", ct.Name, "unique (the type appears twice)")
		}
		seen[ct.Name] = true
		capacity, bad := parseResourceMap(ct.Capacity, "capacity", fe)
		alloc, bad2 := parseResourceMap(ct.Allocatable, "allocatable", fe)
		if bad || bad2 {
			continue
		}
		if len(capacity) == 0 {
			fe("capacity", "", "required (cpu, memory, pods…)")
		}
		if ct.Allocatable == nil {
			alloc = capacity
		}
		for k, a := range alloc {
			c, ok := capacity[k]
			if !ok {
				// Allocatable without capacity: the data's own cross-check allows none; treat the
				// allocatable as the capacity rather than invent an overhead.
				capacity[k] = a.DeepCopy()
				continue
			}
			if a.Cmp(c) > 0 {
				fe("allocatable."+string(k), a.String(), fmt.Sprintf("at most the capacity %s", c.String()))
			}
		}
		it := InstanceType{Name: ct.Name, Labels: ct.Labels, Capacity: capacity,
			Overhead: Overhead{KubeReserved: SubtractResources(capacity, alloc)}}
		if it.Labels == nil {
			it.Labels = map[string]string{}
		}
		if _, ok := it.Labels[LabelInstanceType]; !ok && ct.Name != "" {
			it.Labels[LabelInstanceType] = ct.Name
		}
		offeringAt := map[[2]string]int{}
		for j, rawOffering := range ct.Offerings {
			field := fmt.Sprintf("offerings[%d]", j)
			var o catalogOffering
			if err := strictJSON(rawOffering, &o); err != nil {
				jsonFieldError(err, field+".", fe)
				continue
			}
			ok := true
			if o.Zone == "" {
				fe(field+".zone", "", "required")
				ok = false
			}
			if !CapacityType(o.CapacityType).Valid() {
				fe(field+".capacityType", o.CapacityType, "on-demand, spot or reserved")
				ok = false
			}
			if o.Price == nil {
				fe(field+".price", "", "required (USD per hour); an unpriced offering would look free")
				ok = false
			} else if !(*o.Price >= MinCatalogPrice && *o.Price <= MaxCatalogPrice) {
				fe(field+".price", strconv.FormatFloat(*o.Price, 'g', -1, 64),
					fmt.Sprintf("a positive price in USD per hour, from %g to %g", MinCatalogPrice, MaxCatalogPrice))
				ok = false
			}
			key := [2]string{o.Zone, o.CapacityType}
			if k, dup := offeringAt[key]; dup && o.Zone != "" {
				fe(field, o.Zone+" "+o.CapacityType, fmt.Sprintf("one offering per zone and capacity type (offerings[%d] is the same)", k))
				ok = false
			} else {
				offeringAt[key] = j
			}
			if !ok {
				continue
			}
			avail := o.Available == nil || *o.Available
			it.Offerings = append(it.Offerings, Offering{Zone: o.Zone, CapacityType: CapacityType(o.CapacityType), Price: *o.Price, Available: avail})
		}
		out = append(out, it)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortStableFunc(out, func(a, b InstanceType) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// strictJSON decodes one JSON value, refusing fields v does not have and anything after it.
func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

// jsonFieldError reports a strictJSON error as a field error under prefix: an unknown field by
// its name, a value of the wrong type by its field.
func jsonFieldError(err error, prefix string, fe func(field, value, expected string)) {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te) && te.Field != "":
		fe(prefix+te.Field, te.Value, "a JSON "+te.Type.String())
	default:
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			fe(prefix+strings.Trim(name, `"`), "", "a known field (name, labels, capacity, allocatable, offerings; an offering has zone, capacityType, price, available)")
			return
		}
		fe(strings.TrimSuffix(prefix, "."), "", "valid JSON: "+err.Error())
	}
}

func parseResourceMap(m map[string]string, field string, fe func(field, value, expected string)) (corev1.ResourceList, bool) {
	out := corev1.ResourceList{}
	bad := false
	for k, v := range m {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			fe(field+"."+k, v, "a Kubernetes quantity such as 4, 1930m or 16Gi")
			bad = true
			continue
		}
		if q.Sign() < 0 {
			fe(field+"."+k, v, "a non-negative quantity")
			bad = true
			continue
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, bad
}
