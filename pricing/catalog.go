package pricing

import (
	"time"

	"github.com/nodeplan/nodeplan"
)

// Catalog is a Source reading the prices of an already priced catalog — a --catalog file, or
// one built earlier — so that a CostModel can be applied to it like to any other source. Each
// type's on-demand price is that of its first priced on-demand offering (EC2 charges the same
// in every zone of a region); its spot price is per zone. Offerings priced zero or unavailable
// are ignored: unpriced, never free.
type Catalog struct {
	onDemand map[string]float64
	spot     map[spotKey]float64
}

// FromCatalog indexes the prices of types.
func FromCatalog(types []nodeplan.InstanceType) *Catalog {
	c := &Catalog{onDemand: map[string]float64{}, spot: map[spotKey]float64{}}
	for _, it := range types {
		for _, o := range it.Offerings {
			if !(o.Price > 0) {
				continue
			}
			switch o.CapacityType {
			case nodeplan.CapacityTypeOnDemand:
				if _, ok := c.onDemand[it.Name]; !ok {
					c.onDemand[it.Name] = o.Price
				}
			case nodeplan.CapacityTypeSpot:
				c.spot[spotKey{it.Name, o.Zone}] = o.Price
			}
		}
	}
	return c
}

// OnDemand implements Source.
func (c *Catalog) OnDemand(instanceType string) (float64, bool) {
	p, ok := c.onDemand[instanceType]
	return p, ok
}

// Spot implements Source.
func (c *Catalog) Spot(instanceType, zone string) (float64, bool) {
	p, ok := c.spot[spotKey{instanceType, zone}]
	return p, ok
}

// Updated implements Source: a catalog does not say when it was priced.
func (c *Catalog) Updated() (onDemand, spot time.Time) { return time.Time{}, time.Time{} }
