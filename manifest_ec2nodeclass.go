package nodeplan

import (
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
)

var ec2NodeClassHints = map[string]string{
	"launchTemplate": "launch templates were removed in Karpenter v1beta1; use the EC2NodeClass fields",
}

func decodeEC2NodeClassSpec(w *walker, spec *node) EC2NodeClass {
	var c EC2NodeClass
	family, _ := spec.str("amiFamily")
	c.AMIFamily = AMIFamily(family)

	terms, _ := spec.objects("amiSelectorTerms")
	for _, t := range terms {
		var term AMISelectorTerm
		term.Alias, _ = t.str("alias")
		term.ID, _ = t.str("id")
		term.Name, _ = t.str("name")
		term.Owner, _ = t.str("owner")
		term.SSMParameter, _ = t.str("ssmParameter")
		term.Tags = t.stringMap("tags")
		t.finish(nil)
		c.AMISelectorTerms = append(c.AMISelectorTerms, term)
	}
	subnets, _ := spec.objects("subnetSelectorTerms")
	for _, t := range subnets {
		var term SubnetSelectorTerm
		term.ID, _ = t.str("id")
		term.Tags = t.stringMap("tags")
		t.finish(nil)
		c.SubnetSelectorTerms = append(c.SubnetSelectorTerms, term)
	}
	groups, _ := spec.objects("securityGroupSelectorTerms")
	for _, t := range groups {
		var term SecurityGroupSelectorTerm
		term.ID, _ = t.str("id")
		term.Name, _ = t.str("name")
		term.Tags = t.stringMap("tags")
		t.finish(nil)
		c.SecurityGroupSelectorTerms = append(c.SecurityGroupSelectorTerms, term)
	}
	reservations, _ := spec.objects("capacityReservationSelectorTerms")
	for _, t := range reservations {
		var term CapacityReservationSelectorTerm
		term.ID, _ = t.str("id")
		term.OwnerID, _ = t.str("ownerID")
		term.Tags = t.stringMap("tags")
		t.finish(nil)
		c.CapacityReservationSelectorTerms = append(c.CapacityReservationSelectorTerms, term)
	}

	c.Role, _ = spec.str("role")
	c.InstanceProfile, _ = spec.str("instanceProfile")
	c.Kubelet = decodeKubelet(w, spec.child("kubelet"))

	bdms, _ := spec.objects("blockDeviceMappings")
	for _, b := range bdms {
		var m BlockDeviceMapping
		m.DeviceName, _ = b.str("deviceName")
		if root := b.boolean("rootVolume"); root != nil {
			m.RootVolume = *root
		}
		if b.has("ebs") {
			e := b.child("ebs")
			var dev BlockDevice
			if e.has("volumeSize") {
				dev.VolumeSize, _ = w.quantity(e.at("volumeSize"), e.get("volumeSize"))
			}
			dev.VolumeType, _ = e.str("volumeType")
			dev.IOPS, _ = e.integer("iops", 0, math.MaxInt64)
			dev.Throughput, _ = e.integer("throughput", 0, math.MaxInt64)
			dev.Encrypted = e.boolean("encrypted")
			dev.KMSKeyID, _ = e.str("kmsKeyID")
			dev.DeleteOnTermination = e.boolean("deleteOnTermination")
			dev.SnapshotID, _ = e.str("snapshotID")
			rate, _ := e.integer("volumeInitializationRate", 0, math.MaxInt32)
			dev.VolumeInitializationRate = int32(rate)
			e.finish(nil)
			m.EBS = &dev
		}
		b.finish(nil)
		c.BlockDeviceMappings = append(c.BlockDeviceMappings, m)
	}

	policy, _ := spec.str("instanceStorePolicy")
	c.InstanceStorePolicy = InstanceStorePolicy(policy)
	md := spec.child("metadataOptions")
	c.MetadataOptions.HTTPEndpoint, _ = md.str("httpEndpoint")
	c.MetadataOptions.HTTPProtocolIPv6, _ = md.str("httpProtocolIPv6")
	c.MetadataOptions.HTTPPutResponseHopLimit, _ = md.integer("httpPutResponseHopLimit", 1, 64)
	c.MetadataOptions.HTTPTokens, _ = md.str("httpTokens")
	md.finish(nil)
	c.MetadataOptions = c.MetadataOptions.WithDefaults()
	c.UserData, _ = spec.str("userData")
	c.Tags = spec.stringMap("tags")
	c.AssociatePublicIPAddress = spec.boolean("associatePublicIPAddress")
	if b := spec.boolean("detailedMonitoring"); b != nil {
		c.DetailedMonitoring = *b
	}
	spec.finish(ec2NodeClassHints)
	return c
}

func decodeKubelet(w *walker, k *node) KubeletConfiguration {
	var kc KubeletConfiguration
	kc.ClusterDNS, _ = k.strings("clusterDNS")
	if len(kc.ClusterDNS) == 0 {
		kc.ClusterDNS = nil
	}
	int32Field := func(key string, lo int64) int32 {
		n, _ := k.integer(key, lo, math.MaxInt32)
		return int32(n)
	}
	kc.MaxPods = int32Field("maxPods", 0)
	kc.PodsPerCore = int32Field("podsPerCore", 0)
	kc.SystemReserved = k.resources("systemReserved")
	kc.KubeReserved = k.resources("kubeReserved")
	kc.EvictionHard = k.stringMap("evictionHard")
	kc.EvictionSoft = k.stringMap("evictionSoft")
	if grace := k.child("evictionSoftGracePeriod"); len(grace.m) > 0 {
		kc.EvictionSoftGracePeriod = make(map[string]time.Duration, len(grace.m))
		for _, sig := range sortedKeys(grace.m) {
			if d, ok := grace.duration(sig, false); ok {
				kc.EvictionSoftGracePeriod[sig] = d
			}
		}
	}
	kc.EvictionMaxPodGracePeriod = int32Field("evictionMaxPodGracePeriod", 0)
	kc.ImageGCHighThresholdPercent = int32Field("imageGCHighThresholdPercent", 0)
	kc.ImageGCLowThresholdPercent = int32Field("imageGCLowThresholdPercent", 0)
	kc.CPUCFSQuota = k.boolean("cpuCFSQuota")
	k.finish(nil)
	return kc
}

// EncodeEC2NodeClass writes c as a karpenter.k8s.aws/v1 EC2NodeClass manifest. Decoding the
// output with [DecodeManifests] gives c back, with metadata options defaulted
// ([MetadataOptions.WithDefaults]). It does not validate c; see [EC2NodeClass.Validate].
func EncodeEC2NodeClass(c EC2NodeClass) ([]byte, error) {
	doc := ec2NodeClassYAML{APIVersion: EC2NodeClassAPIVersion, Kind: KindEC2NodeClass, Metadata: metadataYAML{Name: c.Name}}
	s := &doc.Spec
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
	return marshalYAML(doc)
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
			out.EvictionSoftGracePeriod[sig] = formatDuration(d)
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
	ec2NodeClassYAML struct {
		APIVersion string           `yaml:"apiVersion"`
		Kind       string           `yaml:"kind"`
		Metadata   metadataYAML     `yaml:"metadata"`
		Spec       ec2NodeClassSpec `yaml:"spec"`
	}
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
