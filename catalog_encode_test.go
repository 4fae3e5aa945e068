package nodeplan

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestEncodeCatalogRoundTrip(t *testing.T) {
	data, err := os.ReadFile("../shared/data/catalog.json")
	if err != nil {
		t.Fatalf("the shared data beside the repository (as CI has it): %v", err)
	}
	want, err := DecodeCatalog(data)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := EncodeCatalog(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeCatalog(enc)
	if err != nil {
		t.Fatalf("DecodeCatalog(EncodeCatalog(catalog)): %v", err)
	}
	opt := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	if diff := cmp.Diff(want, got, opt, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("catalog changed through EncodeCatalog and DecodeCatalog (-want +got):\n%s", diff)
	}
}

func TestEncodeCatalogRefusesBadPrices(t *testing.T) {
	for _, price := range []float64{0, -1, posInf()} {
		its := []InstanceType{{Name: "m5.large", Offerings: []Offering{{Zone: "a", CapacityType: CapacityTypeOnDemand, Price: price, Available: true}}}}
		if _, err := EncodeCatalog(its); err == nil {
			t.Errorf("EncodeCatalog(price %v) = nil error, want one", price)
		}
	}
}

func posInf() float64 { z := 0.0; return 1 / z }
