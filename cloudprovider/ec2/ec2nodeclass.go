package ec2

import (
	"errors"
	"fmt"
	"github.com/nodeplan/nodeplan"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// NodeClass is Karpenter's karpenter.k8s.aws/v1 EC2NodeClass: how nodes are launched on EC2 —
// which machine image, subnets, security groups and instance role, what disks and
// instance-metadata settings, what user data and tags. [nodeplan.DecodeManifests] reads that
// YAML into it (this package registers the kind; see [NodeClasses]). A NodePool names its
// class in [nodeplan.NodeClaimTemplate].NodeClassRef.
//
// It is plain data: resolving selector terms to AMI, subnet and security-group IDs is the
// [Provider]'s job. Zero fields mean "the default" as documented on each field;
// [NodeClass.Validate] reports every invalid field at once.
type NodeClass struct {
	// Name identifies the class; NodePools refer to it by this name.
	Name string
	// AMIFamily selects how nodes bootstrap (the user-data format and default block devices):
	// AL2023, Bottlerocket, Windows2019, Windows2022 or Custom. It may be empty when an AMI
	// alias names the family. AL2 decodes but fails validation: Amazon Linux 2 is end-of-life
	// and nodeplan does not bootstrap it (the error says what to use instead).
	AMIFamily AMIFamily
	// AMISelectorTerms choose the machine images; an image matching any term may be used, the
	// newest per architecture winning. An alias term must be the only term.
	AMISelectorTerms []AMISelectorTerm
	// SubnetSelectorTerms choose the subnets nodes launch in; a subnet matching any term is used.
	// The zones of those subnets are the zones the class offers.
	SubnetSelectorTerms []SubnetSelectorTerm
	// SecurityGroupSelectorTerms choose the security groups attached to every node; all groups
	// matching any term are attached.
	SecurityGroupSelectorTerms []SecurityGroupSelectorTerm
	// CapacityReservationSelectorTerms choose on-demand capacity reservations nodes may launch
	// into (the "reserved" capacity type). Empty means none.
	CapacityReservationSelectorTerms []CapacityReservationSelectorTerm
	// Role is the IAM role for the nodes' instance profile, which the provider creates and
	// manages. Exactly one of Role and InstanceProfile is set.
	Role string
	// InstanceProfile is an existing IAM instance profile to launch nodes with, for accounts
	// where the provider may not create profiles. Exactly one of Role and InstanceProfile is set.
	InstanceProfile string
	// Kubelet overrides kubelet settings on every node; its zero value keeps the AMI family's
	// defaults.
	Kubelet KubeletConfiguration
	// BlockDeviceMappings are the volumes attached at launch; empty means the AMI family's
	// default root volume (20Gi gp3 for AL2023).
	BlockDeviceMappings []BlockDeviceMapping
	// InstanceStorePolicy says what to do with local NVMe instance stores: empty leaves them
	// alone, [InstanceStoreRAID0] stripes them and uses the array for kubelet and containers.
	InstanceStorePolicy InstanceStorePolicy
	// MetadataOptions configure the instance metadata service (IMDS) of every node.
	MetadataOptions MetadataOptions
	// UserData is merged with (AL2, AL2023, Bottlerocket, Windows) or, for the Custom family,
	// used instead of the bootstrap user data the provider generates.
	UserData string
	// Tags are put on every instance, volume and network interface launched. Keys the
	// provider sets itself (karpenter.sh/nodepool, kubernetes.io/cluster/…) are not allowed.
	Tags map[string]string
	// AssociatePublicIPAddress, when set, overrides the subnet's choice of giving nodes a
	// public IPv4 address; nil keeps the subnet's setting.
	AssociatePublicIPAddress *bool
	// DetailedMonitoring turns on 1-minute CloudWatch metrics for every instance.
	DetailedMonitoring bool
}

// errAL2Expected is what an AL2 class is told instead.
const errAL2Expected = "AL2023 or Bottlerocket: Amazon Linux 2 is end-of-life (EKS publishes no AL2 images from Kubernetes 1.33 on) " +
	"and nodeplan does not bootstrap it; use amiSelectorTerms [{alias: al2023@latest}] (or amiFamily: AL2023 with your own AL2023 image terms), " +
	"or bottlerocket@latest"

// AMIFamily names how a node's image bootstraps.
type AMIFamily string

// The AMI families, in Karpenter's spelling.
const (
	AMIFamilyAL2          AMIFamily = "AL2"
	AMIFamilyAL2023       AMIFamily = "AL2023"
	AMIFamilyBottlerocket AMIFamily = "Bottlerocket"
	AMIFamilyWindows2019  AMIFamily = "Windows2019"
	AMIFamilyWindows2022  AMIFamily = "Windows2022"
	// AMIFamilyCustom passes UserData through untouched: the image bootstraps itself (a
	// kubeadm join, for example) and must register with the labels and taints of its NodeClaim.
	AMIFamilyCustom AMIFamily = "Custom"
)

var amiFamilies = []AMIFamily{AMIFamilyAL2, AMIFamilyAL2023, AMIFamilyBottlerocket, AMIFamilyWindows2019, AMIFamilyWindows2022, AMIFamilyCustom}

// Valid reports whether f is one of the known families.
func (f AMIFamily) Valid() bool { return slices.Contains(amiFamilies, f) }

// AMISelectorTerm selects machine images. Alias stands alone; ID stands alone; the other
// fields combine (an image must match all of them).
type AMISelectorTerm struct {
	// Alias names an EKS-optimized image by family and version, "family@version": al2023@latest,
	// al2023@v20240807, bottlerocket@v1.20.4. It implies the AMI family.
	Alias string
	// ID is an image ID, ami-….
	ID string
	// Name matches the image name; * wildcards are allowed.
	Name string
	// Owner restricts Name or Tags to images owned by an account ID or alias ("self", "amazon").
	Owner string
	// SSMParameter names an SSM parameter whose value is an image ID.
	SSMParameter string
	// Tags must all be on the image; a value of * matches any value.
	Tags map[string]string
}

// SubnetSelectorTerm selects subnets by ID or by tags (all of which must match).
type SubnetSelectorTerm struct {
	// ID is a subnet ID, subnet-….
	ID string
	// Tags must all be on the subnet; a value of * matches any value.
	Tags map[string]string
}

// SecurityGroupSelectorTerm selects security groups by ID, or by name and tags.
type SecurityGroupSelectorTerm struct {
	// ID is a security-group ID, sg-….
	ID string
	// Name is the group's name.
	Name string
	// Tags must all be on the group; a value of * matches any value.
	Tags map[string]string
}

// CapacityReservationSelectorTerm selects on-demand capacity reservations by ID, or by tags
// and owning account.
type CapacityReservationSelectorTerm struct {
	// ID is a reservation ID, cr-….
	ID string
	// OwnerID is the account that owns the reservation (shared reservations).
	OwnerID string
	// Tags must all be on the reservation.
	Tags map[string]string
}

// BlockDeviceMapping attaches one volume at launch.
type BlockDeviceMapping struct {
	// DeviceName is where the volume appears, e.g. /dev/xvda.
	DeviceName string
	// EBS describes the volume; nil leaves the device to the AMI's own mapping.
	EBS *BlockDevice
	// RootVolume marks the volume the kubelet and container runtime use, whose size becomes
	// the node's ephemeral-storage. At most one mapping is the root volume.
	RootVolume bool
}

// BlockDevice is an EBS volume.
type BlockDevice struct {
	// VolumeSize is the size, e.g. 100Gi; zero means the snapshot's or AMI's size.
	VolumeSize resource.Quantity
	// VolumeType is standard, gp2, gp3, io1, io2, st1 or sc1; empty means gp3 for new volumes.
	VolumeType string
	// IOPS provisions I/O operations per second (gp3, io1, io2); zero means the type's baseline.
	IOPS int64
	// Throughput provisions MiB/s (gp3 only); zero means the 125 MiB/s baseline.
	Throughput int64
	// Encrypted, when set, says whether the volume is encrypted; nil uses the account default.
	Encrypted *bool
	// KMSKeyID is the KMS key that encrypts the volume; empty means the AWS-managed EBS key.
	KMSKeyID string
	// DeleteOnTermination, when set, says whether the volume goes with the instance; nil means
	// it does.
	DeleteOnTermination *bool
	// SnapshotID is a snapshot to create the volume from, snap-….
	SnapshotID string
	// VolumeInitializationRate is how fast (MiB/s) a volume from a snapshot is initialized;
	// zero means EBS's default.
	VolumeInitializationRate int32
}

// InstanceStorePolicy says how local instance-store disks are used.
type InstanceStorePolicy string

// InstanceStoreRAID0 stripes all instance-store disks into one array for the kubelet and
// container runtime, and counts it as the node's ephemeral-storage.
const InstanceStoreRAID0 InstanceStorePolicy = "RAID0"

// MetadataOptions configure the instance metadata service. A zero field means Karpenter's
// default, which [MetadataOptions.WithDefaults] fills in: endpoint enabled, IPv6 endpoint
// disabled, a hop limit of 1 (pods cannot reach IMDS through the node) and IMDSv2 tokens
// required.
type MetadataOptions struct {
	// HTTPEndpoint is "enabled" or "disabled": whether IMDS answers at all.
	HTTPEndpoint string
	// HTTPProtocolIPv6 is "enabled" or "disabled": whether IMDS also answers on its IPv6 address.
	HTTPProtocolIPv6 string
	// HTTPPutResponseHopLimit is how many network hops an IMDSv2 token response may travel,
	// 1-64. 1 keeps it on the host; 2 lets pods without host networking reach it.
	HTTPPutResponseHopLimit int64
	// HTTPTokens is "required" (IMDSv2 only) or "optional" (IMDSv1 allowed too).
	HTTPTokens string
}

// WithDefaults returns m with every zero field set to its default.
func (m MetadataOptions) WithDefaults() MetadataOptions {
	if m.HTTPEndpoint == "" {
		m.HTTPEndpoint = "enabled"
	}
	if m.HTTPProtocolIPv6 == "" {
		m.HTTPProtocolIPv6 = "disabled"
	}
	if m.HTTPPutResponseHopLimit == 0 {
		m.HTTPPutResponseHopLimit = 1
	}
	if m.HTTPTokens == "" {
		m.HTTPTokens = "required"
	}
	return m
}

// KubeletConfiguration overrides kubelet settings. Zero fields keep the defaults of the AMI
// family and the provider (maxPods from the instance type's network interfaces, reservations
// from the provider's formulas).
type KubeletConfiguration struct {
	// ClusterDNS are the IP addresses of the cluster DNS servers pods are told to use.
	ClusterDNS []string
	// MaxPods caps the pods on a node; 0 means the provider's default for the instance type.
	MaxPods int32
	// PodsPerCore caps the pods per vCPU (the lower of this and MaxPods wins); 0 means no cap.
	PodsPerCore int32
	// SystemReserved is kept for OS daemons: cpu, memory, ephemeral-storage, pid.
	SystemReserved corev1.ResourceList
	// KubeReserved is kept for the kubelet and container runtime: cpu, memory,
	// ephemeral-storage, pid.
	KubeReserved corev1.ResourceList
	// EvictionHard are signals (memory.available, nodefs.available…) with thresholds (a
	// quantity or a percentage) at which the kubelet evicts pods at once.
	EvictionHard map[string]string
	// EvictionSoft are thresholds at which the kubelet evicts pods after the signal's
	// grace period in EvictionSoftGracePeriod.
	EvictionSoft map[string]string
	// EvictionSoftGracePeriod is how long each soft signal must hold before evicting.
	EvictionSoftGracePeriod map[string]time.Duration
	// EvictionMaxPodGracePeriod caps, in seconds, the termination grace period of pods evicted
	// under soft thresholds; 0 means the pods' own.
	EvictionMaxPodGracePeriod int32
	// ImageGCHighThresholdPercent is the disk usage at which image garbage collection always
	// runs, 0-100; 0 means the kubelet's default (85).
	ImageGCHighThresholdPercent int32
	// ImageGCLowThresholdPercent is the disk usage image garbage collection frees down to,
	// 0-100 and below the high threshold; 0 means the kubelet's default (80).
	ImageGCLowThresholdPercent int32
	// CPUCFSQuota, when set, says whether CPU limits are enforced with CFS quota; nil means
	// they are.
	CPUCFSQuota *bool
}

var (
	amiIDPattern      = regexp.MustCompile(`^ami-[0-9a-z]+$`)
	subnetIDPattern   = regexp.MustCompile(`^subnet-[0-9a-z]+$`)
	sgIDPattern       = regexp.MustCompile(`^sg-[0-9a-z]+$`)
	crIDPattern       = regexp.MustCompile(`^cr-[0-9a-z]+$`)
	snapshotIDPattern = regexp.MustCompile(`^snap-[0-9a-z]+$`)
	aliasVersion      = regexp.MustCompile(`^(latest|v?[0-9][0-9A-Za-z._-]*)$`)
)

// amiAliasFamilies maps alias families to the AMI family they imply.
var amiAliasFamilies = map[string]AMIFamily{
	"al2": AMIFamilyAL2, "al2023": AMIFamilyAL2023, "bottlerocket": AMIFamilyBottlerocket,
	"windows2019": AMIFamilyWindows2019, "windows2022": AMIFamilyWindows2022,
}

// ParseAMIAlias splits an alias "family@version" and returns the AMI family it implies. Windows
// families take only the version "latest".
func ParseAMIAlias(alias string) (family AMIFamily, version string, err error) {
	name, version, ok := strings.Cut(alias, "@")
	family, known := amiAliasFamilies[name]
	switch {
	case !ok || name == "" || version == "":
		return "", "", fmt.Errorf("%q is not an alias of the form family@version (e.g. al2023@latest)", alias)
	case !known:
		return "", "", fmt.Errorf("%q has unknown family %q (want al2, al2023, bottlerocket, windows2019 or windows2022)", alias, name)
	case !aliasVersion.MatchString(version):
		return "", "", fmt.Errorf("%q has invalid version %q (want latest or a version such as v20240807)", alias, version)
	case (family == AMIFamilyWindows2019 || family == AMIFamilyWindows2022) && version != "latest":
		return "", "", fmt.Errorf("%q: Windows aliases take only the version latest", alias)
	}
	return family, version, nil
}

// ResolvedAMIFamily returns the class's AMI family: AMIFamily if set, otherwise the family its
// alias implies, otherwise empty.
func (c *NodeClass) ResolvedAMIFamily() AMIFamily {
	if c.AMIFamily != "" {
		return c.AMIFamily
	}
	for _, t := range c.AMISelectorTerms {
		if f, _, err := ParseAMIAlias(t.Alias); err == nil {
			return f
		}
	}
	return ""
}

// restrictedTagKeys are tags the provider sets on every instance itself.
var restrictedTagKeys = []string{nodeplan.LabelNodePool, "karpenter.sh/nodeclaim", "eks:eks-cluster-name", "karpenter.k8s.aws/ec2nodeclass"}

var (
	volumeTypes      = []string{"standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"}
	reservedKeys     = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, "pid"}
	evictionSignals  = []string{"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree", "pid.available"}
	maxEBSVolumeSize = resource.MustParse("64Ti")
	hundred          = resource.MustParse("100")
)

