package nodeplan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// catalogFile is the JSON shape of an instance catalog: an object with an instanceTypes array,
// each with name, labels, capacity, allocatable and offerings (see shared/data/catalog.json).
type catalogFile struct {
	InstanceTypes []catalogType `json:"instanceTypes"`
}

type catalogType struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels"`
	Capacity    map[string]string `json:"capacity"`
	Allocatable map[string]string `json:"allocatable"`
	Offerings   []catalogOffering `json:"offerings"`
}

type catalogOffering struct {
	Zone         string   `json:"zone"`
	CapacityType string   `json:"capacityType"`
	Price        *float64 `json:"price"`
	Available    *bool    `json:"available"`
}

// DecodeCatalog reads an instance catalog: a JSON object with an "instanceTypes" array whose
// elements have name, labels, capacity and allocatable (resource name → Kubernetes quantity
// string) and offerings (zone, capacityType, price in USD per hour, available).
//
// The overhead of each type is capacity − allocatable, kept as kube-reserved. Every problem is
// reported, naming the type and field; a missing or non-positive price is an error, never a free
// instance.
func DecodeCatalog(data []byte) ([]InstanceType, error) {
	var f catalogFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("nodeplan: catalog: %w", err)
	}
	if f.InstanceTypes == nil {
		return nil, errors.New(`nodeplan: catalog: no "instanceTypes" array`)
	}
	var errs []error
	seen := map[string]bool{}
	out := make([]InstanceType, 0, len(f.InstanceTypes))
	for i, ct := range f.InstanceTypes {
		obj := fmt.Sprintf("instanceTypes[%d]", i)
		if ct.Name != "" {
			obj = fmt.Sprintf("instanceTypes[%d] (%s)", i, ct.Name)
		}
		fe := func(field, value, expected string) {
			errs = append(errs, &FieldError{Object: "catalog " + obj, Field: field, Value: value, Expected: expected})
		}
		if ct.Name == "" {
			fe("name", "", "required")
		} else if seen[ct.Name] {
			fe("name", ct.Name, "unique (the type appears twice)")
		}
		seen[ct.Name] = true
		capacity, err := parseResourceMap(ct.Capacity, "capacity", fe)
		alloc, err2 := parseResourceMap(ct.Allocatable, "allocatable", fe)
		if err || err2 {
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
		for j, o := range ct.Offerings {
			field := fmt.Sprintf("offerings[%d]", j)
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
			} else if !(*o.Price > 0) || math.IsInf(*o.Price, 0) {
				fe(field+".price", fmt.Sprint(*o.Price), "a positive price in USD per hour")
				ok = false
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
