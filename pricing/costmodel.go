package pricing

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/nodeplan/nodeplan"
)

// CostModel is what the user really pays, as opposed to list prices: discounts (an enterprise
// discount, a Savings Plan's rate for a family, spot at a negotiated rate) and explicit prices
// (a Reserved Instance's effective hourly rate, a negotiated price for a type). Wrap a Source
// with it and the solver, which sees only the wrapped source, optimises what the user pays.
// Karpenter users have asked for this for years (aws/karpenter-provider-aws #2259, #3860,
// #4136); Karpenter still plans with list prices.
//
// The zero value changes nothing. A CostModel decodes from YAML or JSON (ParseCostModel):
//
//	discounts:
//	- percent: 8                 # an enterprise discount on everything
//	- family: m7i                # a Compute Savings Plan rate for one family, on-demand only
//	  capacityType: on-demand
//	  percent: 28
//	prices:
//	- instanceType: r6i.4xlarge  # Reserved Instances: their effective hourly rate
//	  capacityType: on-demand
//	  price: 0.6350
type CostModel struct {
	// Discounts take a share off list prices. For each offering, the most specific discount
	// that matches applies, alone: one naming the instance type beats one naming its family,
	// which beats one naming neither; at equal rank, one naming the capacity type beats one that
	// does not; then the first listed wins. Discounts do not compound.
	Discounts []Discount `json:"discounts,omitempty"`
	// Prices are explicit prices, which replace the list price and every discount. They price
	// an offering even when the wrapped source cannot. The most specific match wins (a zone and
	// a capacity type beat a capacity type, which beats neither), then the first listed.
	Prices []FixedPrice `json:"prices,omitempty"`
}

// Discount takes a share off the list price of the offerings it matches. Empty fields match
// everything.
type Discount struct {
	// InstanceType limits the discount to one type, e.g. m5.large.
	InstanceType string `json:"instanceType,omitempty"`
	// Family limits the discount to one family (the karpenter.k8s.aws/instance-family label,
	// the part of the type's name before the dot), e.g. m5.
	Family string `json:"family,omitempty"`
	// CapacityType limits the discount to one capacity type.
	CapacityType nodeplan.CapacityType `json:"capacityType,omitempty"`
	// Percent is the share taken off, in [0, 100): 28 means pay 72% of the list price.
	Percent float64 `json:"percent"`
}

// FixedPrice is the price the user pays for an instance type, in the source's currency per
// hour.
type FixedPrice struct {
	// InstanceType is the type priced, e.g. r6i.4xlarge. Required.
	InstanceType string `json:"instanceType"`
	// CapacityType limits the price to one capacity type; empty means all.
	CapacityType nodeplan.CapacityType `json:"capacityType,omitempty"`
	// Zone limits the price to one zone; empty means all.
	Zone string `json:"zone,omitempty"`
	// Price is per hour, and positive.
	Price float64 `json:"price"`
}

