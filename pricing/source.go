package pricing

import (
	"time"

	"github.com/nodeplan/nodeplan"
)

// Source answers what an instance costs. Prices are per instance-hour in the source's currency
// (USD, except China regions: CNY). A price is never zero: an instance type a source cannot
// price is reported with ok false — unpriced, never free.
//
// Implementations are safe for concurrent use, and their lookups do not allocate.
type Source interface {
	// OnDemand returns the on-demand price of the instance type in the source's region.
	OnDemand(instanceType string) (price float64, ok bool)
	// Spot returns the current spot price of the instance type in the zone.
	Spot(instanceType, zone string) (price float64, ok bool)
	// Updated returns when the on-demand and the spot prices were last refreshed (for a static
	// table: when it was generated); zero when there are none.
	Updated() (onDemand, spot time.Time)
}

// OfferingPricer is an optional interface of a Source that prices offerings of any capacity
// type itself, as an Effective cost model does. Price uses it when present.
type OfferingPricer interface {
	// Price returns the price of the instance type bought as ct in the zone.
	Price(instanceType, zone string, ct nodeplan.CapacityType) (price float64, ok bool)
}

// Price returns what src says the offering (instanceType, zone, ct) costs: its spot price for
// spot, its on-demand price for on-demand and for reserved capacity (a capacity reservation is
// billed at the on-demand rate), unless src is an OfferingPricer, which decides itself. ok is
// false for an unknown capacity type or when src has no price.
func Price(src Source, instanceType, zone string, ct nodeplan.CapacityType) (price float64, ok bool) {
	if p, isPricer := src.(OfferingPricer); isPricer {
		return p.Price(instanceType, zone, ct)
	}
	return listPrice(src, instanceType, zone, ct)
}

func listPrice(src Source, instanceType, zone string, ct nodeplan.CapacityType) (float64, bool) {
	switch ct {
	case nodeplan.CapacityTypeSpot:
		return src.Spot(instanceType, zone)
	case nodeplan.CapacityTypeOnDemand, nodeplan.CapacityTypeReserved:
		return src.OnDemand(instanceType)
	}
	return 0, false
}

// Apply returns a copy of types whose offerings carry the prices src gives them (see Price). An
// offering src cannot price becomes unavailable, with price 0: unpriced means unavailable, never
// free. Apply never makes an unavailable offering available. types is not modified.
func Apply(src Source, types []nodeplan.InstanceType) []nodeplan.InstanceType {
	out := make([]nodeplan.InstanceType, len(types))
	n := 0
	for _, it := range types {
		n += len(it.Offerings)
	}
	offerings := make([]nodeplan.Offering, 0, n) // one allocation for every offering
	for i, it := range types {
		start := len(offerings)
		for _, o := range it.Offerings {
			p, ok := Price(src, it.Name, o.Zone, o.CapacityType)
			if ok {
				o.Price = p
			} else {
				o.Price, o.Available = 0, false
			}
			offerings = append(offerings, o)
		}
		it.Offerings = offerings[start:len(offerings):len(offerings)]
		out[i] = it
	}
	return out
}

// Currency returns the ISO 4217 currency code of src's prices, when src says (Table, Live and
// Effective do), or "".
func Currency(src Source) string {
	if c, ok := src.(interface{ Currency() string }); ok {
		return c.Currency()
	}
	return ""
}
