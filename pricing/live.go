package pricing

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
)

// Live is a Source refreshed from AWS: on-demand prices from the Price List Query API
// (GetProducts), spot prices from EC2 DescribeSpotPriceHistory. It starts no goroutines and does
// I/O only in RefreshOnDemand and RefreshSpot, which the caller schedules. Until the first
// successful on-demand refresh it serves the embedded static table of its region; until the
// first successful spot refresh it knows no spot prices. A failed refresh keeps the prices held
// and says how old they are (*StaleError).
//
// Lookups are safe for concurrent use with each other and with refreshes, take no lock and do
// not allocate: a refresh builds new maps and swaps them in whole. Set the fields before first
// use and do not change them after.
type Live struct {
	// Region is the region priced, e.g. us-east-1.
	Region string
	// Pricing is the Price List Query API client; without one, RefreshOnDemand fails.
	Pricing awspricing.GetProductsAPIClient
	// EC2 is the EC2 client of Region; without one, RefreshSpot fails.
	EC2 ec2.DescribeSpotPriceHistoryAPIClient
	// Static holds the prices served until the first on-demand refresh; nil means the embedded
	// table of Region, if there is one.
	Static *Table
	// Logger receives a line per refresh; nil discards them.
	Logger *slog.Logger
	// Now is the clock refreshes are stamped with; nil means time.Now.
	Now func() time.Time

	snap atomic.Pointer[snapshot]
	mu   sync.Mutex // serialises the swaps of snap, not the I/O before them
}

// snapshot is an immutable set of prices; Live swaps whole snapshots.
type snapshot struct {
	onDemand   map[string]float64
	spot       map[spotKey]float64
	onDemandAt time.Time
	spotAt     time.Time
}

type spotKey struct{ instanceType, zone string }

// Options configures NewFromConfig.
type Options struct {
	// Region is the region priced; "" means the aws.Config's region.
	Region string
	// PricingRegion is the region of the Pricing API endpoint to call; "" means the one
	// PricingEndpointRegion picks for Region. Set it when policies (SCPs) allow only one.
	PricingRegion string
}

// NewFromConfig returns a Live pricing cfg's region (or Options.Region), with a Pricing client
// for the endpoint region the Pricing API requires and an EC2 client for the region, both built
// from cfg (so cfg.BaseEndpoint, credentials and retryer apply to both).
func NewFromConfig(cfg aws.Config, optFns ...func(*Options)) *Live {
	o := Options{Region: cfg.Region}
	for _, fn := range optFns {
		fn(&o)
	}
	if o.PricingRegion == "" {
		o.PricingRegion = PricingEndpointRegion(o.Region)
	}
	return &Live{
		Region:  o.Region,
		Pricing: awspricing.NewFromConfig(cfg, func(po *awspricing.Options) { po.Region = o.PricingRegion }),
		EC2:     ec2.NewFromConfig(cfg, func(eo *ec2.Options) { eo.Region = o.Region }),
	}
}

// PricingEndpointRegion returns the region whose Price List Query API endpoint serves prices
// for region: the API has endpoints only in us-east-1, eu-central-1, ap-south-1 and (for the
// China partition) cn-northwest-1. GovCloud and isolated partitions have none; there, serve the
// static tables and refresh only spot prices.
func PricingEndpointRegion(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "cn-northwest-1"
	case strings.HasPrefix(region, "eu-"):
		return "eu-central-1"
	case strings.HasPrefix(region, "ap-"):
		return "ap-south-1"
	}
	return "us-east-1"
}

// OnDemand returns the on-demand price of the type: the last refreshed one, or the static one.
func (l *Live) OnDemand(instanceType string) (price float64, ok bool) {
	price, ok = l.current().onDemand[instanceType]
	return price, ok
}

// Spot returns the latest spot price of the type in the zone from the last successful spot
// refresh; ok is false before the first one.
func (l *Live) Spot(instanceType, zone string) (price float64, ok bool) {
	price, ok = l.current().spot[spotKey{instanceType, zone}]
	return price, ok
}

// Updated returns when the on-demand prices (the static table's generation time until the
// first refresh) and the spot prices were last refreshed.
func (l *Live) Updated() (onDemand, spot time.Time) {
	s := l.current()
	return s.onDemandAt, s.spotAt
}

// Currency returns the currency of the region's prices: CNY for China regions, else USD.
func (l *Live) Currency() string { return regionCurrency(l.Region) }

func regionCurrency(region string) string {
	if strings.HasPrefix(region, "cn-") {
		return "CNY"
	}
	return "USD"
}

