package ec2

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/nodeplan/nodeplan"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Extended resources an EC2 node advertises.
const (
	ResourceNvidiaGPU   corev1.ResourceName = "nvidia.com/gpu"
	ResourceAMDGPU      corev1.ResourceName = "amd.com/gpu"
	ResourceHabanaGaudi corev1.ResourceName = "habana.ai/gaudi"
	ResourceNeuron      corev1.ResourceName = "aws.amazon.com/neuron"
	ResourceNeuronCore  corev1.ResourceName = "aws.amazon.com/neuroncore"
	ResourceEFA         corev1.ResourceName = "vpc.amazonaws.com/efa"
	ResourcePodENI      corev1.ResourceName = "vpc.amazonaws.com/pod-eni"
)

// DefaultVMMemoryOverhead is the fraction of an instance's memory the hypervisor and firmware are
// assumed to keep, as Karpenter assumes. It over-estimates large instances (1.7–5.3% is typical);
// lower it with CapacityOptions.VMMemoryOverhead once measured.
const DefaultVMMemoryOverhead = 0.075

// CapacityOptions are the node settings that change what an instance type holds. The zero value
// is Karpenter's documented default: AL2023, ENI-limited pods, no reserved ENIs, 7.5% VM memory
// overhead, default kube-reserved and eviction thresholds, a 20Gi root volume.
type CapacityOptions struct {
	// Family is the AMI family, as in AMIFamily (AL2023 if empty). AL2 and AL2023 compute kube-reserved memory
	// from the ENI-limited pod count even when MaxPods is set, as the EKS AMIs do; other
	// families use the real pod count.
	Family string
	// MaxPods, when positive, is every node's pod capacity. Clusters whose CNI does not hand
	// out VPC addresses (Calico, Cilium overlay, kubenet) must set it: the ENI limit does not
	// apply to them.
	MaxPods int32
	// PodsPerCore, when positive, caps pods at PodsPerCore × vCPUs.
	PodsPerCore int32
	// ReservedENIs are network interfaces the VPC CNI may not use for pods.
	ReservedENIs int32
	// VMMemoryOverhead is the fraction of memory the VM does not see; 0 means
	// DefaultVMMemoryOverhead and a negative value means none.
	VMMemoryOverhead float64
	// KubeReserved and SystemReserved override the computed kube-reserved amounts key by key,
	// and add system-reserved ones.
	KubeReserved   corev1.ResourceList
	SystemReserved corev1.ResourceList
	// EvictionHard overrides the hard-eviction thresholds: "memory.available" and
	// "nodefs.available", each a quantity ("500Mi") or a percentage ("10%").
	EvictionHard map[string]string
	// RootVolume is the size of the root volume; zero means 20Gi.
	RootVolume resource.Quantity
	// InstanceStoreRAID0 puts ephemeral storage on the instance's local NVMe disks (RAID0) when
	// it has any.
	InstanceStoreRAID0 bool
}

// TypeInfo is what the capacity model needs to know of an instance type: the parts of EC2's
// DescribeInstanceTypes answer that matter, plus the branch ENIs EC2 does not report.
type TypeInfo struct {
	Name      string
	VCPUs     int64
	MemoryMiB int64
	// Arch is the Kubernetes architecture: amd64 or arm64.
	Arch string
	// MaxENIs is the number of network interfaces of the default network card; IPv4PerENI the
	// addresses each can hold.
	MaxENIs, IPv4PerENI int64
	// BranchENIs is the pod-eni count (0 when the type does not support trunking).
	BranchENIs int64
	// GPUs by manufacturer (lower case: nvidia, amd, habana).
	GPUs map[string]int64
	// NeuronDevices and NeuronCores count AWS Inferentia/Trainium accelerators.
	NeuronDevices, NeuronCores int64
	// EFAs is the maximum number of EFA interfaces.
	EFAs int64
	// LocalNVMeGB is the total size of local NVMe instance storage.
	LocalNVMeGB int64
}