// Validate reports every invalid field of c, each as a [*nodeplan.FieldError] whose Field is the path
// in the karpenter.k8s.aws/v1 manifest (e.g. spec.metadataOptions.httpTokens), joined with
// errors.Join. It checks the rules Karpenter's CRD enforces: exactly one of role and
// instanceProfile; at least one AMI, subnet and security-group term, each well formed (an
// alias alone and of the form family@version, IDs with the right prefix); an AMI family,
// given or implied by the alias and consistent with it; restricted tags; volume sizes and
// types; metadata options (httpTokens required or optional, a hop limit of 1-64); kubelet
// reservations, eviction thresholds and image-GC percentages.
func (c *NodeClass) Validate() error {
	v := classValidator{object: fmt.Sprintf("EC2NodeClass %q", c.Name)}
	if c.Name == "" {
		v.object = "EC2NodeClass"
		v.fail("metadata.name", "", "required")
	} else if errs := validation.IsDNS1123Subdomain(c.Name); len(errs) > 0 {
		v.fail("metadata.name", c.Name, "a valid object name: "+strings.Join(errs, "; "))
	}
	switch {
	case c.Role == "" && c.InstanceProfile == "":
		v.fail("spec", "", "exactly one of role and instanceProfile is required")
	case c.Role != "" && c.InstanceProfile != "":
		v.fail("spec", "", "role and instanceProfile are mutually exclusive; set only one")
	}
	v.amiTerms(c)
	switch {
	case c.AMIFamily == "Ubuntu":
		v.fail("spec.amiFamily", string(c.AMIFamily), "Custom: Karpenter v1 removed the Ubuntu family; set amiFamily: Custom, "+
			"select your Ubuntu image with amiSelectorTerms (id, name+owner or tags) and join in userData (or with the EC2 provider's kubeadm join)")
	case c.AMIFamily != "" && !c.AMIFamily.Valid():
		v.fail("spec.amiFamily", string(c.AMIFamily), "an AMI family: AL2023, Bottlerocket, Windows2019, Windows2022 or Custom")
	case c.ResolvedAMIFamily() == AMIFamilyAL2:
		field, value := "spec.amiFamily", string(c.AMIFamily)
		if c.AMIFamily == "" {
			field, value = "spec.amiSelectorTerms[0].alias", c.AMISelectorTerms[0].Alias
		}
		v.fail(field, value, errAL2Expected)
	}
	if len(c.SubnetSelectorTerms) == 0 {
		v.fail("spec.subnetSelectorTerms", "", "at least one term is required")
	}
	for i, t := range c.SubnetSelectorTerms {
		p := fmt.Sprintf("spec.subnetSelectorTerms[%d]", i)
		v.term(p, t.ID, subnetIDPattern, "a subnet ID (subnet-…)", t.Tags, nil)
	}
	if len(c.SecurityGroupSelectorTerms) == 0 {
		v.fail("spec.securityGroupSelectorTerms", "", "at least one term is required")
	}
	for i, t := range c.SecurityGroupSelectorTerms {
		p := fmt.Sprintf("spec.securityGroupSelectorTerms[%d]", i)
		v.term(p, t.ID, sgIDPattern, "a security-group ID (sg-…)", t.Tags, map[string]string{"name": t.Name})
	}
	for i, t := range c.CapacityReservationSelectorTerms {
		p := fmt.Sprintf("spec.capacityReservationSelectorTerms[%d]", i)
		v.term(p, t.ID, crIDPattern, "a capacity-reservation ID (cr-…)", t.Tags, map[string]string{"ownerID": t.OwnerID})
	}
	for _, k := range sortedKeys(c.Tags) {
		if k == "" || slices.Contains(restrictedTagKeys, k) || strings.HasPrefix(k, "kubernetes.io/cluster/") {
			v.fail("spec.tags", k, "an allowed tag key (the provider sets this one itself)")
		}
	}
	v.blockDevices(c.BlockDeviceMappings)
	if c.InstanceStorePolicy != "" && c.InstanceStorePolicy != InstanceStoreRAID0 {
		v.fail("spec.instanceStorePolicy", string(c.InstanceStorePolicy), "RAID0")
	}
	v.metadata(c.MetadataOptions)
	v.kubelet(c.Kubelet)
	return v.err()
}