func (l *Live) current() *snapshot {
	if s := l.snap.Load(); s != nil {
		return s
	}
	s := &snapshot{}
	t := l.Static
	if t == nil {
		t, _ = Static(l.Region)
	}
	if t != nil && t.currency == regionCurrency(l.Region) {
		s.onDemand, s.onDemandAt = t.onDemand, t.updated
	}
	l.snap.CompareAndSwap(nil, s)
	return l.snap.Load()
}

func (l *Live) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Live) logger() *slog.Logger {
	if l.Logger != nil {
		return l.Logger
	}
	return discard
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// swap applies change to a copy of the current snapshot and publishes the copy.
func (l *Live) swap(change func(*snapshot)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	next := *l.current()
	change(&next)
	l.snap.Store(&next)
}

// RefreshOnDemand fetches the region's on-demand prices from the Pricing API: Linux, no
// pre-installed software, capacity in use, on-demand, shared tenancy — and bare-metal types,
// which the price list files under dedicated tenancy — every page of them. The new prices are
// laid over the ones held, so a type the answer leaves out keeps its last known price.
//
// Documents that cannot be used (malformed, no price in the region's currency, a price that is
// zero, negative or not a number, no instance type) are skipped and listed in the Report. On
// failure — an API error after the SDK's retries, or no usable price at all — the prices held
// are kept and the error is a *StaleError.
func (l *Live) RefreshOnDemand(ctx context.Context) (Report, error) {
	now := l.now()
	rep := Report{Kind: KindOnDemand, Updated: now}
	prices, err := l.fetchOnDemand(ctx, &rep)
	if err == nil && len(prices) == 0 {
		err = ErrNoPrices
	}
	if err != nil {
		return rep, l.stale(KindOnDemand, now, err, rep)
	}
	l.swap(func(s *snapshot) {
		merged := make(map[string]float64, max(len(s.onDemand), len(prices)))
		maps.Copy(merged, s.onDemand)
		maps.Copy(merged, prices)
		s.onDemand, s.onDemandAt = merged, now
	})
	rep.Prices = len(prices)
	l.logRefreshed(rep)
	return rep, nil
}

// RefreshSpot fetches the region's spot prices from EC2 DescribeSpotPriceHistory (Linux/UNIX,
// in and out of a VPC), every page, and keeps the latest price of each type in each zone. The new
// prices replace the ones held: a type and zone the answer leaves out has no spot price.
//
// Entries that cannot be used (no type or zone, a price that is zero, negative or not a number)
// are skipped and listed in the Report. On failure the prices held are kept and the error is a
// *StaleError.
func (l *Live) RefreshSpot(ctx context.Context) (Report, error) {
	now := l.now()
	rep := Report{Kind: KindSpot, Updated: now}
	prices, err := l.fetchSpot(ctx, now, &rep)
	if err == nil && len(prices) == 0 {
		err = ErrNoPrices
	}
	if err != nil {
		return rep, l.stale(KindSpot, now, err, rep)
	}
	l.swap(func(s *snapshot) { s.spot, s.spotAt = prices, now })
	rep.Prices = len(prices)
	l.logRefreshed(rep)
	return rep, nil
}

var (
	errNoPricingClient = errors.New("no Pricing API client")
	errNoEC2Client     = errors.New("no EC2 client")
	errNoRegion        = errors.New("no region")
)

func (l *Live) stale(kind Kind, now time.Time, err error, rep Report) error {
	onDemandAt, spotAt := l.Updated()
	at := onDemandAt
	if kind == KindSpot {
		at = spotAt
	}
	e := &StaleError{Kind: kind, Updated: at, Err: err}
	if !at.IsZero() {
		e.Age = now.Sub(at)
	}
	l.logger().Warn("pricing: refresh failed, keeping prices held", "kind", kind, "region", l.Region,
		"updated", at, "age", e.Age, "skipped", len(rep.Skipped), "err", err)
	return e
}

func (l *Live) logRefreshed(rep Report) {
	log := l.logger()
	log.Info("pricing: refreshed", "kind", rep.Kind, "region", l.Region, "prices", rep.Prices, "skipped", len(rep.Skipped))
	for i, s := range rep.Skipped {
		if i == 5 {
			log.Warn("pricing: more entries skipped", "kind", rep.Kind, "count", len(rep.Skipped)-i)
			break
		}
		log.Warn("pricing: entry skipped", "kind", rep.Kind, "entry", s.String())
	}
}
