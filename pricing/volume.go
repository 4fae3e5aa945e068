package pricing

import (
	"fmt"

	"github.com/nodeplan/nodeplan"
)

// HoursPerMonth is how AWS turns a monthly price into an hourly one (365 × 24 / 12).
const HoursPerMonth = 730

// defaultRootGiB is the root volume a node gets when its node class maps none, or maps one
// without a size: the AMI family's default (20Gi for AL2023).
const defaultRootGiB = 20

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

// VolumeCost returns what the EBS volumes a node class attaches to every node cost per hour:
// each volume's monthly price over [HoursPerMonth]. A class with no mappings, or a volume with
// no size, counts the AMI family's 20Gi default; an empty type is gp3. Mappings without EBS
// (the AMI's own devices) cost nothing here. It is the per-pool part of
// scheduling.NodeCost for the pools that use the class.
//
// It returns an error naming the mapping for a volume type prices has no price for.
func (prices EBSPrices) VolumeCost(nc nodeplan.EC2NodeClass) (float64, error) {
	if prices.PerGiBMonth == nil {
		prices = USEast1EBS
	}
	monthly := func(gib float64, typ string, iops, throughput int64) (float64, error) {
		if typ == "" {
			typ = "gp3"
		}
		per, ok := prices.PerGiBMonth[typ]
		if !ok {
			return 0, fmt.Errorf("no EBS price for volume type %q", typ)
		}
		m := gib * per
		switch typ {
		case "gp3":
			m += float64(max(iops-3000, 0))*prices.GP3IOPSMonth + float64(max(throughput-125, 0))*prices.GP3ThroughputMonth
		case "io1", "io2":
			m += float64(iops) * prices.ProvisionedIOPSMonth
		}
		return m, nil
	}
	if len(nc.BlockDeviceMappings) == 0 {
		m, err := monthly(defaultRootGiB, "gp3", 0, 0)
		return m / HoursPerMonth, err
	}
	total := 0.0
	for i, bdm := range nc.BlockDeviceMappings {
		if bdm.EBS == nil {
			continue
		}
		gib := float64(bdm.EBS.VolumeSize.Value()) / (1 << 30)
		if gib <= 0 {
			gib = defaultRootGiB
		}
		m, err := monthly(gib, bdm.EBS.VolumeType, bdm.EBS.IOPS, bdm.EBS.Throughput)
		if err != nil {
			return 0, fmt.Errorf("pricing: EC2NodeClass %s blockDeviceMappings[%d] (%s): %w", nc.Name, i, bdm.DeviceName, err)
		}
		total += m
	}
	return total / HoursPerMonth, nil
}
