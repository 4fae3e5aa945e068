package nodeplan

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"
)

func TestDecodeCatalogRejectsBadNumbersAndFields(t *testing.T) {
	typ := func(offerings string) string {
		return `{"instanceTypes": [{"name": "m5.large", "capacity": {"cpu": "2", "memory": "8Gi", "pods": "29"}, "offerings": [` + offerings + `]}]}`
	}
	od := func(price string) string {
		return `{"zone": "us-east-1a", "capacityType": "on-demand", "price": ` + price + `}`
	}
	tests := []struct {
		name, input string
		want        []string // substrings of the error
	}{
		{"a price of 1e308 (sums overflow to +Inf)", typ(od("1e308")), []string{"m5.large", "offerings[0].price", "1e+308"}},
		{"a price of 5e-324 (prints as free)", typ(od("5e-324")), []string{"m5.large", "offerings[0].price", "5e-324"}},
		{"a misspelt field in an offering", typ(`{"zone": "us-east-1a", "capacityType": "spot", "price": 0.03, "availabel": false}`),
			[]string{"m5.large", "offerings[0].availabel"}},
		{"a misspelt field in a type", `{"instanceTypes": [{"name": "m5.large", "capacity": {"cpu": "2"}, "labls": {}, "offerings": [` + od("0.096") + `]}]}`,
			[]string{"m5.large", "labls"}},
		{"a misspelt top-level field", `{"instanceType": []}`, []string{"instanceType"}},
		{"the same offering twice", typ(od("0.096") + "," + od("0.090")), []string{"m5.large", "offerings[1]", "offerings[0] is the same"}},
	}
	for _, tt := range tests {
		_, err := DecodeCatalog([]byte(tt.input))
		if err == nil {
			t.Errorf("%s: DecodeCatalog() = nil error, want one naming %q", tt.name, tt.want)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: DecodeCatalog() error %q does not name %q", tt.name, err, w)
			}
		}
	}
	if _, err := DecodeCatalog([]byte(typ(od("0.000001") + `, {"zone": "us-east-1a", "capacityType": "spot", "price": 1000000}`))); err != nil {
		t.Errorf("DecodeCatalog(prices at the bounds) = %v, want nil", err)
	}
}

func TestMilliValueSaturates(t *testing.T) {
	tests := []struct {
		q    string
		want int64
	}{
		{"1", 1000}, {"1500m", 1500}, {"16Gi", 16 << 30 * 1000},
		{"9E", MaxMilliValue}, {"1e16", MaxMilliValue}, {"10Pi", MaxMilliValue}, {"-9E", -MaxMilliValue},
		{"281474976710656", 281474976710656000}, {"281474976710657", MaxMilliValue}, {"256Ti", MaxMilliValue},
	}
	for _, tt := range tests {
		if got := MilliValue(mustQuantity(t, tt.q)); got != tt.want {
			t.Errorf("MilliValue(%s) = %d, want %d", tt.q, got, tt.want)
		}
	}
}

func mustQuantity(t *testing.T, s string) resource.Quantity {
	t.Helper()
	q, err := resource.ParseQuantity(s)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestMilliValueShortcutChangesNothing checks MilliValue's whole-units shortcut against the
// saturating comparison it skips, over amounts in every form a quantity takes.
func TestMilliValueShortcutChangesNothing(t *testing.T) {
	reference := saturatedMilli
	suffixes := []string{"", "m", "u", "n", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e3", "e-3", "e-1", "e15", "E-2"}
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.OneOf(rapid.Int64Range(-2000, 2000), rapid.Int64(), rapid.Int64Range(281474976710000, 281474976711000)).Draw(t, "v")
		s := fmt.Sprint(v)
		if rapid.Bool().Draw(t, "fraction") {
			s += "." + fmt.Sprint(rapid.IntRange(0, 999).Draw(t, "decimals"))
		}
		s += rapid.SampledFrom(suffixes).Draw(t, "suffix")
		q, err := resource.ParseQuantity(s)
		if err != nil {
			t.Fatalf("the draw %q is not a quantity: %v", s, err) // every draw is one
		}
		if got, want := MilliValue(q), reference(q); got != want {
			t.Fatalf("MilliValue(%s) = %d, want %d", s, got, want)
		}
	})
}
