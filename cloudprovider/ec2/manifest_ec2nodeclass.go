package ec2

import (
	"fmt"
	"github.com/nodeplan/nodeplan"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The API version and kind of Karpenter's EC2NodeClass, which this package registers in
// [nodeplan.DefaultNodeClassKinds] so that every manifest stream of a program that links it
// reads EC2NodeClasses into [NodeClass] values.
const (
	NodeClassAPIVersion = "karpenter.k8s.aws/v1"
	KindNodeClass       = "EC2NodeClass"
)

func init() {
	nodeplan.DefaultNodeClassKinds.Register(nodeplan.NodeClassKind{APIVersion: NodeClassAPIVersion, Kind: KindNodeClass,
		Decode: decodeEC2NodeClass, Encode: encodeEC2NodeClass})
}

// DecodeNodeClasses is [nodeplan.DecodeManifests] for callers that want the EC2NodeClasses
// only.
func DecodeNodeClasses(data []byte) ([]NodeClass, error) {
	m, err := nodeplan.DecodeManifests(data)
	return NodeClasses(m), err
}

// NodeClasses returns the EC2NodeClasses of m, in document order.
func NodeClasses(m nodeplan.Manifests) []NodeClass {
	var out []NodeClass
	for _, c := range m.NodeClasses {
		if nc, ok := c.Spec.(NodeClass); ok {
			out = append(out, nc)
		}
	}
	return out
}

var ec2NodeClassHints = map[string]string{
	"launchTemplate": "launch templates were removed in Karpenter v1beta1; use the EC2NodeClass fields",
}

func decodeEC2NodeClass(name string, spec *nodeplan.ManifestObject) (any, error) {
	c := NodeClass{Name: name}
	family, _ := spec.Str("amiFamily")
	c.AMIFamily = AMIFamily(family)

	terms, _ := spec.Objects("amiSelectorTerms")
	for _, t := range terms {
		var term AMISelectorTerm
		term.Alias, _ = t.Str("alias")
		term.ID, _ = t.Str("id")
		term.Name, _ = t.Str("name")
		term.Owner, _ = t.Str("owner")
		term.SSMParameter, _ = t.Str("ssmParameter")
		term.Tags = t.StringMap("tags")
		t.Finish(nil)
		c.AMISelectorTerms = append(c.AMISelectorTerms, term)
	}
	subnets, _ := spec.Objects("subnetSelectorTerms")
	for _, t := range subnets {
		var term SubnetSelectorTerm
		term.ID, _ = t.Str("id")
		term.Tags = t.StringMap("tags")
		t.Finish(nil)
		c.SubnetSelectorTerms = append(c.SubnetSelectorTerms, term)
	}
	groups, _ := spec.Objects("securityGroupSelectorTerms")
	for _, t := range groups {
		var term SecurityGroupSelectorTerm
		term.ID, _ = t.Str("id")
		term.Name, _ = t.Str("name")
		term.Tags = t.StringMap("tags")
		t.Finish(nil)
		c.SecurityGroupSelectorTerms = append(c.SecurityGroupSelectorTerms, term)
	}
	reservations, _ := spec.Objects("capacityReservationSelectorTerms")
	for _, t := range reservations {
		var term CapacityReservationSelectorTerm
		term.ID, _ = t.Str("id")
		term.OwnerID, _ = t.Str("ownerID")
		term.Tags = t.StringMap("tags")
		t.Finish(nil)
		c.CapacityReservationSelectorTerms = append(c.CapacityReservationSelectorTerms, term)
	}

	c.Role, _ = spec.Str("role")
	c.InstanceProfile, _ = spec.Str("instanceProfile")
	c.Kubelet = decodeKubelet(spec.Object("kubelet"))

	bdms, _ := spec.Objects("blockDeviceMappings")
	for _, b := range bdms {
		var m BlockDeviceMapping
		m.DeviceName, _ = b.Str("deviceName")
		if root := b.Bool("rootVolume"); root != nil {
			m.RootVolume = *root
		}
		if b.Has("ebs") {
			e := b.Object("ebs")
			var dev BlockDevice
			dev.VolumeSize, _ = e.Quantity("volumeSize")
			dev.VolumeType, _ = e.Str("volumeType")
			dev.IOPS, _ = e.Int("iops", 0, math.MaxInt64)
			dev.Throughput, _ = e.Int("throughput", 0, math.MaxInt64)
			dev.Encrypted = e.Bool("encrypted")
			dev.KMSKeyID, _ = e.Str("kmsKeyID")
			dev.DeleteOnTermination = e.Bool("deleteOnTermination")
			dev.SnapshotID, _ = e.Str("snapshotID")
			rate, _ := e.Int("volumeInitializationRate", 0, math.MaxInt32)
			dev.VolumeInitializationRate = int32(rate)
			e.Finish(nil)
			m.EBS = &dev
		}
		b.Finish(nil)
		c.BlockDeviceMappings = append(c.BlockDeviceMappings, m)
	}

	policy, _ := spec.Str("instanceStorePolicy")
	c.InstanceStorePolicy = InstanceStorePolicy(policy)
	md := spec.Object("metadataOptions")
	c.MetadataOptions.HTTPEndpoint, _ = md.Str("httpEndpoint")
	c.MetadataOptions.HTTPProtocolIPv6, _ = md.Str("httpProtocolIPv6")
	c.MetadataOptions.HTTPPutResponseHopLimit, _ = md.Int("httpPutResponseHopLimit", 1, 64)
	c.MetadataOptions.HTTPTokens, _ = md.Str("httpTokens")
	md.Finish(nil)
	c.MetadataOptions = c.MetadataOptions.WithDefaults()
	c.UserData, _ = spec.Str("userData")
	c.Tags = spec.StringMap("tags")
	c.AssociatePublicIPAddress = spec.Bool("associatePublicIPAddress")
	if b := spec.Bool("detailedMonitoring"); b != nil {
		c.DetailedMonitoring = *b
	}
	spec.Finish(ec2NodeClassHints)
	return c, c.Validate()
}

func decodeKubelet(k *nodeplan.ManifestObject) KubeletConfiguration {
	var kc KubeletConfiguration
	kc.ClusterDNS, _ = k.Strings("clusterDNS")
	if len(kc.ClusterDNS) == 0 {
		kc.ClusterDNS = nil
	}
	int32Field := func(key string, lo int64) int32 {
		n, _ := k.Int(key, lo, math.MaxInt32)
		return int32(n)
	}
	kc.MaxPods = int32Field("maxPods", 0)
	kc.PodsPerCore = int32Field("podsPerCore", 0)
	kc.SystemReserved = k.Resources("systemReserved")
	kc.KubeReserved = k.Resources("kubeReserved")
	kc.EvictionHard = k.StringMap("evictionHard")
	kc.EvictionSoft = k.StringMap("evictionSoft")
	if grace := k.Object("evictionSoftGracePeriod"); len(grace.Keys()) > 0 {
		kc.EvictionSoftGracePeriod = make(map[string]time.Duration, len(grace.Keys()))
		for _, sig := range grace.Keys() {
			if d, ok := grace.Duration(sig); ok {
				kc.EvictionSoftGracePeriod[sig] = d
			}
		}
	}
	kc.EvictionMaxPodGracePeriod = int32Field("evictionMaxPodGracePeriod", 0)
	kc.ImageGCHighThresholdPercent = int32Field("imageGCHighThresholdPercent", 0)
	kc.ImageGCLowThresholdPercent = int32Field("imageGCLowThresholdPercent", 0)
	kc.CPUCFSQuota = k.Bool("cpuCFSQuota")
	k.Finish(nil)
	return kc
}

func encodeEC2NodeClass(spec any) ([]byte, error) {
	c, ok := spec.(NodeClass)
	if !ok {
		return nil, fmt.Errorf("ec2: an EC2NodeClass's Spec is %T, want an ec2.NodeClass", spec)
	}
	return EncodeNodeClass(c)
}

// EncodeNodeClass writes c as a karpenter.k8s.aws/v1 EC2NodeClass manifest. Decoding the
// output with [nodeplan.DecodeManifests] gives c back, with metadata options defaulted
// ([MetadataOptions.WithDefaults]). It does not validate c; see [NodeClass.Validate].
func EncodeNodeClass(c NodeClass) ([]byte, error) {
	var spec ec2NodeClassSpec
	s := &spec
	s.AMIFamily = string(c.AMIFamily)
	s.Role = c.Role
	s.InstanceProfile = c.InstanceProfile
	for _, t := range c.AMISelectorTerms {
		s.AMISelectorTerms = append(s.AMISelectorTerms, amiTermYAML{Alias: t.Alias, ID: t.ID, Name: t.Name,
			Owner: t.Owner, SSMParameter: t.SSMParameter, Tags: t.Tags})
	}
	for _, t := range c.SubnetSelectorTerms {
		s.SubnetSelectorTerms = append(s.SubnetSelectorTerms, termYAML{ID: t.ID, Tags: t.Tags})
	}
	for _, t := range c.SecurityGroupSelectorTerms {
		s.SecurityGroupSelectorTerms = append(s.SecurityGroupSelectorTerms, termYAML{ID: t.ID, Name: t.Name, Tags: t.Tags})
	}
	for _, t := range c.CapacityReservationSelectorTerms {
		s.CapacityReservationSelectorTerms = append(s.CapacityReservationSelectorTerms, termYAML{ID: t.ID, OwnerID: t.OwnerID, Tags: t.Tags})
	}
	if k := kubeletYAML(c.Kubelet); k != nil {
		s.Kubelet = k
	}
	for _, m := range c.BlockDeviceMappings {
		my := blockDeviceMappingYAML{DeviceName: m.DeviceName, RootVolume: m.RootVolume}
		if e := m.EBS; e != nil {
			my.EBS = &blockDeviceYAML{VolumeType: e.VolumeType, IOPS: e.IOPS, Throughput: e.Throughput,
				Encrypted: e.Encrypted, KMSKeyID: e.KMSKeyID, DeleteOnTermination: e.DeleteOnTermination,
				SnapshotID: e.SnapshotID, VolumeInitializationRate: e.VolumeInitializationRate}
			if !e.VolumeSize.IsZero() {
				my.EBS.VolumeSize = e.VolumeSize.String()
			}
		}
		s.BlockDeviceMappings = append(s.BlockDeviceMappings, my)
	}
	s.InstanceStorePolicy = string(c.InstanceStorePolicy)
	m := c.MetadataOptions.WithDefaults()
	s.MetadataOptions = &metadataOptionsYAML{HTTPEndpoint: m.HTTPEndpoint, HTTPProtocolIPv6: m.HTTPProtocolIPv6,
		HTTPPutResponseHopLimit: m.HTTPPutResponseHopLimit, HTTPTokens: m.HTTPTokens}
	s.UserData = c.UserData
	s.Tags = c.Tags
	s.AssociatePublicIPAddress = c.AssociatePublicIPAddress
	s.DetailedMonitoring = c.DetailedMonitoring
	return nodeplan.EncodeManifest(NodeClassAPIVersion, KindNodeClass, c.Name, spec)
}

func kubeletYAML(k KubeletConfiguration) *kubeletConfigYAML {
	out := &kubeletConfigYAML{ClusterDNS: k.ClusterDNS, MaxPods: k.MaxPods, PodsPerCore: k.PodsPerCore,
		SystemReserved: resourceStrings(k.SystemReserved), KubeReserved: resourceStrings(k.KubeReserved),
		EvictionHard: k.EvictionHard, EvictionSoft: k.EvictionSoft,
		EvictionMaxPodGracePeriod:   k.EvictionMaxPodGracePeriod,
		ImageGCHighThresholdPercent: k.ImageGCHighThresholdPercent,
		ImageGCLowThresholdPercent:  k.ImageGCLowThresholdPercent, CPUCFSQuota: k.CPUCFSQuota}
	if k.EvictionSoftGracePeriod != nil {
		out.EvictionSoftGracePeriod = make(map[string]string, len(k.EvictionSoftGracePeriod))
		for sig, d := range k.EvictionSoftGracePeriod {
			out.EvictionSoftGracePeriod[sig] = nodeplan.FormatDuration(d)
		}
	}
	if isZeroKubelet(*out) {
		return nil
	}
	return out
}

func isZeroKubelet(k kubeletConfigYAML) bool {
	return k.ClusterDNS == nil && k.MaxPods == 0 && k.PodsPerCore == 0 && k.SystemReserved == nil &&
		k.KubeReserved == nil && k.EvictionHard == nil && k.EvictionSoft == nil && k.EvictionSoftGracePeriod == nil &&
		k.EvictionMaxPodGracePeriod == 0 && k.ImageGCHighThresholdPercent == 0 && k.ImageGCLowThresholdPercent == 0 &&
		k.CPUCFSQuota == nil
}

func resourceStrings(rl corev1.ResourceList) map[string]string {
	if rl == nil {
		return nil
	}
	out := make(map[string]string, len(rl))
	for k, q := range rl {
		out[string(k)] = q.String()
	}
	return out
}

// The YAML shape of an EC2NodeClass, fields in the order Karpenter's documentation writes them.
type (
	ec2NodeClassSpec struct {
		AMIFamily                        string                   `yaml:"amiFamily,omitempty"`
		AMISelectorTerms                 []amiTermYAML            `yaml:"amiSelectorTerms,omitempty"`
		Role                             string                   `yaml:"role,omitempty"`
		InstanceProfile                  string                   `yaml:"instanceProfile,omitempty"`
		SubnetSelectorTerms              []termYAML               `yaml:"subnetSelectorTerms,omitempty"`
		SecurityGroupSelectorTerms       []termYAML               `yaml:"securityGroupSelectorTerms,omitempty"`
		CapacityReservationSelectorTerms []termYAML               `yaml:"capacityReservationSelectorTerms,omitempty"`
		AssociatePublicIPAddress         *bool                    `yaml:"associatePublicIPAddress,omitempty"`
		Kubelet                          *kubeletConfigYAML       `yaml:"kubelet,omitempty"`
		BlockDeviceMappings              []blockDeviceMappingYAML `yaml:"blockDeviceMappings,omitempty"`
		InstanceStorePolicy              string                   `yaml:"instanceStorePolicy,omitempty"`
		MetadataOptions                  *metadataOptionsYAML     `yaml:"metadataOptions,omitempty"`
		UserData                         string                   `yaml:"userData,omitempty"`
		Tags                             map[string]string        `yaml:"tags,omitempty"`
		DetailedMonitoring               bool                     `yaml:"detailedMonitoring,omitempty"`
	}
	termYAML struct {
		ID      string            `yaml:"id,omitempty"`
		Name    string            `yaml:"name,omitempty"`
		OwnerID string            `yaml:"ownerID,omitempty"`
		Tags    map[string]string `yaml:"tags,omitempty"`
	}
	amiTermYAML struct {
		Alias        string            `yaml:"alias,omitempty"`
		ID           string            `yaml:"id,omitempty"`
		Name         string            `yaml:"name,omitempty"`
		Owner        string            `yaml:"owner,omitempty"`
		SSMParameter string            `yaml:"ssmParameter,omitempty"`
		Tags         map[string]string `yaml:"tags,omitempty"`
	}
	kubeletConfigYAML struct {
		ClusterDNS                  []string          `yaml:"clusterDNS,omitempty"`
		MaxPods                     int32             `yaml:"maxPods,omitempty"`
		PodsPerCore                 int32             `yaml:"podsPerCore,omitempty"`
		SystemReserved              map[string]string `yaml:"systemReserved,omitempty"`
		KubeReserved                map[string]string `yaml:"kubeReserved,omitempty"`
		EvictionHard                map[string]string `yaml:"evictionHard,omitempty"`
		EvictionSoft                map[string]string `yaml:"evictionSoft,omitempty"`
		EvictionSoftGracePeriod     map[string]string `yaml:"evictionSoftGracePeriod,omitempty"`
		EvictionMaxPodGracePeriod   int32             `yaml:"evictionMaxPodGracePeriod,omitempty"`
		ImageGCHighThresholdPercent int32             `yaml:"imageGCHighThresholdPercent,omitempty"`
		ImageGCLowThresholdPercent  int32             `yaml:"imageGCLowThresholdPercent,omitempty"`
		CPUCFSQuota                 *bool             `yaml:"cpuCFSQuota,omitempty"`
	}
	blockDeviceMappingYAML struct {
		DeviceName string           `yaml:"deviceName"`
		RootVolume bool             `yaml:"rootVolume,omitempty"`
		EBS        *blockDeviceYAML `yaml:"ebs,omitempty"`
	}
	blockDeviceYAML struct {
		VolumeSize               string `yaml:"volumeSize,omitempty"`
		VolumeType               string `yaml:"volumeType,omitempty"`
		IOPS                     int64  `yaml:"iops,omitempty"`
		Throughput               int64  `yaml:"throughput,omitempty"`
		Encrypted                *bool  `yaml:"encrypted,omitempty"`
		KMSKeyID                 string `yaml:"kmsKeyID,omitempty"`
		DeleteOnTermination      *bool  `yaml:"deleteOnTermination,omitempty"`
		SnapshotID               string `yaml:"snapshotID,omitempty"`
		VolumeInitializationRate int32  `yaml:"volumeInitializationRate,omitempty"`
	}
	metadataOptionsYAML struct {
		HTTPEndpoint            string `yaml:"httpEndpoint,omitempty"`
		HTTPProtocolIPv6        string `yaml:"httpProtocolIPv6,omitempty"`
		HTTPPutResponseHopLimit int64  `yaml:"httpPutResponseHopLimit,omitempty"`
		HTTPTokens              string `yaml:"httpTokens,omitempty"`
	}
)
