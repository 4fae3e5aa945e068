package pricing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"

	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
	"github.com/nodeplan/nodeplan/pricing"
)

// epoch is ec2test's default clock.
var epoch = time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)

func newLive(t testing.TB, srv *ec2test.Server, region string, optFns ...func(*pricing.Options)) *pricing.Live {
	t.Helper()
	l := pricing.NewFromConfig(srv.Config(region), optFns...)
	l.Now = func() time.Time { return epoch }
	return l
}

// newSmallServer returns a server whose us-east-1 price list holds a few types, for tests that
// need no more (the race detector makes full refreshes slow).
func newSmallServer() *ec2test.Server {
	srv := ec2test.NewServer()
	srv.SetOnDemandPrices("us-east-1", "USD", map[string]float64{
		"m5.large": 0.096, "m5.xlarge": 0.192, "c5.large": 0.085, "r5.large": 0.126, "m5.metal": 4.608})
	return srv
}

func TestRefreshOnDemandMatchesPriceList(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	l := newLive(t, srv, "us-east-1")

	rep, err := l.RefreshOnDemand(context.Background())
	if err != nil {
		t.Fatalf("RefreshOnDemand() error = %v", err)
	}
	static, _ := pricing.Static("us-east-1")
	if rep.Prices != len(static.InstanceTypes()) || len(rep.Skipped) != 0 {
		t.Errorf("RefreshOnDemand() report = %d prices, %d skipped, want %d, 0", rep.Prices, len(rep.Skipped), len(static.InstanceTypes()))
	}
	// The price list also holds Windows, dedicated and unused-reservation products at other
	// prices: equal prices show the filters kept them out.
	for typ, want := range static.Prices() {
		if got, ok := l.OnDemand(typ); !ok || got != want {
			t.Errorf("OnDemand(%q) = %v, %v, want %v, true", typ, got, ok, want)
		}
	}
	if od, _ := l.Updated(); !od.Equal(epoch) {
		t.Errorf("Updated() on-demand = %v, want %v", od, epoch)
	}

	reqs := srv.Requests("GetProducts")
	// Count distinct requests: on a loaded machine the SDK may retry a call whose connection
	// dropped, and a retry is the same page asked again.
	pages := map[string]bool{}
	for _, r := range reqs {
		pages[string(r.Body)] = true
	}
	if len(pages) != 15 { // 14 pages of shared-tenancy types, 1 of bare metal
		t.Errorf("distinct GetProducts calls = %d (of %d), want 15", len(pages), len(reqs))
	}
	var body struct {
		ServiceCode string
		MaxResults  int
		Filters     []struct{ Field, Type, Value string }
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range body.Filters {
		if f.Type != "TERM_MATCH" {
			t.Errorf("filter %s has type %s, want TERM_MATCH", f.Field, f.Type)
		}
		got[f.Field] = f.Value
	}
	want := map[string]string{"regionCode": "us-east-1", "serviceCode": "AmazonEC2", "operatingSystem": "Linux",
		"preInstalledSw": "NA", "capacitystatus": "Used", "marketoption": "OnDemand", "tenancy": "Shared", "productFamily": "Compute Instance"}
	if diff := cmp.Diff(want, got); diff != "" || body.ServiceCode != "AmazonEC2" || body.MaxResults != 100 {
		t.Errorf("GetProducts filters (-want +got):\n%s; ServiceCode %q MaxResults %d", diff, body.ServiceCode, body.MaxResults)
	}
	if h := reqs[0].Header.Get("X-Amz-Target"); h != "AWSPriceListService.GetProducts" {
		t.Errorf("X-Amz-Target = %q", h)
	}
}

func TestPricingEndpointRegion(t *testing.T) {
	tests := map[string]string{
		"us-east-1": "us-east-1", "us-west-2": "us-east-1", "ca-central-1": "us-east-1", "sa-east-1": "us-east-1",
		"eu-west-1": "eu-central-1", "eu-north-1": "eu-central-1", "ap-southeast-2": "ap-south-1",
		"ap-northeast-1": "ap-south-1", "cn-north-1": "cn-northwest-1", "cn-northwest-1": "cn-northwest-1",
	}
	for region, want := range tests {
		if got := pricing.PricingEndpointRegion(region); got != want {
			t.Errorf("PricingEndpointRegion(%q) = %q, want %q", region, got, want)
		}
	}
}

func TestRefreshOnDemandCallsTheRightEndpoint(t *testing.T) {
	tests := []struct {
		name, region, override, wantEndpoint, wantCurrency string
	}{
		{"europe", "eu-west-1", "", "eu-central-1", "USD"},
		{"asia", "ap-southeast-2", "", "ap-south-1", "USD"},
		{"overridden", "eu-west-1", "us-east-1", "us-east-1", "USD"},
		{"china", "cn-north-1", "", "cn-northwest-1", "CNY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := ec2test.NewServer()
			defer srv.Close()
			if tt.region != "cn-north-1" {
				srv.SetOnDemandPrices(tt.region, "USD", map[string]float64{"m5.large": 0.107, "m5.metal": 5.136})
			}
			l := newLive(t, srv, tt.region, func(o *pricing.Options) { o.PricingRegion = tt.override })
			if _, err := l.RefreshOnDemand(context.Background()); err != nil {
				t.Fatalf("RefreshOnDemand() error = %v", err)
			}
			for _, r := range srv.Requests("GetProducts") {
				if r.Region != tt.wantEndpoint {
					t.Errorf("GetProducts signed for %s, want %s", r.Region, tt.wantEndpoint)
				}
			}
			if got := l.Currency(); got != tt.wantCurrency {
				t.Errorf("Currency() = %q, want %q", got, tt.wantCurrency)
			}
		})
	}
}

