package pricing_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/pricing"
)

// fixed is a Source with given prices, for tests.
type fixed struct {
	onDemand map[string]float64
	spot     map[[2]string]float64
}

func (f fixed) OnDemand(t string) (float64, bool) { p, ok := f.onDemand[t]; return p, ok }
func (f fixed) Spot(t, z string) (float64, bool)  { p, ok := f.spot[[2]string{t, z}]; return p, ok }
func (f fixed) Updated() (time.Time, time.Time)   { return time.Time{}, time.Time{} }

var listPrices = fixed{
	onDemand: map[string]float64{"m5.large": 0.1, "m5.xlarge": 0.2, "m7i.large": 0.1, "r6i.4xlarge": 1.0},
	spot:     map[[2]string]float64{{"m5.large", "z1"}: 0.04, {"m7i.large", "z1"}: 0.05},
}

func TestEffectivePrice(t *testing.T) {
	model := &pricing.CostModel{
		Discounts: []pricing.Discount{
			{Percent: 10},                      // everything
			{CapacityType: "spot", Percent: 5}, // spot: beats the global one
			{Family: "m7i", CapacityType: "on-demand", Percent: 30},
			{Family: "m7i", Percent: 20},
			{InstanceType: "m5.xlarge", Percent: 50},
			{InstanceType: "m5.xlarge", Percent: 60}, // same rank, listed later: loses
		},
		Prices: []pricing.FixedPrice{
			{InstanceType: "r6i.4xlarge", CapacityType: "on-demand", Price: 0.6},
			{InstanceType: "r6i.4xlarge", CapacityType: "on-demand", Zone: "z2", Price: 0.55},
			{InstanceType: "c9.large", Price: 0.07}, // no list price: still priced
		},
	}
	e, err := model.Wrap(listPrices)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		typ, zone string
		ct        nodeplan.CapacityType
		want      float64
		wantOK    bool
	}{
		{"m5.large", "z1", "on-demand", 0.09, true},
		{"m5.large", "z1", "reserved", 0.09, true}, // reserved: on-demand list price, global discount
		{"m5.large", "z1", "spot", 0.038, true},
		{"m5.large", "z2", "spot", 0, false}, // no spot price there: unpriced, not discounted to zero
		{"m7i.large", "z1", "on-demand", 0.07, true},
		{"m7i.large", "z1", "spot", 0.04, true}, // family discount outranks the spot-only one
		{"m5.xlarge", "z1", "on-demand", 0.1, true},
		{"r6i.4xlarge", "z1", "on-demand", 0.6, true},
		{"r6i.4xlarge", "z2", "on-demand", 0.55, true},
		{"r6i.4xlarge", "z1", "spot", 0, false},
		{"c9.large", "z1", "spot", 0.07, true},
		{"zz9.huge", "z1", "on-demand", 0, false},
		{"m5.large", "z1", "bogus", 0, false},
	}
	for _, tt := range tests {
		got, ok := e.Price(tt.typ, tt.zone, tt.ct)
		if ok != tt.wantOK || math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Price(%s, %s, %s) = %v, %v, want %v, %v", tt.typ, tt.zone, tt.ct, got, ok, tt.want, tt.wantOK)
		}
	}
	if got, ok := e.OnDemand("m7i.large"); !ok || math.Abs(got-0.07) > 1e-12 {
		t.Errorf("OnDemand(m7i.large) = %v, %v, want 0.07", got, ok)
	}
	if got, ok := e.Spot("m5.large", "z1"); !ok || math.Abs(got-0.038) > 1e-12 {
		t.Errorf("Spot(m5.large, z1) = %v, %v, want 0.038", got, ok)
	}
}

func TestZeroCostModelChangesNothing(t *testing.T) {
	e, err := (&pricing.CostModel{}).Wrap(listPrices)
	if err != nil {
		t.Fatal(err)
	}
	for typ, want := range listPrices.onDemand {
		if got, ok := e.OnDemand(typ); !ok || got != want {
			t.Errorf("OnDemand(%s) = %v, %v, want %v", typ, got, ok, want)
		}
	}
}