// classValidator collects the field errors of one EC2NodeClass.
type classValidator struct {
	object string
	errs   []error
}

func (v *classValidator) fail(field, value, expected string) {
	v.errs = append(v.errs, &nodeplan.FieldError{Object: v.object, Field: field, Value: value, Expected: expected})
}

func (v *classValidator) err() error { return errors.Join(v.errs...) }

func (v *classValidator) amiTerms(c *NodeClass) {
	if len(c.AMISelectorTerms) == 0 {
		v.fail("spec.amiSelectorTerms", "", "at least one term is required (e.g. alias: al2023@latest)")
		return
	}
	hasAlias := false
	for i, t := range c.AMISelectorTerms {
		p := fmt.Sprintf("spec.amiSelectorTerms[%d]", i)
		switch {
		case t.Alias != "":
			hasAlias = true
			if len(c.AMISelectorTerms) > 1 {
				v.fail(p+".alias", t.Alias, "alone: an alias term must be the only AMI selector term")
			}
			if t.ID != "" || t.Name != "" || t.Owner != "" || t.SSMParameter != "" || len(t.Tags) > 0 {
				v.fail(p, "", "alias cannot be combined with id, name, owner, ssmParameter or tags")
			}
			family, _, err := ParseAMIAlias(t.Alias)
			if err != nil {
				v.fail(p+".alias", t.Alias, "an alias of the form family@version, e.g. al2023@latest")
			} else if c.AMIFamily != "" && c.AMIFamily != family {
				v.fail("spec.amiFamily", string(c.AMIFamily), fmt.Sprintf("consistent with the alias %q (omit amiFamily or set %s)", t.Alias, family))
			}
		case t.ID != "":
			if !amiIDPattern.MatchString(t.ID) {
				v.fail(p+".id", t.ID, "an AMI ID (ami-…)")
			}
			if t.Name != "" || t.Owner != "" || t.SSMParameter != "" || len(t.Tags) > 0 {
				v.fail(p, "", "id cannot be combined with name, owner, ssmParameter or tags")
			}
		case t.SSMParameter != "":
			if t.Name != "" || t.Owner != "" || len(t.Tags) > 0 {
				v.fail(p, "", "ssmParameter cannot be combined with name, owner or tags")
			}
		case t.Name == "" && len(t.Tags) == 0:
			v.fail(p, "", "one of alias, id, name, ssmParameter or tags is required")
		}
		v.tags(p+".tags", t.Tags)
	}
	if !hasAlias && c.AMIFamily == "" {
		v.fail("spec.amiFamily", "", "required unless an amiSelectorTerms alias names the family")
	}
}