func (o *CapacityOptions) family() string {
	if o.Family == "" {
		return "AL2023"
	}
	return o.Family
}

// ENILimitedPods is the number of pods the VPC CNI can give addresses to without prefix
// delegation: every usable interface's addresses but its primary one, plus two host-network
// pods (kube-proxy and the CNI itself).
func ENILimitedPods(maxENIs, ipv4PerENI, reservedENIs int64) int64 {
	usable := maxENIs - reservedENIs
	if usable < 0 || ipv4PerENI < 1 {
		return 2
	}
	return usable*(ipv4PerENI-1) + 2
}

// Pods is the pod capacity of a node of the type under o.
func Pods(t TypeInfo, o CapacityOptions) int64 {
	pods := ENILimitedPods(t.MaxENIs, t.IPv4PerENI, int64(o.ReservedENIs))
	if o.MaxPods > 0 {
		pods = int64(o.MaxPods)
	}
	if o.PodsPerCore > 0 {
		pods = min(pods, int64(o.PodsPerCore)*t.VCPUs)
	}
	return pods
}

// VMMemoryMiB is the memory the kubelet sees, in MiB: EC2's figure less the 64MiB Graviton keeps
// for its contiguous-memory allocator, less the VM overhead fraction (rounded up).
func VMMemoryMiB(memoryMiB int64, arch string, overhead float64) int64 {
	if arch == "arm64" {
		memoryMiB -= 64
	}
	switch {
	case overhead == 0:
		overhead = DefaultVMMemoryOverhead
	case overhead < 0:
		overhead = 0
	}
	return memoryMiB - int64(math.Ceil(float64(memoryMiB)*overhead))
}

// KubeReservedCPU is the kube-reserved CPU in millicores for a node of cpuMillis: 6% of the first
// core, 1% of the second, 0.5% of the third and fourth and 0.25% of the rest, each tier rounded
// down to whole millicores.
func KubeReservedCPU(cpuMillis int64) int64 {
	tiers := []struct {
		start, end int64
		pct        float64
	}{
		{0, 1000, 0.06}, {1000, 2000, 0.01}, {2000, 4000, 0.005}, {4000, math.MaxInt64, 0.0025},
	}
	var total int64
	for _, t := range tiers {
		if cpuMillis <= t.start {
			break
		}
		total += int64(float64(min(cpuMillis, t.end)-t.start) * t.pct)
	}
	return total
}

// KubeReservedMemoryMiB is the kube-reserved memory for a node that runs pods pods.
func KubeReservedMemoryMiB(pods int64) int64 { return 11*pods + 255 }

const (
	mebi = 1 << 20
	gibi = 1 << 30
)

