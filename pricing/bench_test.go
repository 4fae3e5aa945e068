package pricing_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
	"github.com/nodeplan/nodeplan/pricing"
)

var sixZones = []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f"}

// BenchmarkRefresh measures a full refresh of us-east-1: 1,367 on-demand products (and 4,101
// look-alikes the filters leave out) and 1,367 × 6 spot prices. "sdk+http" is the whole path
// through aws-sdk-go-v2 and a local endpoint; "parse" replays recorded SDK outputs, so it
// measures this package alone.
func BenchmarkRefresh(b *testing.B) {
	srv := ec2test.NewServer(ec2test.WithZones("us-east-1", sixZones...))
	defer srv.Close()
	ctx := context.Background()
	live := newLive(b, srv, "us-east-1")
	rec := &recorder{pricing: live.Pricing, ec2: live.EC2}

	b.Run("on-demand/sdk+http", func(b *testing.B) {
		b.ReportAllocs()
		var n int
		for b.Loop() {
			rep, err := live.RefreshOnDemand(ctx)
			if err != nil {
				b.Fatal(err)
			}
			n = rep.Prices
		}
		b.ReportMetric(float64(n), "prices/op")
	})
	b.Run("spot/sdk+http", func(b *testing.B) {
		b.ReportAllocs()
		var n int
		for b.Loop() {
			rep, err := live.RefreshSpot(ctx)
			if err != nil {
				b.Fatal(err)
			}
			n = rep.Prices
		}
		b.ReportMetric(float64(n), "prices/op")
	})

	// Record one refresh's SDK outputs, then replay them.
	recLive := &pricing.Live{Region: "us-east-1", Pricing: rec, EC2: rec, Now: live.Now}
	if _, err := recLive.RefreshOnDemand(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := recLive.RefreshSpot(ctx); err != nil {
		b.Fatal(err)
	}
	rec.replay = true
	b.Run("on-demand/parse", func(b *testing.B) {
		b.ReportAllocs()
		var n int
		for b.Loop() {
			rec.reset()
			rep, err := recLive.RefreshOnDemand(ctx)
			if err != nil {
				b.Fatal(err)
			}
			n = rep.Prices
		}
		b.ReportMetric(float64(n), "prices/op")
	})
	b.Run("spot/parse", func(b *testing.B) {
		b.ReportAllocs()
		var n int
		for b.Loop() {
			rec.reset()
			rep, err := recLive.RefreshSpot(ctx)
			if err != nil {
				b.Fatal(err)
			}
			n = rep.Prices
		}
		b.ReportMetric(float64(n), "prices/op")
	})
}

// recorder records the pages of SDK calls, then replays them in order.
type recorder struct {
	pricing     awspricing.GetProductsAPIClient
	ec2         ec2.DescribeSpotPriceHistoryAPIClient
	replay      bool
	products    []*awspricing.GetProductsOutput
	spot        []*ec2.DescribeSpotPriceHistoryOutput
	nextProduct int
	nextSpot    int
}

func (r *recorder) reset() { r.nextProduct, r.nextSpot = 0, 0 }

func (r *recorder) GetProducts(ctx context.Context, in *awspricing.GetProductsInput, o ...func(*awspricing.Options)) (*awspricing.GetProductsOutput, error) {
	if r.replay {
		r.nextProduct++
		return r.products[r.nextProduct-1], nil
	}
	out, err := r.pricing.GetProducts(ctx, in, o...)
	if err == nil {
		r.products = append(r.products, out)
	}
	return out, err
}

func (r *recorder) DescribeSpotPriceHistory(ctx context.Context, in *ec2.DescribeSpotPriceHistoryInput, o ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error) {
	if r.replay {
		r.nextSpot++
		return r.spot[r.nextSpot-1], nil
	}
	out, err := r.ec2.DescribeSpotPriceHistory(ctx, in, o...)
	if err == nil {
		r.spot = append(r.spot, out)
	}
	return out, err
}

// BenchmarkLookup measures one price lookup: it must take nanoseconds and allocate nothing.
func BenchmarkLookup(b *testing.B) {
	srv := ec2test.NewServer()
	defer srv.Close()
	live := newLive(b, srv, "us-east-1")
	if _, err := live.RefreshSpot(context.Background()); err != nil {
		b.Fatal(err)
	}
	model := &pricing.CostModel{
		Discounts: []pricing.Discount{{Percent: 5}, {Family: "m5", CapacityType: "on-demand", Percent: 28}, {InstanceType: "c5.large", Percent: 30}},
		Prices:    []pricing.FixedPrice{{InstanceType: "r6i.4xlarge", Price: 0.6}},
	}
	eff, err := model.Wrap(live)
	if err != nil {
		b.Fatal(err)
	}
	var sink float64
	b.Run("Live.OnDemand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, _ := live.OnDemand("m5.large")
			sink += p
		}
	})
	b.Run("Live.Spot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, _ := live.Spot("m5.large", "us-east-1b")
			sink += p
		}
	})
	b.Run("Effective.Price", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, _ := eff.Price("m5.large", "us-east-1b", nodeplan.CapacityTypeOnDemand)
			sink += p
		}
	})
	b.Run("pricing.Price", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, _ := pricing.Price(eff, "c5.large", "us-east-1a", nodeplan.CapacityTypeSpot)
			sink += p
		}
	})
	_ = sink
}

// BenchmarkApply prices a 1,367-type catalog with 6 offerings a type.
func BenchmarkApply(b *testing.B) {
	static, _ := pricing.Static("us-east-1")
	var types []nodeplan.InstanceType
	for _, name := range static.InstanceTypes() {
		it := nodeplan.InstanceType{Name: name}
		for _, z := range sixZones[:3] {
			it.Offerings = append(it.Offerings,
				nodeplan.Offering{Zone: z, CapacityType: nodeplan.CapacityTypeOnDemand, Available: true},
				nodeplan.Offering{Zone: z, CapacityType: nodeplan.CapacityTypeSpot, Available: true})
		}
		types = append(types, it)
	}
	eff, _ := (&pricing.CostModel{Discounts: []pricing.Discount{{Percent: 5}}}).Wrap(static)
	b.ReportAllocs()
	for b.Loop() {
		pricing.Apply(eff, types)
	}
	b.ReportMetric(float64(len(types)*6), "offerings/op")
}