func TestRefreshOnDemandChina(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	l := newLive(t, srv, "cn-north-1")
	rep, err := l.RefreshOnDemand(context.Background())
	if err != nil || rep.Prices != 316 {
		t.Fatalf("RefreshOnDemand() = %d prices, %v; want 316, nil", rep.Prices, err)
	}
	if got, ok := l.OnDemand("c3.large"); !ok || got != 1.054 {
		t.Errorf("OnDemand(c3.large) = %v, %v, want 1.054 (CNY), true", got, ok)
	}
}

func TestEndpointWithoutPricingAPI(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	l := newLive(t, srv, "eu-west-1", func(o *pricing.Options) { o.PricingRegion = "eu-west-1" })
	_, err := l.RefreshOnDemand(context.Background())
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "UnknownEndpoint" {
		t.Errorf("RefreshOnDemand() via eu-west-1 error = %v, want UnknownEndpoint", err)
	}
}

func TestRefreshSpot(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	l := newLive(t, srv, "us-east-1")
	if _, ok := l.Spot("m5.large", "us-east-1a"); ok {
		t.Error("Spot() before the first refresh: ok = true, want false (unpriced, not on-demand, not free)")
	}
	rep, err := l.RefreshSpot(context.Background())
	if err != nil {
		t.Fatalf("RefreshSpot() error = %v", err)
	}
	if want := 1367 * 3; rep.Prices != want || len(rep.Skipped) != 0 {
		t.Errorf("RefreshSpot() = %d prices, %d skipped, want %d, 0", rep.Prices, len(rep.Skipped), want)
	}
	for _, z := range []string{"us-east-1a", "us-east-1b", "us-east-1c"} {
		want := ec2test.SeededSpotPrice("m5.large", z, 0.096)
		if got, ok := l.Spot("m5.large", z); !ok || got != want {
			t.Errorf("Spot(m5.large, %s) = %v, %v, want %v, true", z, got, ok, want)
		}
	}
	if _, ok := l.Spot("m5.large", "us-east-1d"); ok {
		t.Error("Spot() in a zone with no price: ok = true, want false")
	}
	if _, spot := l.Updated(); !spot.Equal(epoch) {
		t.Errorf("Updated() spot = %v, want %v", spot, epoch)
	}
	r := srv.Requests("DescribeSpotPriceHistory")[0]
	if r.Form.Get("ProductDescription.1") != "Linux/UNIX" || r.Form.Get("ProductDescription.2") != "Linux/UNIX (Amazon VPC)" ||
		r.Form.Get("StartTime") != "2026-08-01T00:00:00Z" {
		t.Errorf("DescribeSpotPriceHistory form = %v, want both Linux product descriptions and StartTime now", r.Form)
	}
	if got := srv.Calls("DescribeSpotPriceHistory"); got != 5 {
		t.Errorf("DescribeSpotPriceHistory calls = %d, want 5 pages of at most 1000", got)
	}
}

