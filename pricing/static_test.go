package pricing_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeplan/nodeplan/pricing"
)

func TestStaticRegions(t *testing.T) {
	want := []string{"cn-north-1", "us-east-1", "us-gov-east-1", "us-gov-west-1"}
	if diff := cmp.Diff(want, pricing.StaticRegions()); diff != "" {
		t.Errorf("StaticRegions() (-want +got):\n%s", diff)
	}
}

func TestStatic(t *testing.T) {
	tests := []struct {
		region, currency string
		types            int
		instanceType     string
		price            float64
		generated        string
	}{
		{"us-east-1", "USD", 1367, "m5.large", 0.096, "2026-07-20T13:44:30Z"},
		{"us-gov-west-1", "USD", 770, "m5.large", 0.121, "2026-07-20T13:44:38Z"},
		{"cn-north-1", "CNY", 316, "c3.large", 1.054, "2024-11-06T01:00:11Z"},
	}
	for _, tt := range tests {
		t.Run(tt.region, func(t *testing.T) {
			tab, err := pricing.Static(tt.region)
			if err != nil {
				t.Fatalf("Static(%q) error = %v", tt.region, err)
			}
			if got := len(tab.InstanceTypes()); got != tt.types {
				t.Errorf("Static(%q) has %d types, want %d", tt.region, got, tt.types)
			}
			if got := tab.Currency(); got != tt.currency {
				t.Errorf("Static(%q).Currency() = %q, want %q", tt.region, got, tt.currency)
			}
			if got, ok := tab.OnDemand(tt.instanceType); !ok || got != tt.price {
				t.Errorf("Static(%q).OnDemand(%q) = %v, %v, want %v, true", tt.region, tt.instanceType, got, ok, tt.price)
			}
			od, spot := tab.Updated()
			if want, _ := time.Parse(time.RFC3339, tt.generated); !od.Equal(want) || !spot.IsZero() {
				t.Errorf("Static(%q).Updated() = %v, %v, want %v, zero", tt.region, od, spot, want)
			}
			if _, ok := tab.Spot(tt.instanceType, tt.region+"a"); ok {
				t.Errorf("Static(%q).Spot() ok = true, want no spot prices in a static table", tt.region)
			}
			if _, ok := tab.OnDemand("zz9.huge"); ok {
				t.Errorf("Static(%q).OnDemand(unknown type) ok = true, want false", tt.region)
			}
			for typ, p := range tab.Prices() {
				if !(p > 0) {
					t.Errorf("Static(%q) prices %s at %v, want a positive price", tt.region, typ, p)
				}
			}
		})
	}
}

func TestStaticUnknownRegion(t *testing.T) {
	_, err := pricing.Static("eu-west-1")
	if !errors.Is(err, pricing.ErrUnknownRegion) {
		t.Errorf("Static(eu-west-1) error = %v, want ErrUnknownRegion", err)
	}
}