func TestParseCostModel(t *testing.T) {
	yaml := `
discounts:
- percent: 8
- family: m7i
  capacityType: on-demand
  percent: 28
prices:
- instanceType: r6i.4xlarge
  capacityType: on-demand
  price: 0.635
`
	got, err := pricing.ParseCostModel([]byte(yaml))
	if err != nil {
		t.Fatalf("ParseCostModel() error = %v", err)
	}
	want := &pricing.CostModel{
		Discounts: []pricing.Discount{{Percent: 8}, {Family: "m7i", CapacityType: "on-demand", Percent: 28}},
		Prices:    []pricing.FixedPrice{{InstanceType: "r6i.4xlarge", CapacityType: "on-demand", Price: 0.635}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseCostModel() (-want +got):\n%s", diff)
	}
	if _, err := pricing.ParseCostModel([]byte(`{"discounts": [{"percent": 5}]}`)); err != nil {
		t.Errorf("ParseCostModel(JSON) error = %v", err)
	}
	if _, err := pricing.ParseCostModel([]byte("discounts:\n- percnt: 5\n")); err == nil || !strings.HasPrefix(err.Error(), "pricing: ") {
		t.Errorf("ParseCostModel(unknown field) error = %v, want a pricing: error", err)
	}
}

func TestCostModelValidate(t *testing.T) {
	m := &pricing.CostModel{
		Discounts: []pricing.Discount{
			{Percent: 100},
			{Percent: -5},
			{Family: "m5.large", Percent: 5},
			{InstanceType: "m5", Percent: 5},
			{InstanceType: "m5.large", Family: "m5", Percent: 5},
			{CapacityType: "preemptible", Percent: 5},
			{Percent: math.NaN()},
		},
		Prices: []pricing.FixedPrice{
			{InstanceType: "m5.large", Price: 0},
			{InstanceType: "", Price: 1},
			{InstanceType: "m5.large", CapacityType: "cheap", Price: 1},
		},
	}
	err := m.Validate()
	wantFields := []string{
		"discounts[0].percent", "discounts[1].percent", "discounts[2].family", "discounts[3].instanceType",
		"discounts[4].family", "discounts[5].capacityType", "discounts[6].percent",
		"prices[0].price", "prices[1].instanceType", "prices[2].capacityType",
	}
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *nodeplan.FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("Validate() error %v is not a *nodeplan.FieldError", e)
		}
		got = append(got, fe.Field)
	}
	if diff := cmp.Diff(wantFields, got); diff != "" {
		t.Errorf("Validate() fields (-want +got):\n%s", diff)
	}
	if _, werr := m.Wrap(listPrices); werr == nil {
		t.Error("Wrap() of an invalid model: error = nil")
	}
}

func TestApply(t *testing.T) {
	in := []nodeplan.InstanceType{
		{Name: "m5.large", Offerings: []nodeplan.Offering{
			{Zone: "z1", CapacityType: "on-demand", Price: 99, Available: true},
			{Zone: "z1", CapacityType: "spot", Available: true},
			{Zone: "z2", CapacityType: "spot", Price: 0.01, Available: true}, // no spot price in z2
			{Zone: "z1", CapacityType: "reserved", Available: true, ReservationID: "cr-1"},
		}},
		{Name: "zz9.huge", Offerings: []nodeplan.Offering{ // unknown type
			{Zone: "z1", CapacityType: "on-demand", Price: 1, Available: true},
		}},
		{Name: "m7i.large", Offerings: []nodeplan.Offering{
			{Zone: "z1", CapacityType: "spot", Available: false}, // unavailable stays so, priced or not
		}},
	}
	orig := []nodeplan.InstanceType{in[0], in[1], in[2]}
	orig[0].Offerings = append([]nodeplan.Offering(nil), in[0].Offerings...)
	got := pricing.Apply(listPrices, in)
	want := []nodeplan.InstanceType{
		{Name: "m5.large", Offerings: []nodeplan.Offering{
			{Zone: "z1", CapacityType: "on-demand", Price: 0.1, Available: true},
			{Zone: "z1", CapacityType: "spot", Price: 0.04, Available: true},
			{Zone: "z2", CapacityType: "spot", Price: 0, Available: false},
			{Zone: "z1", CapacityType: "reserved", Price: 0.1, Available: true, ReservationID: "cr-1"},
		}},
		{Name: "zz9.huge", Offerings: []nodeplan.Offering{
			{Zone: "z1", CapacityType: "on-demand", Price: 0, Available: false},
		}},
		{Name: "m7i.large", Offerings: []nodeplan.Offering{
			{Zone: "z1", CapacityType: "spot", Price: 0.05, Available: false},
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Apply() (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(orig[0], in[0]); diff != "" {
		t.Errorf("Apply() modified its input (-before +after):\n%s", diff)
	}
	for _, it := range got {
		for _, o := range it.Offerings {
			if o.Available && !(o.Price > 0) {
				t.Errorf("Apply(): %s %s/%s is available at %v, want a positive price", it.Name, o.Zone, o.CapacityType, o.Price)
			}
		}
	}
}

func TestCurrency(t *testing.T) {
	cn, _ := pricing.Static("cn-north-1")
	e, _ := (&pricing.CostModel{}).Wrap(cn)
	for _, c := range []struct {
		src  pricing.Source
		want string
	}{{cn, "CNY"}, {e, "CNY"}, {&pricing.Live{Region: "us-east-1"}, "USD"}, {listPrices, ""}} {
		if got := pricing.Currency(c.src); got != c.want {
			t.Errorf("Currency(%T) = %q, want %q", c.src, got, c.want)
		}
	}
}