// term checks a selector term that is either an ID alone or a combination of other fields.
func (v *classValidator) term(path, id string, idPattern *regexp.Regexp, idDesc string, tags, others map[string]string) {
	set := len(tags) > 0
	for _, o := range others {
		set = set || o != ""
	}
	switch {
	case id != "" && set:
		v.fail(path, "", "id cannot be combined with other fields")
	case id != "" && !idPattern.MatchString(id):
		v.fail(path+".id", id, idDesc)
	case id == "" && !set:
		names := []string{"id", "tags"}
		for k := range others {
			names = append(names, k)
		}
		slices.Sort(names)
		v.fail(path, "", "one of "+strings.Join(names, ", ")+" is required")
	}
	v.tags(path+".tags", tags)
}

func (v *classValidator) tags(path string, tags map[string]string) {
	for _, k := range sortedKeys(tags) {
		if k == "" {
			v.fail(path, "", "tag keys must not be empty")
		} else if tags[k] == "" {
			v.fail(path+"."+k, "", "a tag value (use * to match any value)")
		}
	}
}

func (v *classValidator) blockDevices(bdms []BlockDeviceMapping) {
	roots := 0
	for i, m := range bdms {
		p := fmt.Sprintf("spec.blockDeviceMappings[%d]", i)
		if m.RootVolume {
			roots++
			if roots == 2 {
				v.fail(p+".rootVolume", "true", "set on at most one block device mapping")
			}
		}
		if m.DeviceName == "" {
			v.fail(p+".deviceName", "", "required, e.g. /dev/xvda")
		}
		if m.EBS == nil {
			continue
		}
		e := m.EBS
		if s := e.VolumeSize.Sign(); s < 0 || (s > 0 && e.VolumeSize.Cmp(maxEBSVolumeSize) > 0) {
			v.fail(p+".ebs.volumeSize", e.VolumeSize.String(), "a volume size between 1Gi and 64Ti")
		}
		if e.VolumeType != "" && !slices.Contains(volumeTypes, e.VolumeType) {
			v.fail(p+".ebs.volumeType", e.VolumeType, "an EBS volume type: standard, gp2, gp3, io1, io2, st1 or sc1")
		}
		if e.IOPS < 0 {
			v.fail(p+".ebs.iops", fmt.Sprint(e.IOPS), "a non-negative number of IOPS")
		} else if e.IOPS > 0 && e.VolumeType != "gp3" && e.VolumeType != "io1" && e.VolumeType != "io2" {
			v.fail(p+".ebs.iops", fmt.Sprint(e.IOPS), "set only for gp3, io1 and io2 volumes")
		}
		if e.Throughput < 0 {
			v.fail(p+".ebs.throughput", fmt.Sprint(e.Throughput), "a non-negative throughput in MiB/s")
		} else if e.Throughput > 0 && e.VolumeType != "gp3" {
			v.fail(p+".ebs.throughput", fmt.Sprint(e.Throughput), "set only for gp3 volumes")
		}
		if e.SnapshotID != "" && !snapshotIDPattern.MatchString(e.SnapshotID) {
			v.fail(p+".ebs.snapshotID", e.SnapshotID, "a snapshot ID (snap-…)")
		}
		if e.VolumeInitializationRate != 0 && (e.VolumeInitializationRate < 100 || e.VolumeInitializationRate > 300) {
			v.fail(p+".ebs.volumeInitializationRate", fmt.Sprint(e.VolumeInitializationRate), "a rate of 100-300 MiB/s")
		}
	}
}

