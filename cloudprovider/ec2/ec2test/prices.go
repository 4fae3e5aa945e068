package ec2test

import "github.com/nodeplan/nodeplan/pricing"

// Prices are the prices a Server answers with, as a price source for the code under test (the
// EC2 provider's Options.Prices) without the Pricing API round trips: on-demand from package
// pricing's static table of the region, spot from [SeededSpotPrice] of it — what the server's
// GetProducts and DescribeSpotPriceHistory say for the same types and zones.
type Prices struct{ table *pricing.Table }

// StaticPrices returns the [Prices] of region; an error when package pricing has no table
// for it.
func StaticPrices(region string) (Prices, error) {
	t, err := pricing.Static(region)
	if err != nil {
		return Prices{}, err
	}
	return Prices{table: t}, nil
}

// OnDemand returns the type's on-demand price.
func (p Prices) OnDemand(instanceType string) (float64, bool) { return p.table.OnDemand(instanceType) }

// Spot returns the type's spot price in the zone: the seeded model of its on-demand price.
func (p Prices) Spot(instanceType, zone string) (float64, bool) {
	od, ok := p.table.OnDemand(instanceType)
	if !ok {
		return 0, false
	}
	return SeededSpotPrice(instanceType, zone, od), true
}