func TestRefreshSpotKeepsTheLatestPrice(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	srv.SetSpotPrices("us-east-1",
		ec2test.SpotPrice{InstanceType: "m5.large", Zone: "us-east-1a", Price: 0.05, Timestamp: epoch.Add(-3 * time.Hour)},
		ec2test.SpotPrice{InstanceType: "m5.large", Zone: "us-east-1a", Price: 0.04, Timestamp: epoch.Add(-time.Hour)},
		ec2test.SpotPrice{InstanceType: "m5.large", Zone: "us-east-1b", ProductDescription: "Linux/UNIX (Amazon VPC)", Price: 0.045},
		ec2test.SpotPrice{InstanceType: "m5.large", Zone: "us-east-1b", ProductDescription: "Windows", Price: 0.2},
	)
	l := newLive(t, srv, "us-east-1")
	if _, err := l.RefreshSpot(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		zone string
		want float64
	}{{"us-east-1a", 0.04}, {"us-east-1b", 0.045}} {
		if got, ok := l.Spot("m5.large", c.zone); !ok || got != c.want {
			t.Errorf("Spot(m5.large, %s) = %v, %v, want %v, true", c.zone, got, ok, c.want)
		}
	}
}

// historyClient answers DescribeSpotPriceHistory from a fixed list, in two pages, out of
// time order: a whole history, as EC2 gives it with an earlier StartTime.
type historyClient struct{ entries []ec2types.SpotPrice }

func (h historyClient) DescribeSpotPriceHistory(_ context.Context, in *ec2.DescribeSpotPriceHistoryInput, _ ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error) {
	half := len(h.entries) / 2
	if in.NextToken == nil {
		return &ec2.DescribeSpotPriceHistoryOutput{SpotPriceHistory: h.entries[:half], NextToken: aws.String("2")}, nil
	}
	return &ec2.DescribeSpotPriceHistoryOutput{SpotPriceHistory: h.entries[half:]}, nil
}