func (v *classValidator) metadata(m MetadataOptions) {
	onOff := func(field, val string) {
		if val != "" && val != "enabled" && val != "disabled" {
			v.fail("spec.metadataOptions."+field, val, "enabled or disabled")
		}
	}
	onOff("httpEndpoint", m.HTTPEndpoint)
	onOff("httpProtocolIPv6", m.HTTPProtocolIPv6)
	if m.HTTPPutResponseHopLimit != 0 && (m.HTTPPutResponseHopLimit < 1 || m.HTTPPutResponseHopLimit > 64) {
		v.fail("spec.metadataOptions.httpPutResponseHopLimit", fmt.Sprint(m.HTTPPutResponseHopLimit), "a hop limit of 1-64")
	}
	if m.HTTPTokens != "" && m.HTTPTokens != "required" && m.HTTPTokens != "optional" {
		v.fail("spec.metadataOptions.httpTokens", m.HTTPTokens, "required (IMDSv2) or optional")
	}
}

func (v *classValidator) kubelet(k KubeletConfiguration) {
	const p = "spec.kubelet."
	for i, ip := range k.ClusterDNS {
		if _, err := netip.ParseAddr(ip); err != nil {
			v.fail(fmt.Sprintf("%sclusterDNS[%d]", p, i), ip, "an IP address")
		}
	}
	if k.MaxPods < 0 {
		v.fail(p+"maxPods", fmt.Sprint(k.MaxPods), "a non-negative number of pods")
	}
	if k.PodsPerCore < 0 {
		v.fail(p+"podsPerCore", fmt.Sprint(k.PodsPerCore), "a non-negative number of pods")
	}
	if k.EvictionMaxPodGracePeriod < 0 {
		v.fail(p+"evictionMaxPodGracePeriod", fmt.Sprint(k.EvictionMaxPodGracePeriod), "a non-negative number of seconds")
	}
	for _, f := range []struct {
		field string
		rl    corev1.ResourceList
	}{{"systemReserved", k.SystemReserved}, {"kubeReserved", k.KubeReserved}} {
		field := f.field
		for _, name := range sortedKeys(f.rl) {
			q := f.rl[name]
			if !slices.Contains(reservedKeys, name) {
				v.fail(p+field, string(name), "a reservable resource: cpu, memory, ephemeral-storage or pid")
			} else if q.Sign() < 0 {
				v.fail(p+field+"."+string(name), q.String(), "a non-negative quantity")
			}
		}
	}
	for _, f := range []struct {
		field string
		m     map[string]string
	}{{"evictionHard", k.EvictionHard}, {"evictionSoft", k.EvictionSoft}} {
		field, m := f.field, f.m
		for _, sig := range sortedKeys(m) {
			if !slices.Contains(evictionSignals, sig) {
				v.fail(p+field, sig, "an eviction signal: "+strings.Join(evictionSignals, ", "))
			} else if !validThreshold(m[sig]) {
				v.fail(p+field+"."+sig, m[sig], "a threshold: a quantity such as 100Mi or a percentage such as 10%")
			}
		}
	}
	for _, sig := range sortedKeys(k.EvictionSoft) {
		if _, ok := k.EvictionSoftGracePeriod[sig]; !ok && slices.Contains(evictionSignals, sig) {
			v.fail(p+"evictionSoftGracePeriod", "", fmt.Sprintf("a grace period for soft eviction signal %s", sig))
		}
	}
	for _, sig := range sortedKeys(k.EvictionSoftGracePeriod) {
		if !slices.Contains(evictionSignals, sig) {
			v.fail(p+"evictionSoftGracePeriod", sig, "an eviction signal: "+strings.Join(evictionSignals, ", "))
		} else if _, ok := k.EvictionSoft[sig]; !ok {
			v.fail(p+"evictionSoftGracePeriod."+sig, "", "a matching evictionSoft threshold")
		} else if d := k.EvictionSoftGracePeriod[sig]; d < 0 {
			v.fail(p+"evictionSoftGracePeriod."+sig, d.String(), "a non-negative duration")
		}
	}
	pct := func(field string, n int32) {
		if n < 0 || n > 100 {
			v.fail(p+field, fmt.Sprint(n), "a percentage 0-100")
		}
	}
	pct("imageGCHighThresholdPercent", k.ImageGCHighThresholdPercent)
	pct("imageGCLowThresholdPercent", k.ImageGCLowThresholdPercent)
	if k.ImageGCHighThresholdPercent > 0 && k.ImageGCLowThresholdPercent > 0 && k.ImageGCLowThresholdPercent >= k.ImageGCHighThresholdPercent {
		v.fail(p+"imageGCLowThresholdPercent", fmt.Sprint(k.ImageGCLowThresholdPercent),
			fmt.Sprintf("below imageGCHighThresholdPercent (%d)", k.ImageGCHighThresholdPercent))
	}
}

// validThreshold reports whether s is an eviction threshold: a non-negative quantity or a
// percentage 0-100%.
func validThreshold(s string) bool {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		q, err := resource.ParseQuantity(p)
		return err == nil && q.Sign() >= 0 && q.Cmp(hundred) <= 0
	}
	q, err := resource.ParseQuantity(s)
	return err == nil && q.Sign() >= 0
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
