package ec2

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeplan/nodeplan/pricing"
)

// defaultRootVolume is the root volume a node gets when its class maps none, or maps one
// without a size: the AMI family's default (20Gi for AL2023).
var defaultRootVolume = resource.MustParse("20Gi")

// VolumeCost returns what the EBS volumes c attaches to every node cost per hour, at prices
// ([pricing.EBSPrices.VolumeCost] of each). A class with no mappings, or a volume with no size,
// counts the AMI family's 20Gi default; mappings without EBS (the AMI's own devices) cost
// nothing here. It is the per-pool part of scheduling.NodeCost for the pools that use c.
//
// It returns an error naming the class and the mapping for a volume type prices has no price
// for.
func (c *NodeClass) VolumeCost(prices pricing.EBSPrices) (float64, error) {
	if len(c.BlockDeviceMappings) == 0 {
		return prices.VolumeCost(pricing.EBSVolume{Size: defaultRootVolume, Type: "gp3"})
	}
	total := 0.0
	for i, bdm := range c.BlockDeviceMappings {
		if bdm.EBS == nil {
			continue
		}
		v := pricing.EBSVolume{Size: bdm.EBS.VolumeSize, Type: bdm.EBS.VolumeType, IOPS: bdm.EBS.IOPS, Throughput: bdm.EBS.Throughput}
		if v.Size.Sign() <= 0 {
			v.Size = defaultRootVolume
		}
		cost, err := prices.VolumeCost(v)
		if err != nil {
			return 0, fmt.Errorf("ec2: EC2NodeClass %s blockDeviceMappings[%d] (%s): %w", c.Name, i, bdm.DeviceName, err)
		}
		total += cost
	}
	return total, nil
}
