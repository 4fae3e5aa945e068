package pricing_test

import (
	"math"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeplan/nodeplan/pricing"
)

func TestVolumeCost(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    pricing.EBSVolume
		want float64 // $/h
	}{
		{"100Gi gp3", pricing.EBSVolume{Size: resource.MustParse("100Gi"), Type: "gp3"}, 100 * 0.08 / 730},
		{"empty type is gp3", pricing.EBSVolume{Size: resource.MustParse("50Gi")}, 50 * 0.08 / 730},
		{"gp3 with 6000 IOPS and 250 MiB/s", pricing.EBSVolume{Size: resource.MustParse("100Gi"), Type: "gp3", IOPS: 6000, Throughput: 250},
			(100*0.08 + 3000*0.005 + 125*0.04) / 730},
		{"gp3 at its baseline pays no IOPS", pricing.EBSVolume{Size: resource.MustParse("100Gi"), Type: "gp3", IOPS: 3000, Throughput: 125}, 100 * 0.08 / 730},
		{"io2 with 1000 IOPS", pricing.EBSVolume{Size: resource.MustParse("200Gi"), Type: "io2", IOPS: 1000}, (200*0.125 + 1000*0.065) / 730},
		{"st1", pricing.EBSVolume{Size: resource.MustParse("500Gi"), Type: "st1"}, 500 * 0.045 / 730},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pricing.EBSPrices{}.VolumeCost(tc.v)
			if err != nil || math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("VolumeCost(%+v) = %v, %v; want %v, nil", tc.v, got, err, tc.want)
			}
		})
	}
	_, err := pricing.USEast1EBS.VolumeCost(pricing.EBSVolume{Size: resource.MustParse("10Gi"), Type: "io9"})
	if err == nil || !strings.Contains(err.Error(), `pricing: no EBS price for volume type "io9"`) {
		t.Errorf("VolumeCost(io9) error = %v, want one naming the type", err)
	}
}