func TestRefreshSpotLatestAcrossPages(t *testing.T) {
	entry := func(price string, age time.Duration) ec2types.SpotPrice {
		return ec2types.SpotPrice{InstanceType: "c5.large", AvailabilityZone: aws.String("us-east-1a"),
			SpotPrice: aws.String(price), Timestamp: aws.Time(epoch.Add(-age))}
	}
	l := &pricing.Live{Region: "us-east-1", Now: func() time.Time { return epoch },
		EC2: historyClient{[]ec2types.SpotPrice{entry("0.031", 2*time.Hour), entry("0.029", 5*time.Hour), entry("0.030", time.Hour), entry("0.033", 3*time.Hour)}}}
	if _, err := l.RefreshSpot(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, ok := l.Spot("c5.large", "us-east-1a"); !ok || got != 0.030 {
		t.Errorf("Spot(c5.large, us-east-1a) = %v, %v, want the latest, 0.030", got, ok)
	}
}

func TestRetriedFaultsRecover(t *testing.T) {
	tests := []struct {
		name   string
		inject func(*ec2test.Server, string)
	}{
		{"throttled", func(s *ec2test.Server, op string) { s.Throttle(op, 2) }},
		{"5xx", func(s *ec2test.Server, op string) { s.Unavailable(op, 2) }},
		{"500", func(s *ec2test.Server, op string) {
			s.Inject(op, 1, ec2test.Fault{Err: &ec2test.APIError{Code: "InternalError", Message: "boom", Status: http.StatusInternalServerError}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newSmallServer()
			defer srv.Close()
			tt.inject(srv, "GetProducts")
			tt.inject(srv, "DescribeSpotPriceHistory")
			l := newLive(t, srv, "us-east-1")
			if _, err := l.RefreshOnDemand(context.Background()); err != nil {
				t.Errorf("RefreshOnDemand() error = %v, want the SDK's retries to recover", err)
			}
			if _, err := l.RefreshSpot(context.Background()); err != nil {
				t.Errorf("RefreshSpot() error = %v, want the SDK's retries to recover", err)
			}
		})
	}
}

func TestFailedRefreshKeepsLastGoodPrices(t *testing.T) {
	tests := []struct {
		name      string
		inject    func(*ec2test.Server, string)
		wantCodes []string
	}{
		{"throttled", func(s *ec2test.Server, op string) { s.Throttle(op, -1) }, []string{"ThrottlingException", "RequestLimitExceeded"}},
		{"5xx", func(s *ec2test.Server, op string) { s.Unavailable(op, -1) }, []string{"ServiceUnavailableException", "Unavailable"}},
		{"malformed body", func(s *ec2test.Server, op string) {
			s.Inject(op, -1, ec2test.Fault{Body: `{"PriceList": [`})
			if op == "DescribeSpotPriceHistory" {
				s.ClearFaults()
				s.Inject(op, -1, ec2test.Fault{Body: `<DescribeSpotPriceHistoryResponse><spotPriceHistorySet><item><spotPrice>`})
			}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newSmallServer()
			defer srv.Close()
			l := newLive(t, srv, "us-east-1")
			if _, err := l.RefreshSpot(context.Background()); err != nil {
				t.Fatal(err)
			}
			before, _ := l.Spot("m5.large", "us-east-1a")
			staticAt, spotAt := l.Updated()

			later := epoch.Add(3 * time.Hour)
			l.Now = func() time.Time { return later }
			for _, kind := range []pricing.Kind{pricing.KindOnDemand, pricing.KindSpot} {
				op, refresh, at := "GetProducts", l.RefreshOnDemand, staticAt
				if kind == pricing.KindSpot {
					op, refresh, at = "DescribeSpotPriceHistory", l.RefreshSpot, spotAt
				}
				tt.inject(srv, op)
				_, err := refresh(context.Background())
				var stale *pricing.StaleError
				if !errors.As(err, &stale) {
					t.Fatalf("refresh %s error = %v, want a *StaleError", kind, err)
				}
				if stale.Kind != kind || !stale.Updated.Equal(at) || stale.Age != later.Sub(at) {
					t.Errorf("StaleError = {%s %v %v}, want {%s %v %v}", stale.Kind, stale.Updated, stale.Age, kind, at, later.Sub(at))
				}
				var apiErr smithy.APIError
				if tt.wantCodes != nil && (!errors.As(err, &apiErr) || !slices.Contains(tt.wantCodes, apiErr.ErrorCode())) {
					t.Errorf("refresh %s error = %v, want API error %v", kind, err, tt.wantCodes)
				}
				if !strings.HasPrefix(err.Error(), "pricing: ") || !strings.Contains(err.Error(), "old") {
					t.Errorf("error message %q, want the pricing: prefix and the age", err)
				}
			}
			if got, ok := l.OnDemand("m5.large"); !ok || got != 0.096 {
				t.Errorf("OnDemand(m5.large) after failure = %v, %v, want the static 0.096", got, ok)
			}
			if got, ok := l.Spot("m5.large", "us-east-1a"); !ok || got != before {
				t.Errorf("Spot(m5.large) after failure = %v, %v, want the last good %v", got, ok, before)
			}
			if od, spot := l.Updated(); !od.Equal(staticAt) || !spot.Equal(spotAt) {
				t.Errorf("Updated() after failure = %v, %v, want unchanged %v, %v", od, spot, staticAt, spotAt)
			}
		})
	}
}

func TestEmptyAnswersAreErrors(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	srv.SetOnDemandPrices("us-east-1", "USD", nil)
	srv.ClearSpotPrices("us-east-1")
	l := newLive(t, srv, "us-east-1")
	if _, err := l.RefreshOnDemand(context.Background()); !errors.Is(err, pricing.ErrNoPrices) {
		t.Errorf("RefreshOnDemand() on an empty price list error = %v, want ErrNoPrices", err)
	}
	if _, err := l.RefreshSpot(context.Background()); !errors.Is(err, pricing.ErrNoPrices) {
		t.Errorf("RefreshSpot() on an empty history error = %v, want ErrNoPrices", err)
	}
	if got, ok := l.OnDemand("m5.large"); !ok || got != 0.096 {
		t.Errorf("OnDemand(m5.large) = %v, %v, want the static price kept", got, ok)
	}
	var stale *pricing.StaleError
	if _, err := l.RefreshSpot(context.Background()); !errors.As(err, &stale) || !stale.Updated.IsZero() ||
		!strings.Contains(err.Error(), "no spot prices known") {
		t.Errorf("RefreshSpot() with nothing held: error = %v, want a StaleError saying no prices are known", err)
	}
}

// priceDocument returns a price list document for the type, priced as amounts says.
func priceDocument(instanceType string, amounts map[string]string) string {
	d := map[string]any{
		"product": map[string]any{"productFamily": "Compute Instance", "sku": "SKU",
			"attributes": map[string]string{"instanceType": instanceType, "regionCode": "us-east-1"}},
		"terms": map[string]any{"OnDemand": map[string]any{"SKU.JRTCKXETXF": map[string]any{
			"priceDimensions": map[string]any{"SKU.JRTCKXETXF.6YS6EN2CT7": map[string]any{"unit": "Hrs", "pricePerUnit": amounts}}}}},
	}
	b, _ := json.Marshal(d)
	return string(b)
}

func TestRefreshOnDemandSkipsBadDocuments(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	srv.SetOnDemandPrices("us-east-1", "USD", map[string]float64{"m5.large": 0.096, "m5.xlarge": 0.192})
	wrongRegion := strings.Replace(priceDocument("c5.large", map[string]string{"USD": "0.085"}), "us-east-1", "us-west-2", 1)
	srv.AddPriceDocuments("us-east-1",
		`{"product": {"attributes": {"instanceType": "x1.large"`, // truncated
		priceDocument("t3.nano", map[string]string{"USD": "0.0000000000"}),
		priceDocument("t3.micro", map[string]string{"EUR": "0.0100000000"}),
		priceDocument("t3.small", map[string]string{"USD": "cheap"}),
		priceDocument("t3.medium", map[string]string{"USD": "-0.04"}),
		priceDocument("", map[string]string{"USD": "0.5"}),
		priceDocument("m5.large", map[string]string{"USD": "0.5"}), // contradicts the real document
		wrongRegion,
	)
	l := newLive(t, srv, "us-east-1", func(o *pricing.Options) {})
	l.Static = &pricing.Table{} // no fallback: only what the refresh yields
	var logs bytes.Buffer
	l.Logger = slog.New(slog.NewTextHandler(&logs, nil))

	rep, err := l.RefreshOnDemand(context.Background())
	if err != nil {
		t.Fatalf("RefreshOnDemand() error = %v", err)
	}
	if rep.Prices != 2 {
		t.Errorf("RefreshOnDemand() = %d prices, want 2", rep.Prices)
	}
	wantReasons := map[string]string{
		"x1.large?": "malformed price document", "t3.nano": "is zero", "t3.micro": "no hourly on-demand price in USD",
		"t3.small": "is not a number", "t3.medium": "out of range", "": "is not an instance type",
		"m5.large": "a second price", "c5.large": "priced for region us-west-2",
	}
	// The raw documents come back in both queries (shared and bare metal): each is skipped twice.
	if len(rep.Skipped) != 2*len(wantReasons) {
		t.Errorf("Skipped = %d entries, want %d: %v", len(rep.Skipped), 2*len(wantReasons), rep.Skipped)
	}
	for _, s := range rep.Skipped {
		want, ok := wantReasons[s.InstanceType]
		if s.InstanceType == "" && strings.HasPrefix(s.Reason, "malformed") {
			want, ok = wantReasons["x1.large?"], true
		}
		if !ok || !strings.Contains(s.Reason, want) {
			t.Errorf("Skipped %q: %q, want a reason containing %q", s.InstanceType, s.Reason, want)
		}
	}
	for _, typ := range []string{"t3.nano", "t3.micro", "t3.small", "t3.medium", "c5.large", "x1.large"} {
		if p, ok := l.OnDemand(typ); ok {
			t.Errorf("OnDemand(%q) = %v, true, want unpriced", typ, p)
		}
	}
	if p, ok := l.OnDemand("m5.large"); !ok || p != 0.096 {
		t.Errorf("OnDemand(m5.large) = %v, %v, want the first price, 0.096", p, ok)
	}
	if !strings.Contains(logs.String(), "entry skipped") {
		t.Errorf("logs do not mention skipped entries:\n%s", logs.String())
	}
}

func TestRefreshSpotSkipsBadPrices(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	srv.SetSpotPrices("us-east-1",
		ec2test.SpotPrice{InstanceType: "m5.large", Zone: "us-east-1a", Price: 0.04},
		ec2test.SpotPrice{InstanceType: "m5.large", Zone: "us-east-1b", RawPrice: "0.000000"},
		ec2test.SpotPrice{InstanceType: "m5.large", Zone: "us-east-1c", RawPrice: "n/a"},
		ec2test.SpotPrice{InstanceType: "c5.large", Zone: "us-east-1a", RawPrice: "-0.01"},
		ec2test.SpotPrice{InstanceType: "c5.large", Zone: "", Price: 0.03},
	)
	l := newLive(t, srv, "us-east-1")
	rep, err := l.RefreshSpot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Prices != 1 || len(rep.Skipped) != 4 {
		t.Errorf("RefreshSpot() = %d prices, skipped %v; want 1 price, 4 skipped", rep.Prices, rep.Skipped)
	}
	for _, c := range [][2]string{{"m5.large", "us-east-1b"}, {"m5.large", "us-east-1c"}, {"c5.large", "us-east-1a"}} {
		if p, ok := l.Spot(c[0], c[1]); ok {
			t.Errorf("Spot(%s, %s) = %v, true, want unpriced", c[0], c[1], p)
		}
	}
}

func TestLiveZeroValue(t *testing.T) {
	var l pricing.Live
	if _, ok := l.OnDemand("m5.large"); ok {
		t.Error("zero Live: OnDemand ok = true, want false")
	}
	if _, err := l.RefreshOnDemand(context.Background()); err == nil {
		t.Error("zero Live: RefreshOnDemand() error = nil, want one")
	}
	if _, err := l.RefreshSpot(context.Background()); err == nil {
		t.Error("zero Live: RefreshSpot() error = nil, want one")
	}
}

func TestConcurrentLookupsDuringRefresh(t *testing.T) {
	srv := newSmallServer()
	defer srv.Close()
	l := newLive(t, srv, "us-east-1")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for ctx.Err() == nil {
				runtime.Gosched() // leave the refreshes room on small machines
				if p, ok := l.OnDemand("m5.large"); !ok || p != 0.096 {
					t.Errorf("OnDemand(m5.large) = %v, %v during refresh", p, ok)
					return
				}
				if p, ok := l.Spot("m5.large", "us-east-1a"); ok && !(p > 0) {
					t.Errorf("Spot(m5.large) = %v during refresh", p)
					return
				}
				l.Updated()
			}
		})
	}
	for range 10 {
		var rwg sync.WaitGroup
		rwg.Go(func() {
			if _, err := l.RefreshOnDemand(ctx); err != nil {
				t.Error(err)
			}
		})
		rwg.Go(func() {
			if _, err := l.RefreshSpot(ctx); err != nil {
				t.Error(err)
			}
		})
		rwg.Wait()
	}
	cancel()
	wg.Wait()
	if _, ok := l.Spot("m5.large", "us-east-1a"); !ok {
		t.Error("Spot(m5.large) after refreshes: ok = false")
	}
}
