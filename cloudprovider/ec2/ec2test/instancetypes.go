package ec2test

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The instance types the server describes, from shared/data/aws-instance-types.json (all 1,363
// types Karpenter's AWS provider documents, Aug 2026), gzipped.
//
//go:embed data/aws-instance-types.json.gz
var instanceTypesGz []byte

// InstanceTypeData is one record of aws-instance-types.json: an instance type's specification
// and the capacity and allocatable Karpenter's AWS provider documents for it.
type InstanceTypeData struct {
	Name       string            `json:"name"`
	Labels     map[string]string `json:"labels"`
	VCPU       int32             `json:"vcpu"`
	MemoryMiB  int64             `json:"memoryMiB"`
	MaxPodsENI int32             `json:"maxPodsENI"`
	MaxENIs    int32             `json:"maxENIs"`
	IPv4PerENI int32             `json:"ipv4PerENI"`
	BranchENIs int32             `json:"branchENIs"`
	GPUs       *struct {
		Count        int32  `json:"count"`
		Name         string `json:"name"`
		Manufacturer string `json:"manufacturer"`
		MemoryMiB    int32  `json:"memoryMiB"`
	} `json:"gpus"`
	Capacity    map[string]string `json:"capacity"`
	Allocatable map[string]string `json:"allocatable"`
}

var (
	builtinTypesOnce sync.Once
	builtinTypes     []InstanceTypeData
	builtinTypesErr  error
)

// InstanceTypes returns the built-in instance types, sorted by name. The slice is shared: do not
// modify it.
func InstanceTypes() ([]InstanceTypeData, error) {
	builtinTypesOnce.Do(func() {
		zr, err := gzip.NewReader(bytes.NewReader(instanceTypesGz))
		if err != nil {
			builtinTypesErr = err
			return
		}
		builtinTypes, builtinTypesErr = ReadInstanceTypes(zr)
	})
	return builtinTypes, builtinTypesErr
}

// ReadInstanceTypes reads a file in the format of aws-instance-types.json.
func ReadInstanceTypes(r io.Reader) ([]InstanceTypeData, error) {
	var f struct {
		InstanceTypes []InstanceTypeData `json:"instanceTypes"`
	}
	if err := json.NewDecoder(r).Decode(&f); err != nil {
		return nil, fmt.Errorf("ec2test: instance types: %w", err)
	}
	slices.SortFunc(f.InstanceTypes, func(a, b InstanceTypeData) int { return strings.Compare(a.Name, b.Name) })
	return f.InstanceTypes, nil
}

// The wire form of DescribeInstanceTypes, element names as EC2 sends them.
type (
	xmlItems[T any] struct {
		Items []T `xml:"item"`
	}
	xmlInstanceType struct {
		InstanceType          string           `xml:"instanceType"`
		Hypervisor            string           `xml:"hypervisor,omitempty"`
		BareMetal             bool             `xml:"bareMetal"`
		SupportedUsageClasses xmlItems[string] `xml:"supportedUsageClasses"`
		ProcessorInfo         xmlProcessorInfo `xml:"processorInfo"`
		VCpuInfo              struct {
			DefaultVCpus int32 `xml:"defaultVCpus"`
		} `xml:"vCpuInfo"`
		MemoryInfo struct {
			SizeInMiB int64 `xml:"sizeInMiB"`
		} `xml:"memoryInfo"`
		NetworkInfo           xmlNetworkInfo    `xml:"networkInfo"`
		GpuInfo               *xmlGpuInfo       `xml:"gpuInfo,omitempty"`
		NeuronInfo            *xmlNeuronInfo    `xml:"neuronInfo,omitempty"`
		InferenceAccelerators *xmlInferenceInfo `xml:"inferenceAcceleratorInfo,omitempty"`
		EbsInfo               *xmlEbsInfo       `xml:"ebsInfo,omitempty"`
		InstanceStorageInfo   *xmlStorageInfo   `xml:"instanceStorageInfo,omitempty"`
	}
	xmlProcessorInfo struct {
		SupportedArchitectures   xmlItems[string] `xml:"supportedArchitectures"`
		Manufacturer             string           `xml:"manufacturer,omitempty"`
		SustainedClockSpeedInGhz string           `xml:"sustainedClockSpeedInGhz,omitempty"`
	}
	xmlNetworkInfo struct {
		MaximumNetworkInterfaces     int32                    `xml:"maximumNetworkInterfaces"`
		Ipv4AddressesPerInterface    int32                    `xml:"ipv4AddressesPerInterface"`
		DefaultNetworkCardIndex      int32                    `xml:"defaultNetworkCardIndex"`
		NetworkCards                 xmlItems[xmlNetworkCard] `xml:"networkCards"`
		EncryptionInTransitSupported bool                     `xml:"encryptionInTransitSupported"`
		EfaSupported                 bool                     `xml:"efaSupported"`
		EfaInfo                      *struct {
			Max int32 `xml:"maximumEfaInterfaces"`
		} `xml:"efaInfo,omitempty"`
	}
	xmlNetworkCard struct {
		NetworkCardIndex         int32  `xml:"networkCardIndex"`
		MaximumNetworkInterfaces int32  `xml:"maximumNetworkInterfaces"`
		BaselineBandwidthInGbps  string `xml:"baselineBandwidthInGbps,omitempty"`
	}
	xmlGpuInfo struct {
		Gpus xmlItems[xmlGpu] `xml:"gpus"`
	}
	xmlGpu struct {
		Name         string `xml:"name"`
		Manufacturer string `xml:"manufacturer"`
		Count        int32  `xml:"count"`
		MemoryInfo   struct {
			SizeInMiB int32 `xml:"sizeInMiB"`
		} `xml:"memoryInfo"`
	}
	xmlNeuronInfo struct {
		NeuronDevices xmlItems[xmlNeuronDevice] `xml:"neuronDevices"`
	}
	xmlNeuronDevice struct {
		Name     string `xml:"name"`
		Count    int32  `xml:"count"`
		CoreInfo struct {
			Count int32 `xml:"count"`
		} `xml:"coreInfo"`
	}
	xmlInferenceInfo struct {
		Accelerators xmlItems[xmlGpu] `xml:"accelerators"`
	}
	xmlEbsInfo struct {
		EbsOptimizedSupport string `xml:"ebsOptimizedSupport"`
		EbsOptimizedInfo    struct {
			MaximumBandwidthInMbps int32 `xml:"maximumBandwidthInMbps"`
		} `xml:"ebsOptimizedInfo"`
	}
	xmlStorageInfo struct {
		TotalSizeInGB int64  `xml:"totalSizeInGB"`
		NvmeSupport   string `xml:"nvmeSupport"`
	}
)

var _ = xml.Name{}

// wire renders the record as EC2 describes the type.
func (d *InstanceTypeData) wire() xmlInstanceType {
	l := d.Labels
	arch := "x86_64"
	if l["kubernetes.io/arch"] == "arm64" {
		arch = "arm64"
	}
	enis, ipv4 := d.MaxENIs, d.IPv4PerENI
	if enis == 0 { // absent from the VPC limits table: any split that gives the documented pods
		enis, ipv4 = 1, d.MaxPodsENI-1
	}
	w := xmlInstanceType{
		InstanceType:          d.Name,
		Hypervisor:            l["karpenter.k8s.aws/instance-hypervisor"],
		BareMetal:             strings.Contains(d.Name, "metal"),
		SupportedUsageClasses: xmlItems[string]{[]string{"on-demand", "spot"}},
		ProcessorInfo: xmlProcessorInfo{
			SupportedArchitectures: xmlItems[string]{[]string{arch}},
			Manufacturer:           l["karpenter.k8s.aws/instance-cpu-manufacturer"],
		},
		NetworkInfo: xmlNetworkInfo{
			MaximumNetworkInterfaces:     enis,
			Ipv4AddressesPerInterface:    ipv4,
			NetworkCards:                 xmlItems[xmlNetworkCard]{[]xmlNetworkCard{{MaximumNetworkInterfaces: enis}}},
			EncryptionInTransitSupported: l["karpenter.k8s.aws/instance-encryption-in-transit-supported"] == "true",
		},
	}
	w.VCpuInfo.DefaultVCpus = d.VCPU
	w.MemoryInfo.SizeInMiB = d.MemoryMiB
	thousandth := func(key string) string {
		v, err := strconv.ParseFloat(l[key], 64)
		if err != nil {
			return ""
		}
		return strconv.FormatFloat(v/1000, 'f', -1, 64)
	}
	w.ProcessorInfo.SustainedClockSpeedInGhz = thousandth("karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz")
	w.NetworkInfo.NetworkCards.Items[0].BaselineBandwidthInGbps = thousandth("karpenter.k8s.aws/instance-network-bandwidth")
	if efa, err := strconv.Atoi(d.Capacity["vpc.amazonaws.com/efa"]); err == nil {
		w.NetworkInfo.EfaSupported = true
		w.NetworkInfo.EfaInfo = &struct {
			Max int32 `xml:"maximumEfaInterfaces"`
		}{int32(efa)}
	}
	if bw, err := strconv.Atoi(l["karpenter.k8s.aws/instance-ebs-bandwidth"]); err == nil {
		w.EbsInfo = &xmlEbsInfo{EbsOptimizedSupport: "default"}
		w.EbsInfo.EbsOptimizedInfo.MaximumBandwidthInMbps = int32(bw)
	}
	if gb, err := strconv.ParseInt(l["karpenter.k8s.aws/instance-local-nvme"], 10, 64); err == nil {
		w.InstanceStorageInfo = &xmlStorageInfo{TotalSizeInGB: gb, NvmeSupport: "required"}
	}
	if g := d.GPUs; g != nil {
		gpu := xmlGpu{Name: g.Name, Manufacturer: g.Manufacturer, Count: g.Count}
		gpu.MemoryInfo.SizeInMiB = g.MemoryMiB
		w.GpuInfo = &xmlGpuInfo{Gpus: xmlItems[xmlGpu]{[]xmlGpu{gpu}}}
	}
	if n, err := strconv.Atoi(l["karpenter.k8s.aws/instance-accelerator-count"]); err == nil {
		name := l["karpenter.k8s.aws/instance-accelerator-name"]
		if l["karpenter.k8s.aws/instance-accelerator-manufacturer"] == "aws" {
			cores, _ := strconv.Atoi(d.Capacity["aws.amazon.com/neuroncore"])
			dev := xmlNeuronDevice{Name: name, Count: int32(n)}
			if n > 0 {
				dev.CoreInfo.Count = int32(cores / n)
			}
			w.NeuronInfo = &xmlNeuronInfo{NeuronDevices: xmlItems[xmlNeuronDevice]{[]xmlNeuronDevice{dev}}}
		} else {
			w.InferenceAccelerators = &xmlInferenceInfo{Accelerators: xmlItems[xmlGpu]{[]xmlGpu{{Name: name,
				Manufacturer: l["karpenter.k8s.aws/instance-accelerator-manufacturer"], Count: int32(n)}}}}
		}
	}
	return w
}
