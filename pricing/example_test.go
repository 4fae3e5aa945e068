package pricing_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
	"github.com/nodeplan/nodeplan/pricing"
)

// Prices from the embedded table, with a cost model on top, applied to a catalog's offerings.
func Example() {
	static, err := pricing.Static("us-east-1")
	if err != nil {
		log.Fatal(err)
	}
	model, err := pricing.ParseCostModel([]byte(`
discounts:
- family: m5            # a Savings Plan rate
  capacityType: on-demand
  percent: 28
prices:
- instanceType: c5.large # Reserved Instances
  price: 0.055
`))
	if err != nil {
		log.Fatal(err)
	}
	prices, err := model.Wrap(static)
	if err != nil {
		log.Fatal(err)
	}
	types := pricing.Apply(prices, []nodeplan.InstanceType{
		{Name: "m5.large", Offerings: []nodeplan.Offering{{Zone: "us-east-1a", CapacityType: "on-demand", Available: true}}},
		{Name: "c5.large", Offerings: []nodeplan.Offering{{Zone: "us-east-1a", CapacityType: "on-demand", Available: true}}},
		{Name: "m5.large", Offerings: []nodeplan.Offering{{Zone: "us-east-1a", CapacityType: "spot", Available: true}}},
	})
	for _, it := range types {
		o := it.Offerings[0]
		fmt.Printf("%s %s: %.4f %s/h, available %v\n", it.Name, o.CapacityType, o.Price, pricing.Currency(prices), o.Available)
	}
	// Output:
	// m5.large on-demand: 0.0691 USD/h, available true
	// c5.large on-demand: 0.0550 USD/h, available true
	// m5.large spot: 0.0000 USD/h, available false
}

// Live prices, here from a local endpoint speaking the AWS protocols.
func ExampleLive() {
	srv := ec2test.NewServer()
	defer srv.Close()
	srv.Throttle("DescribeSpotPriceHistory", 1) // the SDK retries

	live := pricing.NewFromConfig(srv.Config("us-east-1"))
	live.Now = func() time.Time { return time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC) }
	ctx := context.Background()
	if _, err := live.RefreshOnDemand(ctx); err != nil {
		log.Fatal(err)
	}
	rep, err := live.RefreshSpot(ctx)
	if err != nil {
		log.Fatal(err)
	}
	od, _ := live.OnDemand("m5.large")
	spot, _ := live.Spot("m5.large", "us-east-1a")
	fmt.Printf("%d spot prices; m5.large: on-demand %.4f, spot in us-east-1a %.4f\n", rep.Prices, od, spot)

	srv.Unavailable("DescribeSpotPriceHistory", -1) // past the retries: the last good prices stay
	live.Now = func() time.Time { return time.Date(2026, 8, 1, 2, 0, 0, 0, time.UTC) }
	_, err = live.RefreshSpot(ctx)
	var stale *pricing.StaleError
	if errors.As(err, &stale) {
		spot, _ := live.Spot("m5.large", "us-east-1a")
		fmt.Printf("refresh failed; spot prices kept, %v old; m5.large in us-east-1a %.4f\n", stale.Age, spot)
	}
	// Output:
	// 4101 spot prices; m5.large: on-demand 0.0960, spot in us-east-1a 0.0287
	// refresh failed; spot prices kept, 2h0m0s old; m5.large in us-east-1a 0.0287
}
