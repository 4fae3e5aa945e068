package pricing

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// HoursPerMonth is how AWS turns a monthly price into an hourly one (365 × 24 / 12).
const HoursPerMonth = 730

// EBSPrices are EBS list prices per month, in the currency of the instance prices they are
// added to. The zero value means [USEast1EBS].
type EBSPrices struct {
	// PerGiBMonth is the storage price by volume type (gp3, gp2, io1, io2, st1, sc1, standard).
	PerGiBMonth map[string]float64
	// GP3IOPSMonth and GP3ThroughputMonth price gp3's provisioned IOPS above 3,000 and
	// throughput above 125 MiB/s; ProvisionedIOPSMonth prices io1 and io2 IOPS.
	GP3IOPSMonth, GP3ThroughputMonth, ProvisionedIOPSMonth float64
}

// USEast1EBS are us-east-1's EBS list prices in USD. They are per GB-month; a GiB is counted
// as a GB here, which errs on the cheap side by 7%.
var USEast1EBS = EBSPrices{
	PerGiBMonth: map[string]float64{
		"gp3": 0.08, "gp2": 0.10, "io1": 0.125, "io2": 0.125, "st1": 0.045, "sc1": 0.015, "standard": 0.05,
	},
	GP3IOPSMonth:         0.005,
	GP3ThroughputMonth:   0.04,
	ProvisionedIOPSMonth: 0.065,
}

// EBSVolume is one EBS volume to price.
type EBSVolume struct {
	// Size is the volume's size, counted in GiB.
	Size resource.Quantity
	// Type is gp3, gp2, io1, io2, st1, sc1 or standard; empty means gp3.
	Type string
	// IOPS and Throughput (MiB/s) are what the volume provisions; gp3 pays for what is above
	// its 3,000 IOPS and 125 MiB/s baseline, io1 and io2 for every IOPS.
	IOPS, Throughput int64
}

// VolumeCost returns what v costs per hour: its monthly price over [HoursPerMonth]. A node's
// volumes, defaults filled in (which a node class decides: cloudprovider/ec2's
// NodeClass.VolumeCost), are the per-pool part of scheduling.NodeCost for the pools that use
// them.
//
// It returns an error naming the type when prices has no price for it.
func (prices EBSPrices) VolumeCost(v EBSVolume) (float64, error) {
	if prices.PerGiBMonth == nil {
		prices = USEast1EBS
	}
	typ := v.Type
	if typ == "" {
		typ = "gp3"
	}
	per, ok := prices.PerGiBMonth[typ]
	if !ok {
		return 0, fmt.Errorf("pricing: no EBS price for volume type %q", typ)
	}
	m := float64(v.Size.Value()) / (1 << 30) * per
	switch typ {
	case "gp3":
		m += float64(max(v.IOPS-3000, 0))*prices.GP3IOPSMonth + float64(max(v.Throughput-125, 0))*prices.GP3ThroughputMonth
	case "io1", "io2":
		m += float64(v.IOPS) * prices.ProvisionedIOPSMonth
	}
	return m / HoursPerMonth, nil
}