// ParseCostModel decodes a cost model from YAML or JSON, rejecting unknown fields, and
// validates it.
func ParseCostModel(data []byte) (*CostModel, error) {
	var m CostModel
	if err := sigsyaml.UnmarshalStrict(data, &m); err != nil {
		return nil, fmt.Errorf("pricing: decoding cost model: %w", err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate reports every invalid field of m at once, as *nodeplan.FieldError values joined
// with errors.Join.
func (m *CostModel) Validate() error {
	var errs []error
	bad := func(field string, value any, expected string) {
		errs = append(errs, &nodeplan.FieldError{Object: "cost model", Field: field, Value: fmt.Sprint(value), Expected: expected})
	}
	for i, d := range m.Discounts {
		f := fmt.Sprintf("discounts[%d]", i)
		if d.InstanceType != "" && !validInstanceType(d.InstanceType) {
			bad(f+".instanceType", d.InstanceType, "an instance type such as m5.large")
		}
		if d.Family != "" && strings.Contains(d.Family, ".") {
			bad(f+".family", d.Family, "a family such as m5 (no size)")
		}
		if d.InstanceType != "" && d.Family != "" {
			bad(f+".family", d.Family, "empty when instanceType is set")
		}
		if d.CapacityType != "" && !d.CapacityType.Valid() {
			bad(f+".capacityType", d.CapacityType, "on-demand, spot or reserved")
		}
		if !(d.Percent >= 0 && d.Percent < 100) {
			bad(f+".percent", d.Percent, "at least 0 and below 100 (a price is never free)")
		}
	}
	for i, p := range m.Prices {
		f := fmt.Sprintf("prices[%d]", i)
		if !validInstanceType(p.InstanceType) {
			bad(f+".instanceType", p.InstanceType, "an instance type such as m5.large")
		}
		if p.CapacityType != "" && !p.CapacityType.Valid() {
			bad(f+".capacityType", p.CapacityType, "on-demand, spot or reserved")
		}
		if !(p.Price > 0) || math.IsInf(p.Price, 0) {
			bad(f+".price", p.Price, "a positive price per hour")
		}
	}
	return errors.Join(errs...)
}

func validInstanceType(t string) bool {
	i := strings.IndexByte(t, '.')
	return i > 0 && i < len(t)-1
}

// Wrap returns the Source whose prices are src's list prices as m changes them. It copies m, so
// later changes to m do not affect it; the error is Validate's.
func (m *CostModel) Wrap(src Source) (*Effective, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	e := &Effective{src: src, fixed: map[string][]FixedPrice{}, byType: map[string][]Discount{}, byFamily: map[string][]Discount{}}
	for _, p := range m.Prices {
		e.fixed[p.InstanceType] = append(e.fixed[p.InstanceType], p)
	}
	for _, d := range m.Discounts {
		switch {
		case d.InstanceType != "":
			e.byType[d.InstanceType] = append(e.byType[d.InstanceType], d)
		case d.Family != "":
			e.byFamily[d.Family] = append(e.byFamily[d.Family], d)
		default:
			e.general = append(e.general, d)
		}
	}
	return e, nil
}

// Effective is a Source of the prices a user pays: a CostModel over a Source of list prices.
// It is an OfferingPricer, so Price and Apply use its rules for every capacity type. It is
// immutable (the wrapped source may change underneath), safe for concurrent use, and its
// lookups do not allocate.
type Effective struct {
	src      Source
	fixed    map[string][]FixedPrice
	byType   map[string][]Discount
	byFamily map[string][]Discount
	general  []Discount
}

// OnDemand returns the effective on-demand price of the type (zone-specific prices aside).
func (e *Effective) OnDemand(instanceType string) (float64, bool) {
	return e.Price(instanceType, "", nodeplan.CapacityTypeOnDemand)
}

// Spot returns the effective spot price of the type in the zone.
func (e *Effective) Spot(instanceType, zone string) (float64, bool) {
	return e.Price(instanceType, zone, nodeplan.CapacityTypeSpot)
}

// Updated returns the wrapped source's refresh times.
func (e *Effective) Updated() (onDemand, spot time.Time) { return e.src.Updated() }

// Currency returns the wrapped source's currency.
func (e *Effective) Currency() string { return Currency(e.src) }

// Price returns what the user pays for the offering: an explicit price if one matches, else the
// wrapped source's price (see the package function Price) less the best matching discount. ok
// is false when neither prices it.
func (e *Effective) Price(instanceType, zone string, ct nodeplan.CapacityType) (float64, bool) {
	if len(e.fixed) > 0 {
		if p, ok := e.fixedPrice(instanceType, zone, ct); ok {
			return p, true
		}
	}
	list, ok := Price(e.src, instanceType, zone, ct)
	if !ok {
		return 0, false
	}
	best, rank := 0.0, -1
	consider := func(ds []Discount, base int) {
		for _, d := range ds {
			r := base
			if d.CapacityType != "" {
				if d.CapacityType != ct {
					continue
				}
				r++
			}
			if r > rank {
				best, rank = d.Percent, r
			}
		}
	}
	if len(e.byType) > 0 {
		consider(e.byType[instanceType], 4)
	}
	if i := strings.IndexByte(instanceType, '.'); i > 0 && len(e.byFamily) > 0 {
		consider(e.byFamily[instanceType[:i]], 2)
	}
	consider(e.general, 0)
	if rank < 0 {
		return list, true
	}
	return list * (1 - best/100), true
}

func (e *Effective) fixedPrice(instanceType, zone string, ct nodeplan.CapacityType) (float64, bool) {
	best, rank := 0.0, -1
	for _, p := range e.fixed[instanceType] {
		r := 0
		if p.CapacityType != "" {
			if p.CapacityType != ct {
				continue
			}
			r += 2
		}
		if p.Zone != "" {
			if p.Zone != zone {
				continue
			}
			r++
		}
		if r > rank {
			best, rank = p.Price, r
		}
	}
	return best, rank >= 0
}
