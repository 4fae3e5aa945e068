package nodeplan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// EncodeCatalog writes instance types in the shape DecodeCatalog reads: capacity and
// allocatable as quantity strings (the overhead split into kube-reserved, system-reserved and
// eviction threshold is not kept, only its sum), offerings with their prices. Types come out
// sorted by name, one per line, so catalogs diff well. A type with a price that is not a
// positive finite number is an error: a written catalog must load again.
func EncodeCatalog(types []InstanceType) ([]byte, error) {
	var errs []error
	out := make([]catalogType, 0, len(types))
	for _, it := range types {
		ct := catalogType{
			Name:        it.Name,
			Labels:      it.Labels,
			Capacity:    quantityStrings(it.Capacity),
			Allocatable: quantityStrings(it.Allocatable()),
			Offerings:   make([]catalogOffering, 0, len(it.Offerings)),
		}
		for _, o := range it.Offerings {
			if !(o.Price >= MinCatalogPrice && o.Price <= MaxCatalogPrice) {
				errs = append(errs, fmt.Errorf("nodeplan: catalog: %s offering %s/%s: price %v is not a price in USD per hour from %g to %g", it.Name, o.Zone, o.CapacityType, o.Price, MinCatalogPrice, MaxCatalogPrice))
				continue
			}
			price, avail := o.Price, o.Available
			ct.Offerings = append(ct.Offerings, catalogOffering{Zone: o.Zone, CapacityType: string(o.CapacityType), Price: &price, Available: &avail})
		}
		out = append(out, ct)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortStableFunc(out, func(a, b catalogType) int { return strings.Compare(a.Name, b.Name) })
	var buf bytes.Buffer
	buf.WriteString("{\"instanceTypes\": [\n")
	for i, ct := range out {
		b, err := json.Marshal(ct)
		if err != nil {
			return nil, fmt.Errorf("nodeplan: catalog: %s: %w", ct.Name, err)
		}
		buf.Write(b)
		if i < len(out)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString("]}\n")
	return buf.Bytes(), nil
}

func quantityStrings(l corev1.ResourceList) map[string]string {
	m := make(map[string]string, len(l))
	for k, q := range l {
		m[string(k)] = q.String()
	}
	return m
}
