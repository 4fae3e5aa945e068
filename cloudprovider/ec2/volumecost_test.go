package ec2_test

import (
	"math"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/pricing"
)

func TestNodeClassVolumeCost(t *testing.T) {
	ebs := func(size, typ string, iops, throughput int64) ec2.BlockDeviceMapping {
		m := ec2.BlockDeviceMapping{DeviceName: "/dev/xvda", RootVolume: true,
			EBS: &ec2.BlockDevice{VolumeType: typ, IOPS: iops, Throughput: throughput}}
		if size != "" {
			m.EBS.VolumeSize = resource.MustParse(size)
		}
		return m
	}
	for _, tc := range []struct {
		name string
		bdms []ec2.BlockDeviceMapping
		want float64 // $/h
	}{
		{"no mappings: the 20Gi gp3 default", nil, 20 * 0.08 / 730},
		{"no size: the 20Gi default", []ec2.BlockDeviceMapping{ebs("", "gp2", 0, 0)}, 20 * 0.10 / 730},
		{"100Gi gp3", []ec2.BlockDeviceMapping{ebs("100Gi", "gp3", 0, 0)}, 100 * 0.08 / 730},
		{"empty type is gp3", []ec2.BlockDeviceMapping{ebs("50Gi", "", 0, 0)}, 50 * 0.08 / 730},
		{"gp3 with 6000 IOPS and 250 MiB/s", []ec2.BlockDeviceMapping{ebs("100Gi", "gp3", 6000, 250)}, (100*0.08 + 3000*0.005 + 125*0.04) / 730},
		{"io2 with 1000 IOPS", []ec2.BlockDeviceMapping{ebs("200Gi", "io2", 1000, 0)}, (200*0.125 + 1000*0.065) / 730},
		{"two volumes", []ec2.BlockDeviceMapping{ebs("20Gi", "gp3", 0, 0), ebs("500Gi", "st1", 0, 0)}, (20*0.08 + 500*0.045) / 730},
		{"no EBS: the AMI's device", []ec2.BlockDeviceMapping{{DeviceName: "/dev/sdb"}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ec2.NodeClass{Name: "default", BlockDeviceMappings: tc.bdms}
			got, err := c.VolumeCost(pricing.EBSPrices{})
			if err != nil || math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("VolumeCost() = %v, %v; want %v, nil", got, err, tc.want)
			}
		})
	}
	c := ec2.NodeClass{Name: "fast", BlockDeviceMappings: []ec2.BlockDeviceMapping{ebs("10Gi", "io9", 0, 0)}}
	_, err := c.VolumeCost(pricing.USEast1EBS)
	if err == nil || !strings.Contains(err.Error(), `EC2NodeClass fast blockDeviceMappings[0] (/dev/xvda): pricing: no EBS price for volume type "io9"`) {
		t.Errorf("VolumeCost(io9) error = %v, want one naming the class, the mapping and the type", err)
	}
}
