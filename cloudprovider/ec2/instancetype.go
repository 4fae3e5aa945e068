package ec2

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/nodeplan/nodeplan"
)

// Labels the EC2 provider sets beyond those of package nodeplan, in Karpenter's spelling.
const (
	LabelZoneID                      = "topology.k8s.aws/zone-id"
	LabelInstanceCPUSustainedClock   = "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz"
	LabelInstanceEBSBandwidth        = "karpenter.k8s.aws/instance-ebs-bandwidth"
	LabelInstanceEncryptionInTransit = "karpenter.k8s.aws/instance-encryption-in-transit-supported"
	LabelInstanceAcceleratorName     = "karpenter.k8s.aws/instance-accelerator-name"
	LabelInstanceAcceleratorVendor   = "karpenter.k8s.aws/instance-accelerator-manufacturer"
	LabelInstanceAcceleratorCount    = "karpenter.k8s.aws/instance-accelerator-count"
	LabelNodeClass                   = "karpenter.k8s.aws/ec2nodeclass"
)

// typeNamePattern splits an instance type name: category letters, an optional "-<n>tb" (high
// memory), generation digits, then anything up to the size.
var typeNamePattern = regexp.MustCompile(`^([a-z]+)(-[0-9]+tb)?([0-9]+)[^.]*\.(.+)$`)

// TypeInfoOf extracts what the capacity model needs from EC2's description of a type.
func TypeInfoOf(info *ec2types.InstanceTypeInfo) TypeInfo {
	t := TypeInfo{Name: string(info.InstanceType), Arch: "amd64"}
	if info.VCpuInfo != nil && info.VCpuInfo.DefaultVCpus != nil {
		t.VCPUs = int64(*info.VCpuInfo.DefaultVCpus)
	}
	if info.MemoryInfo != nil && info.MemoryInfo.SizeInMiB != nil {
		t.MemoryMiB = *info.MemoryInfo.SizeInMiB
	}
	if info.ProcessorInfo != nil {
		for _, a := range info.ProcessorInfo.SupportedArchitectures {
			if a == ec2types.ArchitectureTypeArm64 {
				t.Arch = "arm64"
			}
		}
	}
	if n := info.NetworkInfo; n != nil {
		if n.MaximumNetworkInterfaces != nil {
			t.MaxENIs = int64(*n.MaximumNetworkInterfaces)
		}
		def := int32(0)
		if n.DefaultNetworkCardIndex != nil {
			def = *n.DefaultNetworkCardIndex
		}
		for _, c := range n.NetworkCards {
			if c.NetworkCardIndex != nil && *c.NetworkCardIndex == def && c.MaximumNetworkInterfaces != nil {
				t.MaxENIs = int64(*c.MaximumNetworkInterfaces)
			}
		}
		if n.Ipv4AddressesPerInterface != nil {
			t.IPv4PerENI = int64(*n.Ipv4AddressesPerInterface)
		}
		if n.EfaSupported != nil && *n.EfaSupported && n.EfaInfo != nil && n.EfaInfo.MaximumEfaInterfaces != nil {
			t.EFAs = int64(*n.EfaInfo.MaximumEfaInterfaces)
		}
	}
	t.BranchENIs = int64(branchENIs[t.Name])
	if g := info.GpuInfo; g != nil {
		for _, gpu := range g.Gpus {
			if gpu.Count == nil || gpu.Manufacturer == nil {
				continue
			}
			if t.GPUs == nil {
				t.GPUs = map[string]int64{}
			}
			t.GPUs[strings.ToLower(*gpu.Manufacturer)] += int64(*gpu.Count)
		}
	}
	if ni := info.NeuronInfo; ni != nil {
		for _, d := range ni.NeuronDevices {
			if d.Count == nil {
				continue
			}
			t.NeuronDevices += int64(*d.Count)
			if d.CoreInfo != nil && d.CoreInfo.Count != nil {
				t.NeuronCores += int64(*d.Count) * int64(*d.CoreInfo.Count)
			}
		}
	}
	if s := info.InstanceStorageInfo; s != nil && s.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported && s.TotalSizeInGB != nil {
		t.LocalNVMeGB = *s.TotalSizeInGB
	}
	return t
}

