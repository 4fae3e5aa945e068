package pricing

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// staticTable is one region's embedded prices, as zz_generated_prices.go writes it: a sorted
// slice rather than a map literal, so it costs no work at program start.
type staticTable struct {
	region, currency, generated, source string
	prices                              []staticPrice
}

type staticPrice struct {
	instanceType string
	price        float64
}

// ErrUnknownRegion is wrapped by the error Static returns for a region with no embedded table.
var ErrUnknownRegion = errors.New("pricing: no static prices for region")

// Table is a fixed set of on-demand prices for one region: an embedded static table (see
// Static). It knows no spot prices. It is immutable, so safe for concurrent use. The zero
// Table prices nothing.
type Table struct {
	region   string
	currency string
	source   string
	updated  time.Time
	onDemand map[string]float64
}

// StaticRegions returns the regions that have an embedded price table, sorted.
func StaticRegions() []string {
	out := make([]string, 0, len(staticTables))
	for _, t := range staticTables {
		out = append(out, t.region)
	}
	return out
}

// Static returns the embedded on-demand price table of region: the prices Karpenter's AWS
// provider ships for it, per instance-hour, Linux, shared tenancy. They serve isolated VPCs,
// tests and simulations, and are Live's prices until its first refresh. Note the currency:
// China regions are priced in CNY. The error wraps ErrUnknownRegion when there is no table.
func Static(region string) (*Table, error) {
	for _, st := range staticTables {
		if st.region != region {
			continue
		}
		t := &Table{region: st.region, currency: st.currency, source: st.source,
			onDemand: make(map[string]float64, len(st.prices))}
		t.updated, _ = time.Parse(time.RFC3339, st.generated)
		for _, p := range st.prices {
			t.onDemand[p.instanceType] = p.price
		}
		return t, nil
	}
	return nil, fmt.Errorf("%w %q (tables exist for %s)", ErrUnknownRegion, region, strings.Join(StaticRegions(), ", "))
}

// OnDemand returns the on-demand price of the type; ok is false when the table has none.
func (t *Table) OnDemand(instanceType string) (price float64, ok bool) {
	price, ok = t.onDemand[instanceType]
	return price, ok
}

// Spot always reports no price: a static table has no spot prices.
func (t *Table) Spot(instanceType, zone string) (price float64, ok bool) { return 0, false }

// Updated returns when the table's source was generated, and a zero spot time.
func (t *Table) Updated() (onDemand, spot time.Time) { return t.updated, time.Time{} }

// Region returns the region the table prices.
func (t *Table) Region() string { return t.region }

// Currency returns the ISO 4217 code of the table's prices: USD, or CNY for China regions.
func (t *Table) Currency() string { return t.currency }

// Source says where the prices come from.
func (t *Table) Source() string { return t.source }

// InstanceTypes returns the priced instance types, sorted.
func (t *Table) InstanceTypes() []string { return slices.Sorted(maps.Keys(t.onDemand)) }

// Prices returns a copy of the table's prices by instance type.
func (t *Table) Prices() map[string]float64 { return maps.Clone(t.onDemand) }
