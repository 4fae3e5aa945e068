package ec2

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeplan/nodeplan"
)

func ptr[T any](v T) *T { return &v }

func mustReadFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// fieldErrors renders each error as `object: field=value`.
func fieldErrors(t *testing.T, err error) []string {
	t.Helper()
	var out []string
	if err == nil {
		return nil
	}
	var joined interface{ Unwrap() []error }
	errs := []error{err}
	if errors.As(err, &joined) {
		errs = joined.Unwrap()
	}
	for _, e := range errs {
		var fe *nodeplan.FieldError
		if !errors.As(e, &fe) {
			t.Errorf("error %q is not a *nodeplan.FieldError", e)
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s=%s", fe.Object, fe.Field, fe.Value))
	}
	return out
}

// The manifest stream reads EC2NodeClasses once this package is linked in (its init registers
// the kind), and writes them back unchanged.
func TestNodeClassManifests(t *testing.T) {
	m, err := nodeplan.DecodeManifests(mustReadFile(t, "testdata/ec2nodeclasses.yaml"))
	if err != nil {
		t.Fatalf("DecodeManifests(testdata/ec2nodeclasses.yaml): %v", err)
	}
	if len(m.NodeClasses) == 0 || len(NodeClasses(m)) != len(m.NodeClasses) {
		t.Fatalf("NodeClasses = %v, want the file's EC2NodeClasses, every one an ec2.NodeClass", m.NodeClasses)
	}
	out, err := nodeplan.EncodeManifests(m)
	if err != nil {
		t.Fatalf("EncodeManifests: %v", err)
	}
	again, err := nodeplan.DecodeManifests(out)
	if err != nil {
		t.Fatalf("DecodeManifests(EncodeManifests(m)): %v\n%s", err, out)
	}
	if diff := cmp.Diff(m, again); diff != "" {
		t.Errorf("decode(encode(m)) mismatch (-want +got):\n%s", diff)
	}

	// `kubectl get nodepools,ec2nodeclasses,nodeoverlays -o yaml`, which the root's tests read
	// with no kind registered.
	m, err = nodeplan.DecodeManifests(mustReadFile(t, "../../testdata/kubectl/get-nodepools-ec2nodeclasses-nodeoverlays.yaml"))
	if err != nil {
		t.Fatalf("DecodeManifests(kubectl get output): %v", err)
	}
	if classes := NodeClasses(m); len(classes) != 1 || classes[0].Name != "default" {
		t.Errorf("NodeClasses(kubectl get output) = %v, want [default]", m.NodeClasses)
	}
	for _, s := range m.Skipped {
		if s.Kind == KindNodeClass {
			t.Errorf("Skipped %+v, want it read", s)
		}
	}

	// Errors name the object and the field; Validate's come with those of decoding, once each.
	const input = "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: c}\nspec:\n" +
		"  amiSelectorTerms: [{alias: al2023}]\n  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n" +
		"  role: r\n  instanceProfile: p\n  metadataOptions: {httpTokens: maybe, httpPutResponseHopLimit: 65}\n  launchTemplate: lt\n"
	_, err = nodeplan.DecodeManifests([]byte(input))
	want := []string{`EC2NodeClass "c": spec.metadataOptions.httpPutResponseHopLimit=65`, `EC2NodeClass "c": spec.launchTemplate=`,
		`EC2NodeClass "c": spec=`, `EC2NodeClass "c": spec.amiSelectorTerms[0].alias=al2023`, `EC2NodeClass "c": spec.metadataOptions.httpTokens=maybe`}
	if diff := cmp.Diff(want, fieldErrors(t, err)); diff != "" {
		t.Errorf("DecodeManifests(bad EC2NodeClass) errors mismatch (-want +got):\n%s\nerror: %v", diff, err)
	}
	if err == nil || !strings.Contains(err.Error(), "launch templates were removed") {
		t.Errorf("DecodeManifests(launchTemplate) = %v, want the hint", err)
	}

	// The wrong version of the group is told which version to use.
	_, err = nodeplan.DecodeManifests([]byte(strings.Replace(input, "karpenter.k8s.aws/v1", "karpenter.k8s.aws/v1beta1", 1)))
	if err == nil || !strings.Contains(err.Error(), `apiVersion: "karpenter.k8s.aws/v1beta1" is not karpenter.k8s.aws/v1`) {
		t.Errorf("DecodeManifests(v1beta1 EC2NodeClass) = %v, want the version named", err)
	}
}

func TestDecodeNodeClasses(t *testing.T) {
	got, err := DecodeNodeClasses(mustReadFile(t, "testdata/ec2nodeclasses.yaml"))
	if err != nil {
		t.Fatalf("DecodeNodeClasses(testdata/ec2nodeclasses.yaml): %v", err)
	}
	discovery := map[string]string{"karpenter.sh/discovery": "demo"}
	want := []NodeClass{
		{
			Name:                       "default",
			AMIFamily:                  AMIFamilyAL2023,
			AMISelectorTerms:           []AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       "KarpenterNodeRole-demo",
			SubnetSelectorTerms:        []SubnetSelectorTerm{{Tags: discovery}, {ID: "subnet-0a1b2c3d4e5f60718"}},
			SecurityGroupSelectorTerms: []SecurityGroupSelectorTerm{{Tags: discovery}, {Name: "eks-cluster-sg-demo"}},
			MetadataOptions:            MetadataOptions{HTTPEndpoint: "enabled", HTTPProtocolIPv6: "disabled", HTTPPutResponseHopLimit: 1, HTTPTokens: "required"},
			BlockDeviceMappings: []BlockDeviceMapping{{
				DeviceName: "/dev/xvda",
				RootVolume: true,
				EBS: &BlockDevice{VolumeSize: resource.MustParse("100Gi"), VolumeType: "gp3", IOPS: 3000, Throughput: 125,
					Encrypted: ptr(true), DeleteOnTermination: ptr(true)},
			}},
			Kubelet: KubeletConfiguration{
				MaxPods:                     110,
				SystemReserved:              rl("cpu", "100m", "memory", "100Mi"),
				KubeReserved:                rl("cpu", "200m", "memory", "1Gi"),
				EvictionHard:                map[string]string{"memory.available": "5%", "nodefs.available": "10%"},
				EvictionSoft:                map[string]string{"memory.available": "10%"},
				EvictionSoftGracePeriod:     map[string]time.Duration{"memory.available": 90 * time.Second},
				ImageGCHighThresholdPercent: 85,
				ImageGCLowThresholdPercent:  80,
			},
			UserData: strings.Join([]string{
				"MIME-Version: 1.0", `Content-Type: multipart/mixed; boundary="BOUNDARY"`, "",
				"--BOUNDARY", "Content-Type: application/node.eks.aws", "",
				"apiVersion: node.eks.aws/v1alpha1", "kind: NodeConfig", "spec:", "  kubelet:", "    config:",
				"      shutdownGracePeriod: 30s", "--BOUNDARY--", "",
			}, "\n"),
			Tags:               map[string]string{"team": "platform", "managed-by": "karpenter"},
			DetailedMonitoring: true,
		},
		{
			Name:                       "gpu",
			AMIFamily:                  AMIFamilyAL2023,
			AMISelectorTerms:           []AMISelectorTerm{{Name: "amazon-eks-node-al2023-x86_64-nvidia-1.33-*", Owner: "amazon"}},
			Role:                       "KarpenterNodeRole-demo",
			SubnetSelectorTerms:        []SubnetSelectorTerm{{Tags: discovery}},
			SecurityGroupSelectorTerms: []SecurityGroupSelectorTerm{{Tags: discovery}},
			MetadataOptions:            MetadataOptions{HTTPEndpoint: "enabled", HTTPProtocolIPv6: "disabled", HTTPPutResponseHopLimit: 2, HTTPTokens: "required"},
			BlockDeviceMappings: []BlockDeviceMapping{{
				DeviceName: "/dev/xvda",
				RootVolume: true,
				EBS: &BlockDevice{VolumeSize: resource.MustParse("200Gi"), VolumeType: "gp3", Encrypted: ptr(true),
					KMSKeyID: "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"},
			}},
			InstanceStorePolicy:      InstanceStoreRAID0,
			AssociatePublicIPAddress: ptr(false),
			Tags:                     map[string]string{"team": "ml-platform"},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DecodeNodeClasses(testdata/ec2nodeclasses.yaml) mismatch (-want +got):\n%s", diff)
	}
	for _, c := range got {
		if err := c.Validate(); err != nil {
			t.Errorf("EC2NodeClass %s: Validate() = %v", c.Name, err)
		}
	}
}

func TestDecodeEC2NodeClassDefaults(t *testing.T) {
	got, err := DecodeNodeClasses([]byte(`
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: bare}
spec:
  amiSelectorTerms: [{alias: bottlerocket@latest}]
  instanceProfile: KarpenterNodeInstanceProfile
  subnetSelectorTerms: [{tags: {Name: "*private*"}}]
  securityGroupSelectorTerms: [{id: sg-0123456789abcdef0}]
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []NodeClass{{
		Name:                       "bare",
		AMISelectorTerms:           []AMISelectorTerm{{Alias: "bottlerocket@latest"}},
		InstanceProfile:            "KarpenterNodeInstanceProfile",
		SubnetSelectorTerms:        []SubnetSelectorTerm{{Tags: map[string]string{"Name": "*private*"}}},
		SecurityGroupSelectorTerms: []SecurityGroupSelectorTerm{{ID: "sg-0123456789abcdef0"}},
		MetadataOptions:            MetadataOptions{}.WithDefaults(),
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DecodeNodeClasses(bare) mismatch (-want +got):\n%s", diff)
	}
	if f := got[0].ResolvedAMIFamily(); f != AMIFamilyBottlerocket {
		t.Errorf("ResolvedAMIFamily() = %q, want %q", f, AMIFamilyBottlerocket)
	}
}

func TestMetadataOptionsWithDefaults(t *testing.T) {
	got := MetadataOptions{HTTPPutResponseHopLimit: 2}.WithDefaults()
	want := MetadataOptions{HTTPEndpoint: "enabled", HTTPProtocolIPv6: "disabled", HTTPPutResponseHopLimit: 2, HTTPTokens: "required"}
	if got != want {
		t.Errorf("MetadataOptions{HopLimit: 2}.WithDefaults() = %+v, want %+v", got, want)
	}
}

func TestParseAMIAlias(t *testing.T) {
	tests := []struct {
		alias   string
		family  AMIFamily
		version string
		ok      bool
	}{
		{"al2023@latest", AMIFamilyAL2023, "latest", true},
		{"al2023@v20240807", AMIFamilyAL2023, "v20240807", true},
		{"al2@latest", AMIFamilyAL2, "latest", true},
		{"bottlerocket@v1.20.4", AMIFamilyBottlerocket, "v1.20.4", true},
		{"windows2022@latest", AMIFamilyWindows2022, "latest", true},
		{"windows2019@v2024", "", "", false},
		{"al2023", "", "", false},
		{"al2023@", "", "", false},
		{"@latest", "", "", false},
		{"ubuntu@latest", "", "", false},
		{"AL2023@latest", "", "", false},
		{"al2023@latest@x", "", "", false},
		{"al2023@ latest", "", "", false},
	}
	for _, tt := range tests {
		family, version, err := ParseAMIAlias(tt.alias)
		if family != tt.family || version != tt.version || (err == nil) != tt.ok {
			t.Errorf("ParseAMIAlias(%q) = %q, %q, %v; want %q, %q, ok=%v", tt.alias, family, version, err, tt.family, tt.version, tt.ok)
		}
	}
}

func validClass() NodeClass {
	return NodeClass{
		Name:                       "default",
		AMISelectorTerms:           []AMISelectorTerm{{Alias: "al2023@latest"}},
		Role:                       "NodeRole",
		SubnetSelectorTerms:        []SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "demo"}}},
		SecurityGroupSelectorTerms: []SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "demo"}}},
	}
}

func TestEC2NodeClassValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(c *NodeClass)
		want   []string // object: field=value
	}{
		{"valid", func(c *NodeClass) {}, nil},
		{"valid with everything", func(c *NodeClass) {
			c.AMIFamily = AMIFamilyAL2023
			c.Kubelet = KubeletConfiguration{ClusterDNS: []string{"10.100.0.10", "fd00::a"}, MaxPods: 110,
				EvictionSoft: map[string]string{"memory.available": "500Mi"}, EvictionSoftGracePeriod: map[string]time.Duration{"memory.available": time.Minute}}
			c.MetadataOptions = MetadataOptions{HTTPTokens: "optional", HTTPPutResponseHopLimit: 64}
			c.BlockDeviceMappings = []BlockDeviceMapping{{DeviceName: "/dev/xvda", RootVolume: true,
				EBS: &BlockDevice{VolumeSize: resource.MustParse("64Ti"), VolumeType: "io2", IOPS: 64000}}}
		}, nil},
		{"no role and no instance profile", func(c *NodeClass) { c.Role = "" }, []string{`EC2NodeClass "default": spec=`}},
		{"role and instance profile", func(c *NodeClass) { c.InstanceProfile = "p" }, []string{`EC2NodeClass "default": spec=`}},
		{"missing name", func(c *NodeClass) { c.Name = "" }, []string{`EC2NodeClass: metadata.name=`}},
		{"bad alias", func(c *NodeClass) { c.AMISelectorTerms[0].Alias = "al2023" },
			[]string{`EC2NodeClass "default": spec.amiSelectorTerms[0].alias=al2023`}},
		{"alias not alone", func(c *NodeClass) {
			c.AMIFamily = AMIFamilyAL2023
			c.AMISelectorTerms = append(c.AMISelectorTerms, AMISelectorTerm{Name: "my-ami-*"})
		}, []string{`EC2NodeClass "default": spec.amiSelectorTerms[0].alias=al2023@latest`}},
		{"alias with other fields", func(c *NodeClass) { c.AMISelectorTerms[0].ID = "ami-123" },
			[]string{`EC2NodeClass "default": spec.amiSelectorTerms[0]=`}},
		{"family contradicts alias", func(c *NodeClass) { c.AMIFamily = AMIFamilyBottlerocket },
			[]string{`EC2NodeClass "default": spec.amiFamily=Bottlerocket`}},
		{"no family without alias", func(c *NodeClass) { c.AMISelectorTerms = []AMISelectorTerm{{ID: "ami-0abc"}} },
			[]string{`EC2NodeClass "default": spec.amiFamily=`}},
		{"unknown family", func(c *NodeClass) {
			c.AMIFamily = "Ubuntu"
			c.AMISelectorTerms = []AMISelectorTerm{{ID: "ami-0abc"}}
		}, []string{`EC2NodeClass "default": spec.amiFamily=Ubuntu`}},
		{"AL2 family", func(c *NodeClass) {
			c.AMIFamily = AMIFamilyAL2
			c.AMISelectorTerms = []AMISelectorTerm{{Name: "amazon-eks-node-1.30-*", Owner: "amazon"}}
		}, []string{`EC2NodeClass "default": spec.amiFamily=AL2`}},
		{"AL2 alias", func(c *NodeClass) { c.AMISelectorTerms = []AMISelectorTerm{{Alias: "al2@latest"}} },
			[]string{`EC2NodeClass "default": spec.amiSelectorTerms[0].alias=al2@latest`}},
		{"no terms", func(c *NodeClass) {
			c.AMISelectorTerms, c.SubnetSelectorTerms, c.SecurityGroupSelectorTerms = nil, nil, nil
		}, []string{`EC2NodeClass "default": spec.amiSelectorTerms=`, `EC2NodeClass "default": spec.subnetSelectorTerms=`,
			`EC2NodeClass "default": spec.securityGroupSelectorTerms=`}},
		{"bad IDs and empty terms", func(c *NodeClass) {
			c.AMIFamily = AMIFamilyAL2023
			c.AMISelectorTerms = []AMISelectorTerm{{ID: "img-1"}, {}}
			c.SubnetSelectorTerms = []SubnetSelectorTerm{{ID: "sn-1"}, {ID: "subnet-1", Tags: map[string]string{"a": "b"}}}
			c.SecurityGroupSelectorTerms = []SecurityGroupSelectorTerm{{ID: "group-1"}, {Tags: map[string]string{"a": ""}}}
		}, []string{`EC2NodeClass "default": spec.amiSelectorTerms[0].id=img-1`, `EC2NodeClass "default": spec.amiSelectorTerms[1]=`,
			`EC2NodeClass "default": spec.subnetSelectorTerms[0].id=sn-1`, `EC2NodeClass "default": spec.subnetSelectorTerms[1]=`,
			`EC2NodeClass "default": spec.securityGroupSelectorTerms[0].id=group-1`, `EC2NodeClass "default": spec.securityGroupSelectorTerms[1].tags.a=`}},
		{"restricted tags", func(c *NodeClass) {
			c.Tags = map[string]string{"karpenter.sh/nodepool": "x", "kubernetes.io/cluster/demo": "owned", "team": "a"}
		}, []string{`EC2NodeClass "default": spec.tags=karpenter.sh/nodepool`, `EC2NodeClass "default": spec.tags=kubernetes.io/cluster/demo`}},
		{"metadata options", func(c *NodeClass) {
			c.MetadataOptions = MetadataOptions{HTTPEndpoint: "on", HTTPProtocolIPv6: "off", HTTPPutResponseHopLimit: 65, HTTPTokens: "sometimes"}
		}, []string{`EC2NodeClass "default": spec.metadataOptions.httpEndpoint=on`, `EC2NodeClass "default": spec.metadataOptions.httpProtocolIPv6=off`,
			`EC2NodeClass "default": spec.metadataOptions.httpPutResponseHopLimit=65`, `EC2NodeClass "default": spec.metadataOptions.httpTokens=sometimes`}},
		{"block devices", func(c *NodeClass) {
			c.BlockDeviceMappings = []BlockDeviceMapping{
				{DeviceName: "/dev/xvda", RootVolume: true, EBS: &BlockDevice{VolumeSize: resource.MustParse("65Ti"), VolumeType: "gp4"}},
				{RootVolume: true, EBS: &BlockDevice{VolumeType: "gp2", Throughput: 200, IOPS: 100, SnapshotID: "snapshot-1"}},
			}
		}, []string{`EC2NodeClass "default": spec.blockDeviceMappings[0].ebs.volumeSize=65Ti`,
			`EC2NodeClass "default": spec.blockDeviceMappings[0].ebs.volumeType=gp4`,
			`EC2NodeClass "default": spec.blockDeviceMappings[1].rootVolume=true`,
			`EC2NodeClass "default": spec.blockDeviceMappings[1].deviceName=`,
			`EC2NodeClass "default": spec.blockDeviceMappings[1].ebs.iops=100`,
			`EC2NodeClass "default": spec.blockDeviceMappings[1].ebs.throughput=200`,
			`EC2NodeClass "default": spec.blockDeviceMappings[1].ebs.snapshotID=snapshot-1`}},
		{"instance store policy", func(c *NodeClass) { c.InstanceStorePolicy = "RAID1" },
			[]string{`EC2NodeClass "default": spec.instanceStorePolicy=RAID1`}},
		{"kubelet", func(c *NodeClass) {
			c.Kubelet = KubeletConfiguration{
				ClusterDNS:                  []string{"10.0.0.300"},
				MaxPods:                     -1,
				SystemReserved:              rl("cpu", "100m", "nvidia.com/gpu", "1"),
				EvictionHard:                map[string]string{"memory.available": "110%", "disk.available": "1Gi"},
				EvictionSoft:                map[string]string{"nodefs.available": "10%"},
				EvictionSoftGracePeriod:     map[string]time.Duration{"memory.available": time.Minute},
				ImageGCHighThresholdPercent: 50,
				ImageGCLowThresholdPercent:  60,
			}
		}, []string{`EC2NodeClass "default": spec.kubelet.clusterDNS[0]=10.0.0.300`,
			`EC2NodeClass "default": spec.kubelet.maxPods=-1`,
			`EC2NodeClass "default": spec.kubelet.systemReserved=nvidia.com/gpu`,
			`EC2NodeClass "default": spec.kubelet.evictionHard=disk.available`,
			`EC2NodeClass "default": spec.kubelet.evictionHard.memory.available=110%`,
			`EC2NodeClass "default": spec.kubelet.evictionSoftGracePeriod=`,
			`EC2NodeClass "default": spec.kubelet.evictionSoftGracePeriod.memory.available=`,
			`EC2NodeClass "default": spec.kubelet.imageGCLowThresholdPercent=60`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validClass()
			tt.modify(&c)
			err := c.Validate()
			if diff := cmp.Diff(tt.want, fieldErrors(t, err)); diff != "" {
				t.Errorf("Validate() mismatch (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

// AL2 and Ubuntu classes are told why they are refused and what to use instead.
func TestEC2NodeClassRetiredFamilies(t *testing.T) {
	for family, want := range map[AMIFamily][]string{
		AMIFamilyAL2: {"end-of-life", "al2023@latest"},
		"Ubuntu":     {"Custom", "amiSelectorTerms"},
	} {
		c := validClass()
		c.AMIFamily = family
		c.AMISelectorTerms = []AMISelectorTerm{{ID: "ami-0abc"}}
		err := c.Validate()
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: Validate() = %v, want a mention of %q", family, err, w)
			}
		}
	}
}
