package nodeplan

// Well-known label, annotation and taint keys. They are spelled exactly as Karpenter spells them so
// that manifests, nodeSelectors and dashboards written for Karpenter keep working unchanged.
const (
	// LabelNodePool names the NodePool that launched a node.
	LabelNodePool = "karpenter.sh/nodepool"
	// LabelCapacityType is the purchase option of a node: see [CapacityType].
	LabelCapacityType = "karpenter.sh/capacity-type"
	// LabelInitialized is "true" on a node once its startup taints are gone and its resources registered.
	LabelInitialized = "karpenter.sh/initialized"
	// LabelRegistered is "true" on a node once the kubelet registered it.
	LabelRegistered = "karpenter.sh/registered"

	// LabelZone is the availability zone of a node.
	LabelZone = "topology.kubernetes.io/zone"
	// LabelRegion is the region of a node.
	LabelRegion = "topology.kubernetes.io/region"
	// LabelInstanceType is the cloud instance type of a node.
	LabelInstanceType = "node.kubernetes.io/instance-type"
	// LabelArch is the CPU architecture (amd64, arm64).
	LabelArch = "kubernetes.io/arch"
	// LabelOS is the operating system (linux, windows).
	LabelOS = "kubernetes.io/os"
	// LabelHostname is the node's hostname; topology spread over it spreads pods over nodes.
	LabelHostname = "kubernetes.io/hostname"

	// AWS instance-type labels, as Karpenter's AWS provider sets them.
	LabelInstanceCategory       = "karpenter.k8s.aws/instance-category"
	LabelInstanceFamily         = "karpenter.k8s.aws/instance-family"
	LabelInstanceGeneration     = "karpenter.k8s.aws/instance-generation"
	LabelInstanceSize           = "karpenter.k8s.aws/instance-size"
	LabelInstanceCPU            = "karpenter.k8s.aws/instance-cpu"
	LabelInstanceCPUVendor      = "karpenter.k8s.aws/instance-cpu-manufacturer"
	LabelInstanceMemory         = "karpenter.k8s.aws/instance-memory"
	LabelInstanceHypervisor     = "karpenter.k8s.aws/instance-hypervisor"
	LabelInstanceGPUName        = "karpenter.k8s.aws/instance-gpu-name"
	LabelInstanceGPUVendor      = "karpenter.k8s.aws/instance-gpu-manufacturer"
	LabelInstanceGPUCount       = "karpenter.k8s.aws/instance-gpu-count"
	LabelInstanceGPUMemory      = "karpenter.k8s.aws/instance-gpu-memory"
	LabelInstanceLocalNVMe      = "karpenter.k8s.aws/instance-local-nvme"
	LabelInstanceNetworkBW      = "karpenter.k8s.aws/instance-network-bandwidth"
	LabelInstanceCapabilityFlex = "karpenter.k8s.aws/instance-capability-flex"

	// AnnotationDoNotDisrupt on a pod or node keeps graceful disruption away from it. On a pod the
	// value is "true" or a duration counted from the pod's start (see [DoNotDisrupt]).
	AnnotationDoNotDisrupt = "karpenter.sh/do-not-disrupt"
	// AnnotationMinValuesRelaxed on a NodeClaim says its instance types fall short of its
	// pool's minValues, launched anyway under MIN_VALUES_POLICY=BestEffort.
	AnnotationMinValuesRelaxed = "karpenter.sh/nodeclaim-min-values-relaxed"

	// TaintDisrupted is put on a node before it is drained, so no new pod lands on it.
	TaintDisrupted = "karpenter.sh/disrupted"
	// TaintUnregistered is put on a launched node until it has registered.
	TaintUnregistered = "karpenter.sh/unregistered"
)

// CapacityType is how an instance is bought: the value of [LabelCapacityType].
type CapacityType string

// The capacity types, in Karpenter's spelling.
const (
	CapacityTypeOnDemand CapacityType = "on-demand"
	CapacityTypeSpot     CapacityType = "spot"
	CapacityTypeReserved CapacityType = "reserved"
)

// Valid reports whether c is one of the known capacity types.
func (c CapacityType) Valid() bool {
	switch c {
	case CapacityTypeOnDemand, CapacityTypeSpot, CapacityTypeReserved:
		return true
	}
	return false
}

// IsWellKnownLabel reports whether key is a label a launched node gets from its instance type,
// offering or NodePool name rather than from its NodePool's labels. A pod may select on such a key
// even when no NodePool mentions it.
func IsWellKnownLabel(key string) bool {
	switch key {
	case LabelArch, LabelCapacityType, LabelHostname, LabelInstanceType, LabelNodePool, LabelOS, LabelRegion, LabelZone:
		return true
	}
	return false
}

// deprecatedLabels maps the deprecated beta node labels to the stable keys they mean.
var deprecatedLabels = map[string]string{
	"beta.kubernetes.io/instance-type":         LabelInstanceType,
	"failure-domain.beta.kubernetes.io/zone":   LabelZone,
	"failure-domain.beta.kubernetes.io/region": LabelRegion,
	"beta.kubernetes.io/arch":                  LabelArch,
	"beta.kubernetes.io/os":                    LabelOS,
}

// NormalizedLabel returns the stable key a deprecated beta label key means
// (beta.kubernetes.io/instance-type, failure-domain.beta.kubernetes.io/zone and /region,
// beta.kubernetes.io/arch and /os), and any other key unchanged. Karpenter reads requirements
// on the beta keys as requirements on the stable ones, as [NewRequirement] does; the kubelet and
// the cloud controller still put both on a node.
func NormalizedLabel(key string) string {
	if stable, ok := deprecatedLabels[key]; ok {
		return stable
	}
	return key
}
