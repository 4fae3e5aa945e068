package ec2

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// sharedData is where the shared data directory sits in CI: beside the repository.
var sharedData = filepath.Join("..", "..", "..", "shared", "data")

type dataFile struct {
	Source struct {
		CrossCheck struct {
			Mismatches []struct {
				Type, Resource string
			} `json:"mismatches"`
		} `json:"crossCheck"`
	} `json:"source"`
	InstanceTypes []dataType `json:"instanceTypes"`
}

type dataType struct {
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

func loadData(t testing.TB) dataFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sharedData, "aws-instance-types.json"))
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("shared data not found at %s (CI checks shared/ out beside the repository): %v", sharedData, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var f dataFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// ec2Info renders a data record as EC2's DescribeInstanceTypes would describe the type.
func ec2Info(d dataType) ec2types.InstanceTypeInfo {
	l := d.Labels
	num := func(key string) (float64, bool) {
		v, ok := l[key]
		if !ok {
			return 0, false
		}
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	}
	arch := ec2types.ArchitectureTypeX8664
	if l["kubernetes.io/arch"] == "arm64" {
		arch = ec2types.ArchitectureTypeArm64
	}
	enis, ipv4 := d.MaxENIs, d.IPv4PerENI
	if enis == 0 { // absent from the VPC limits table: any split giving the documented pods
		enis, ipv4 = 1, d.MaxPodsENI-1
	}
	info := ec2types.InstanceTypeInfo{
		InstanceType: ec2types.InstanceType(d.Name),
		Hypervisor:   ec2types.InstanceTypeHypervisor(l["karpenter.k8s.aws/instance-hypervisor"]),
		VCpuInfo:     &ec2types.VCpuInfo{DefaultVCpus: aws.Int32(d.VCPU)},
		MemoryInfo:   &ec2types.MemoryInfo{SizeInMiB: aws.Int64(d.MemoryMiB)},
		ProcessorInfo: &ec2types.ProcessorInfo{
			SupportedArchitectures: []ec2types.ArchitectureType{arch},
			Manufacturer:           aws.String(l["karpenter.k8s.aws/instance-cpu-manufacturer"]),
		},
		NetworkInfo: &ec2types.NetworkInfo{
			MaximumNetworkInterfaces:     aws.Int32(enis),
			Ipv4AddressesPerInterface:    aws.Int32(ipv4),
			DefaultNetworkCardIndex:      aws.Int32(0),
			EncryptionInTransitSupported: aws.Bool(l["karpenter.k8s.aws/instance-encryption-in-transit-supported"] == "true"),
			NetworkCards:                 []ec2types.NetworkCardInfo{{NetworkCardIndex: aws.Int32(0), MaximumNetworkInterfaces: aws.Int32(enis)}},
		},
	}
	if mhz, ok := num("karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz"); ok {
		info.ProcessorInfo.SustainedClockSpeedInGhz = aws.Float64(mhz / 1000)
	}
	if bw, ok := num("karpenter.k8s.aws/instance-network-bandwidth"); ok {
		info.NetworkInfo.NetworkCards[0].BaselineBandwidthInGbps = aws.Float64(bw / 1000)
	}
	if efa, err := resource.ParseQuantity(d.Capacity["vpc.amazonaws.com/efa"]); err == nil {
		info.NetworkInfo.EfaSupported = aws.Bool(true)
		info.NetworkInfo.EfaInfo = &ec2types.EfaInfo{MaximumEfaInterfaces: aws.Int32(int32(efa.Value()))}
	}
	if bw, ok := num("karpenter.k8s.aws/instance-ebs-bandwidth"); ok {
		info.EbsInfo = &ec2types.EbsInfo{EbsOptimizedSupport: ec2types.EbsOptimizedSupportDefault,
			EbsOptimizedInfo: &ec2types.EbsOptimizedInfo{MaximumBandwidthInMbps: aws.Int32(int32(bw))}}
	}
	if gb, ok := num("karpenter.k8s.aws/instance-local-nvme"); ok {
		info.InstanceStorageInfo = &ec2types.InstanceStorageInfo{TotalSizeInGB: aws.Int64(int64(gb)), NvmeSupport: ec2types.EphemeralNvmeSupportRequired}
	}
	if g := d.GPUs; g != nil {
		info.GpuInfo = &ec2types.GpuInfo{Gpus: []ec2types.GpuDeviceInfo{{Name: aws.String(g.Name), Manufacturer: aws.String(g.Manufacturer),
			Count: aws.Int32(g.Count), MemoryInfo: &ec2types.GpuDeviceMemoryInfo{SizeInMiB: aws.Int32(g.MemoryMiB)}}}}
	}
	if n, ok := num("karpenter.k8s.aws/instance-accelerator-count"); ok {
		name := l["karpenter.k8s.aws/instance-accelerator-name"]
		if l["karpenter.k8s.aws/instance-accelerator-manufacturer"] == "aws" {
			cores := resource.MustParse(d.Capacity["aws.amazon.com/neuroncore"])
			info.NeuronInfo = &ec2types.NeuronInfo{NeuronDevices: []ec2types.NeuronDeviceInfo{{Name: aws.String(name), Count: aws.Int32(int32(n)),
				CoreInfo: &ec2types.NeuronDeviceCoreInfo{Count: aws.Int32(int32(cores.Value() / int64(n)))}}}}
		} else {
			info.InferenceAcceleratorInfo = &ec2types.InferenceAcceleratorInfo{Accelerators: []ec2types.InferenceDeviceInfo{{Name: aws.String(name),
				Manufacturer: aws.String(l["karpenter.k8s.aws/instance-accelerator-manufacturer"]), Count: aws.Int32(int32(n))}}}
		}
	}
	return info
}

func quantities(m map[string]string) map[string]resource.Quantity {
	out := map[string]resource.Quantity{}
	for k, v := range m {
		out[k] = resource.MustParse(v)
	}
	return out
}

func resourceMap(rl corev1.ResourceList) map[string]resource.Quantity {
	out := map[string]resource.Quantity{}
	for k, v := range rl {
		if !v.IsZero() {
			out[string(k)] = v
		}
	}
	return out
}

var equateQuantities = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// TestAllocatableMatchesDocumented checks every instance type of the shared data: capacity,
// labels and allocatable computed from EC2's description agree with the documented ones.
//
// The one known exception is vpc.amazonaws.com/pod-eni for the 56 types listed in the data's
// source.crossCheck: the documentation was generated from an older VPC limits table that did
// not list them as trunking-compatible, so the documented allocatable lacks pod-eni while our
// (newer) table has it. For those, pod-eni is compared with the data's capacity instead.
func TestAllocatableMatchesDocumented(t *testing.T) {
	f := loadData(t)
	if len(f.InstanceTypes) < 1000 {
		t.Fatalf("only %d instance types in the data", len(f.InstanceTypes))
	}
	exception := map[string]bool{}
	for _, m := range f.Source.CrossCheck.Mismatches {
		if m.Resource != string(ResourcePodENI) {
			t.Fatalf("unexpected documented mismatch %+v", m)
		}
		exception[m.Type] = true
	}
	if len(exception) != 56 {
		t.Errorf("%d pod-eni exceptions in the data, want 56", len(exception))
	}
	for _, d := range f.InstanceTypes {
		info := ec2Info(d)
		it := NewInstanceType(&info, CapacityOptions{})
		if diff := cmp.Diff(quantities(d.Capacity), resourceMap(it.Capacity), equateQuantities); diff != "" {
			t.Errorf("%s: capacity mismatch (-want +got):\n%s", d.Name, diff)
		}
		want := quantities(d.Allocatable)
		got := resourceMap(it.Allocatable())
		if exception[d.Name] {
			if _, documented := want[string(ResourcePodENI)]; documented {
				t.Errorf("%s: listed as a pod-eni exception but documents pod-eni", d.Name)
			}
			want[string(ResourcePodENI)] = resource.MustParse(d.Capacity[string(ResourcePodENI)])
		}
		if diff := cmp.Diff(want, got, equateQuantities); diff != "" {
			t.Errorf("%s: allocatable mismatch (-want +got):\n%s", d.Name, diff)
		}
		if diff := cmp.Diff(d.Labels, it.Labels); diff != "" {
			t.Errorf("%s: labels mismatch (-want +got):\n%s", d.Name, diff)
		}
	}
}