// InstanceTypeLabels returns the labels every node of the type gets, independent of zone and
// capacity type: node.kubernetes.io/instance-type, kubernetes.io/arch and os, and the
// karpenter.k8s.aws/instance-* labels Karpenter sets. A label whose value EC2 does not report
// is left out (a type without GPUs has no instance-gpu-* labels).
func InstanceTypeLabels(info *ec2types.InstanceTypeInfo) map[string]string {
	t := TypeInfoOf(info)
	name := t.Name
	l := map[string]string{
		nodeplan.LabelInstanceType:           name,
		nodeplan.LabelArch:                   t.Arch,
		nodeplan.LabelOS:                     "linux",
		nodeplan.LabelInstanceCPU:            strconv.FormatInt(t.VCPUs, 10),
		nodeplan.LabelInstanceMemory:         strconv.FormatInt(t.MemoryMiB, 10),
		nodeplan.LabelInstanceHypervisor:     string(info.Hypervisor),
		nodeplan.LabelInstanceCapabilityFlex: strconv.FormatBool(strings.Contains(name, "-flex.")),
	}
	if family, size, ok := strings.Cut(name, "."); ok {
		l[nodeplan.LabelInstanceFamily] = family
		l[nodeplan.LabelInstanceSize] = size
	}
	if m := typeNamePattern.FindStringSubmatch(name); m != nil {
		l[nodeplan.LabelInstanceCategory] = m[1]
		l[nodeplan.LabelInstanceGeneration] = m[3]
	}
	if p := info.ProcessorInfo; p != nil {
		if p.Manufacturer != nil {
			l[nodeplan.LabelInstanceCPUVendor] = strings.ToLower(*p.Manufacturer)
		}
		if p.SustainedClockSpeedInGhz != nil {
			l[LabelInstanceCPUSustainedClock] = strconv.FormatInt(int64(math.Round(*p.SustainedClockSpeedInGhz*1000)), 10)
		}
	}
	if n := info.NetworkInfo; n != nil {
		if n.EncryptionInTransitSupported != nil {
			l[LabelInstanceEncryptionInTransit] = strconv.FormatBool(*n.EncryptionInTransitSupported)
		}
		var gbps float64
		for _, c := range n.NetworkCards {
			if c.BaselineBandwidthInGbps != nil {
				gbps += *c.BaselineBandwidthInGbps
			}
		}
		if gbps > 0 {
			l[nodeplan.LabelInstanceNetworkBW] = strconv.FormatInt(int64(math.Round(gbps*1000)), 10)
		}
	}
	if e := info.EbsInfo; e != nil && e.EbsOptimizedSupport == ec2types.EbsOptimizedSupportDefault &&
		e.EbsOptimizedInfo != nil && e.EbsOptimizedInfo.MaximumBandwidthInMbps != nil {
		l[LabelInstanceEBSBandwidth] = strconv.FormatInt(int64(*e.EbsOptimizedInfo.MaximumBandwidthInMbps), 10)
	}
	if t.LocalNVMeGB > 0 {
		l[nodeplan.LabelInstanceLocalNVMe] = strconv.FormatInt(t.LocalNVMeGB, 10)
	}
	if g := info.GpuInfo; g != nil && len(g.Gpus) == 1 {
		gpu := g.Gpus[0]
		if gpu.Name != nil {
			l[nodeplan.LabelInstanceGPUName] = strings.ToLower(*gpu.Name)
		}
		if gpu.Manufacturer != nil {
			l[nodeplan.LabelInstanceGPUVendor] = strings.ToLower(*gpu.Manufacturer)
		}
		if gpu.Count != nil {
			l[nodeplan.LabelInstanceGPUCount] = strconv.FormatInt(int64(*gpu.Count), 10)
		}
		if gpu.MemoryInfo != nil && gpu.MemoryInfo.SizeInMiB != nil {
			l[nodeplan.LabelInstanceGPUMemory] = strconv.FormatInt(int64(*gpu.MemoryInfo.SizeInMiB), 10)
		}
	}
	if ni := info.NeuronInfo; ni != nil && len(ni.NeuronDevices) == 1 {
		d := ni.NeuronDevices[0]
		if d.Name != nil {
			l[LabelInstanceAcceleratorName] = strings.ToLower(*d.Name)
		}
		l[LabelInstanceAcceleratorVendor] = "aws"
		if d.Count != nil {
			l[LabelInstanceAcceleratorCount] = strconv.FormatInt(int64(*d.Count), 10)
		}
	} else if ia := info.InferenceAcceleratorInfo; ia != nil && len(ia.Accelerators) == 1 {
		a := ia.Accelerators[0]
		if a.Name != nil {
			l[LabelInstanceAcceleratorName] = strings.ToLower(*a.Name)
		}
		if a.Manufacturer != nil {
			l[LabelInstanceAcceleratorVendor] = strings.ToLower(*a.Manufacturer)
		}
		if a.Count != nil {
			l[LabelInstanceAcceleratorCount] = strconv.FormatInt(int64(*a.Count), 10)
		}
	}
	return l
}

// NewInstanceType describes an EC2 instance type for the solver: its labels, capacity and
// overhead under o. Offerings are left empty; the provider adds them per zone.
func NewInstanceType(info *ec2types.InstanceTypeInfo, o CapacityOptions) nodeplan.InstanceType {
	t := TypeInfoOf(info)
	capacity := Capacity(t, o)
	return nodeplan.InstanceType{
		Name:     t.Name,
		Labels:   InstanceTypeLabels(info),
		Capacity: capacity,
		Overhead: Overhead(t, o, capacity),
	}
}