// Capacity returns the resources a node of the type has under o.
func Capacity(t TypeInfo, o CapacityOptions) corev1.ResourceList {
	rl := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(t.VCPUs, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(VMMemoryMiB(t.MemoryMiB, t.Arch, o.VMMemoryOverhead)*mebi, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(Pods(t, o), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: ephemeralStorage(t, o),
	}
	put := func(name corev1.ResourceName, n int64) {
		if n > 0 {
			rl[name] = *resource.NewQuantity(n, resource.DecimalSI)
		}
	}
	put(ResourceNvidiaGPU, t.GPUs["nvidia"])
	put(ResourceAMDGPU, t.GPUs["amd"])
	put(ResourceHabanaGaudi, t.GPUs["habana"])
	put(ResourceNeuron, t.NeuronDevices)
	put(ResourceNeuronCore, t.NeuronCores)
	put(ResourceEFA, t.EFAs)
	put(ResourcePodENI, t.BranchENIs)
	return rl
}

func ephemeralStorage(t TypeInfo, o CapacityOptions) resource.Quantity {
	if o.InstanceStoreRAID0 && t.LocalNVMeGB > 0 {
		return *resource.NewQuantity(t.LocalNVMeGB*1000*1000*1000, resource.DecimalSI)
	}
	if !o.RootVolume.IsZero() {
		return o.RootVolume.DeepCopy()
	}
	return *resource.NewQuantity(20*gibi, resource.BinarySI)
}

// Overhead returns what the kubelet and system keep on a node of the type under o, given its
// capacity (from Capacity).
func Overhead(t TypeInfo, o CapacityOptions, capacity corev1.ResourceList) nodeplan.Overhead {
	pods := Pods(t, o)
	if f := o.family(); f == "AL2023" || f == "AL2" {
		pods = ENILimitedPods(t.MaxENIs, t.IPv4PerENI, 0)
	}
	kube := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(KubeReservedCPU(t.VCPUs*1000), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(KubeReservedMemoryMiB(pods)*mebi, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(gibi, resource.BinarySI),
	}
	for k, v := range o.KubeReserved {
		kube[k] = v.DeepCopy()
	}
	var system corev1.ResourceList
	if len(o.SystemReserved) > 0 {
		system = o.SystemReserved.DeepCopy()
	}
	eviction := corev1.ResourceList{
		corev1.ResourceMemory:           *resource.NewQuantity(100*mebi, resource.BinarySI),
		corev1.ResourceEphemeralStorage: percentOf(capacity[corev1.ResourceEphemeralStorage], 10),
	}
	for signal, res := range map[string]corev1.ResourceName{"memory.available": corev1.ResourceMemory, "nodefs.available": corev1.ResourceEphemeralStorage} {
		v, ok := o.EvictionHard[signal]
		if !ok {
			continue
		}
		if q, err := evictionQuantity(v, capacity[res]); err == nil {
			eviction[res] = q
		}
	}
	return nodeplan.Overhead{KubeReserved: kube, SystemReserved: system, EvictionThreshold: eviction}
}

// percentOf returns pct percent of q, rounded up to a whole unit.
func percentOf(q resource.Quantity, pct float64) resource.Quantity {
	v := int64(math.Ceil(float64(q.Value()) * pct / 100))
	return *resource.NewQuantity(v, q.Format)
}

func evictionQuantity(v string, capacity resource.Quantity) (resource.Quantity, error) {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 0 || f > 100 {
			return resource.Quantity{}, fmt.Errorf("ec2: eviction threshold %q is not a percentage", v)
		}
		return percentOf(capacity, f), nil
	}
	return resource.ParseQuantity(v)
}

// Validate reports every invalid field of o at once.
func (o CapacityOptions) Validate() error {
	var errs []error
	fe := func(field, value, expected string) {
		errs = append(errs, &nodeplan.FieldError{Object: "ec2 CapacityOptions", Field: field, Value: value, Expected: expected})
	}
	switch o.family() {
	case "AL2", "AL2023", "Bottlerocket", "Windows2019", "Windows2022", "Custom":
	default:
		fe("Family", o.Family, "AL2, AL2023, Bottlerocket, Windows2019, Windows2022 or Custom")
	}
	if o.MaxPods < 0 {
		fe("MaxPods", fmt.Sprint(o.MaxPods), "non-negative")
	}
	if o.PodsPerCore < 0 {
		fe("PodsPerCore", fmt.Sprint(o.PodsPerCore), "non-negative")
	}
	if o.ReservedENIs < 0 {
		fe("ReservedENIs", fmt.Sprint(o.ReservedENIs), "non-negative")
	}
	if o.VMMemoryOverhead >= 1 {
		fe("VMMemoryOverhead", fmt.Sprint(o.VMMemoryOverhead), "a fraction below 1")
	}
	for k, v := range o.EvictionHard {
		if k != "memory.available" && k != "nodefs.available" {
			fe("EvictionHard", k, "memory.available or nodefs.available")
			continue
		}
		if _, err := evictionQuantity(v, resource.MustParse("1Gi")); err != nil {
			fe("EvictionHard["+k+"]", v, "a quantity or a percentage")
		}
	}
	return joinErrors(errs)
}
