package ec2_test

import (
	"context"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// kubeletRead is what a kubelet reads from its configuration, in KubeletConfiguration's field
// names (kubelet.config.k8s.io/v1beta1), written here independently of the provider.
type kubeletRead struct {
	MaxPods                     int32             `json:"maxPods"`
	PodsPerCore                 int32             `json:"podsPerCore"`
	ClusterDNS                  []string          `json:"clusterDNS"`
	KubeReserved                map[string]string `json:"kubeReserved"`
	SystemReserved              map[string]string `json:"systemReserved"`
	EvictionHard                map[string]string `json:"evictionHard"`
	EvictionSoft                map[string]string `json:"evictionSoft"`
	EvictionSoftGracePeriod     map[string]string `json:"evictionSoftGracePeriod"`
	EvictionMaxPodGracePeriod   int32             `json:"evictionMaxPodGracePeriod"`
	ImageGCHighThresholdPercent int32             `json:"imageGCHighThresholdPercent"`
	ImageGCLowThresholdPercent  int32             `json:"imageGCLowThresholdPercent"`
	CPUCFSQuota                 *bool             `json:"cpuCFSQuota"`
	ShutdownGracePeriod         string            `json:"shutdownGracePeriod"`
	RegisterWithTaints          []corev1.Taint    `json:"registerWithTaints"`
}

// allocatable computes node allocatable as the kubelet does (pkg/kubelet/cm
// GetNodeAllocatableAbsolute): capacity less kube-reserved, system-reserved and the hard
// eviction threshold of memory.available (memory) and nodefs.available (ephemeral-storage); a
// percentage threshold is float32(percent) × capacity, truncated. Pods are maxPods, capped by
// podsPerCore × cores.
func (k kubeletRead) allocatable(t *testing.T, capacity corev1.ResourceList) corev1.ResourceList {
	t.Helper()
	threshold := func(signal string, c resource.Quantity) resource.Quantity {
		v, ok := k.EvictionHard[signal]
		if !ok {
			return resource.Quantity{}
		}
		if p, ok := strings.CutSuffix(v, "%"); ok {
			f, err := strconv.ParseFloat(p, 32)
			if err != nil {
				t.Fatalf("evictionHard[%s] = %q", signal, v)
			}
			return *resource.NewQuantity(int64(float64(c.Value())*float64(float32(f/100))), resource.BinarySI)
		}
		return resource.MustParse(v)
	}
	out := corev1.ResourceList{}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		a := capacity[r].DeepCopy()
		for _, m := range []map[string]string{k.KubeReserved, k.SystemReserved} {
			if v, ok := m[string(r)]; ok {
				a.Sub(resource.MustParse(v))
			}
		}
		switch r {
		case corev1.ResourceMemory:
			a.Sub(threshold("memory.available", capacity[r]))
		case corev1.ResourceEphemeralStorage:
			a.Sub(threshold("nodefs.available", capacity[r]))
		}
		out[r] = a
	}
	pods := int64(k.MaxPods)
	if k.PodsPerCore > 0 {
		cpu := capacity[corev1.ResourceCPU]
		pods = min(pods, int64(k.PodsPerCore)*cpu.Value())
	}
	out[corev1.ResourcePods] = *resource.NewQuantity(pods, resource.DecimalSI)
	return out
}

// nodeadmKubelet reads the kubelet configuration nodeadm builds from an AL2023 userData: the
// spec.kubelet.config of every NodeConfig part, merged in order (later documents win). It also
// returns the content types of the parts.
func nodeadmKubelet(t *testing.T, ud string) (kubeletRead, []string) {
	t.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(ud))
	if err != nil {
		t.Fatalf("userData is not MIME: %v\n%s", err, ud)
	}
	_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	r := multipart.NewReader(msg.Body, params["boundary"])
	merged := map[string]any{}
	var types []string
	for {
		part, err := r.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(part)
		types = append(types, part.Header.Get("Content-Type"))
		if part.Header.Get("Content-Type") != "application/node.eks.aws" {
			continue
		}
		var nc struct {
			Kind string `json:"kind"`
			Spec struct {
				Kubelet struct {
					Config map[string]any `json:"config"`
				} `json:"kubelet"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(body, &nc); err != nil || nc.Kind != "NodeConfig" {
			t.Fatalf("NodeConfig part does not decode (%v):\n%s", err, body)
		}
		mergeInto(merged, nc.Spec.Kubelet.Config)
	}
	return decodeKubelet(t, merged), types
}

func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeInto(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

func decodeKubelet(t *testing.T, m map[string]any) kubeletRead {
	t.Helper()
	b, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var k kubeletRead
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatalf("kubelet configuration has unexpected fields: %v\n%s", err, b)
	}
	return k
}

// bottlerocketKubelet reads Bottlerocket's settings.kubernetes from its TOML userData (the
// subset the provider writes: [table] headers and key = value lines with strings, integers,
// booleans and arrays of strings) and maps them to the kubelet's settings as Bottlerocket does.
func bottlerocketKubelet(t *testing.T, ud string) (kubeletRead, map[string]map[string]string) {
	t.Helper()
	tables := map[string]map[string]string{}
	cur := ""
	for _, line := range strings.Split(ud, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			cur = strings.Trim(line, "[]")
			if tables[cur] == nil {
				tables[cur] = map[string]string{}
			}
		default:
			k, v, ok := strings.Cut(line, " = ")
			if !ok {
				t.Fatalf("TOML line %q", line)
			}
			if uq, err := strconv.Unquote(k); err == nil {
				k = uq
			}
			if uq, err := strconv.Unquote(v); err == nil {
				v = uq
			}
			if _, dup := tables[cur][k]; dup {
				t.Fatalf("duplicate TOML key %s.%s:\n%s", cur, k, ud)
			}
			tables[cur][k] = v
		}
	}
	s := tables["settings.kubernetes"]
	atoi := func(v string) int32 {
		if v == "" {
			return 0
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("not a number: %q", v)
		}
		return int32(n)
	}
	k := kubeletRead{
		MaxPods:                     atoi(s["max-pods"]),
		KubeReserved:                tables["settings.kubernetes.kube-reserved"],
		SystemReserved:              tables["settings.kubernetes.system-reserved"],
		EvictionHard:                tables["settings.kubernetes.eviction-hard"],
		EvictionSoft:                tables["settings.kubernetes.eviction-soft"],
		EvictionSoftGracePeriod:     tables["settings.kubernetes.eviction-soft-grace-period"],
		EvictionMaxPodGracePeriod:   atoi(s["eviction-max-pod-grace-period"]),
		ImageGCHighThresholdPercent: atoi(s["image-gc-high-threshold-percent"]),
		ImageGCLowThresholdPercent:  atoi(s["image-gc-low-threshold-percent"]),
	}
	if v, ok := s["cluster-dns-ip"]; ok {
		k.ClusterDNS = []string{v}
	}
	if v, ok := s["cpu-cfs-quota-enforced"]; ok {
		b := v == "true"
		k.CPUCFSQuota = &b
	}
	return k, tables
}

// kubeadmKubelet reads the KubeletConfiguration patch out of the kubeadm join script.
func kubeadmKubelet(t *testing.T, ud string) kubeletRead {
	t.Helper()
	const start = "kubeletconfiguration+merge.yaml <<'NODEPLAN_EOF'\n"
	_, rest, ok := strings.Cut(ud, start)
	body, _, ok2 := strings.Cut(rest, "\nNODEPLAN_EOF")
	if !ok || !ok2 {
		t.Fatalf("no KubeletConfiguration patch in:\n%s", ud)
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	if m["kind"] != "KubeletConfiguration" || m["apiVersion"] != "kubelet.config.k8s.io/v1beta1" {
		t.Errorf("patch kind/apiVersion = %v/%v", m["kind"], m["apiVersion"])
	}
	delete(m, "kind")
	delete(m, "apiVersion")
	return decodeKubelet(t, m)
}

func fullKubelet() ec2.KubeletConfiguration {
	f := false
	return ec2.KubeletConfiguration{
		ClusterDNS:     []string{"10.100.0.53"},
		PodsPerCore:    10,
		KubeReserved:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("150m")},
		SystemReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("200Mi"), corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")},
		EvictionHard:   map[string]string{"memory.available": "5%", "nodefs.available": "15%", "nodefs.inodesFree": "5%"},
		EvictionSoft:   map[string]string{"memory.available": "500Mi"},
		EvictionSoftGracePeriod: map[string]time.Duration{
			"memory.available": 90 * time.Second,
		},
		EvictionMaxPodGracePeriod:   60,
		ImageGCHighThresholdPercent: 85,
		ImageGCLowThresholdPercent:  70,
		CPUCFSQuota:                 &f,
	}
}

// The kubelet settings of an EC2NodeClass reach the node in every family, and the allocatable
// the kubelet computes from what it reads is the allocatable the solver planned with.
func TestKubeletSettingsReachTheNode(t *testing.T) {
	const classNodeConfig = `---
# node tuning, kept by the provider
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      shutdownGracePeriod: 30s
      maxPods: 3
`
	const classTOML = `# our own settings
[settings.kubernetes]
max-pods = 3
cluster-name = "wrong"
kube-reserved = { memory = "1Gi" }

[settings.kubernetes.node-labels]
"team" = "overridden-by-claim"
"extra" = "kept"

[settings.host-containers.admin]
enabled = true
`
	tests := []struct {
		name    string
		class   func(*ec2.NodeClass)
		kubeadm *ec2.KubeadmJoin
		read    func(t *testing.T, ud string) kubeletRead
	}{
		{"AL2023", func(c *ec2.NodeClass) { c.UserData = classNodeConfig }, nil, func(t *testing.T, ud string) kubeletRead {
			k, types := nodeadmKubelet(t, ud)
			if diff := cmp.Diff([]string{"application/node.eks.aws", "application/node.eks.aws"}, types); diff != "" {
				t.Errorf("part content types (-want +got):\n%s", diff)
			}
			if k.ShutdownGracePeriod != "30s" {
				t.Errorf("the class's NodeConfig setting shutdownGracePeriod was lost: %+v", k)
			}
			return k
		}},
		{"Bottlerocket", func(c *ec2.NodeClass) {
			c.AMISelectorTerms = []ec2.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
			c.UserData = classTOML
		}, nil, func(t *testing.T, ud string) kubeletRead {
			k, tables := bottlerocketKubelet(t, ud)
			if got := tables["settings.kubernetes"]["cluster-name"]; got != "test" {
				t.Errorf("cluster-name = %q, want the provider's", got)
			}
			labels := tables["settings.kubernetes.node-labels"]
			if labels["team"] != "web" || labels["extra"] != "kept" || labels[ec2.LabelNodeClass] != "default" {
				t.Errorf("node-labels = %v, want the claim's merged over the class's", labels)
			}
			if tables["settings.host-containers.admin"]["enabled"] != "true" {
				t.Errorf("the class's own settings were lost:\n%s", ud)
			}
			return k
		}},
		{"kubeadm", func(c *ec2.NodeClass) {
			c.AMIFamily = ec2.AMIFamilyCustom
			c.AMISelectorTerms = []ec2.AMISelectorTerm{{Tags: discovery()}}
		}, &ec2.KubeadmJoin{Token: "abcdef.0123456789abcdef", CACertHashes: []string{"sha256:00ff"}}, kubeadmKubelet},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, func(o *ec2.Options) { o.Cluster.Kubeadm = tt.kubeadm })
			f.class.Kubelet = fullKubelet()
			tt.class(f.class)
			if err := f.class.Validate(); err != nil {
				t.Fatal(err)
			}
			for i, it := range []string{"m5.large", "c5.2xlarge", "m5.4xlarge"} {
				got, err := f.p.Create(context.Background(), claim("n"+strconv.Itoa(i), []string{it}))
				if err != nil {
					t.Fatal(err)
				}
				reqs := f.srv.Requests("CreateFleet")
				name := reqs[len(reqs)-1].Form.Get("LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName")
				var ud []byte
				for _, lt := range f.srv.LaunchTemplates() {
					if lt.Name == name {
						ud, _ = base64.StdEncoding.DecodeString(lt.Data.Get("UserData"))
					}
				}
				k := tt.read(t, string(ud))
				want := fullKubelet()
				if diff := cmp.Diff([]string{"10.100.0.53"}, k.ClusterDNS); diff != "" {
					t.Errorf("%s clusterDNS (-want +got):\n%s", it, diff)
				}
				if k.EvictionSoft["memory.available"] != "500Mi" || k.EvictionSoftGracePeriod["memory.available"] != "1m30s" ||
					k.EvictionHard["nodefs.inodesFree"] != "5%" || k.EvictionMaxPodGracePeriod != want.EvictionMaxPodGracePeriod ||
					k.ImageGCHighThresholdPercent != 85 || k.ImageGCLowThresholdPercent != 70 || k.CPUCFSQuota == nil || *k.CPUCFSQuota {
					t.Errorf("%s: kubelet settings did not all reach the node: %+v", it, k)
				}
				wantAlloc := got.Status.Allocatable
				gotAlloc := k.allocatable(t, got.Status.Capacity)
				for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods} {
					w, g := wantAlloc[r], gotAlloc[r]
					if w.Cmp(g) != 0 {
						t.Errorf("%s %s: the kubelet computes allocatable %s, the model planned with %s", it, r, g.String(), w.String())
					}
				}
			}
		})
	}
}

// A class's NodeConfig is sent as a NodeConfig whatever precedes it; a script as a script.
func TestClassUserDataContentType(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"document marker", "---\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: {}\n", "application/node.eks.aws"},
		{"comment first", "# tuning\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: {}\n", "application/node.eks.aws"},
		{"shell", "#!/bin/bash\necho hello\n", `text/x-shellscript; charset="us-ascii"`},
		{"MIME", "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"BOUNDARY\"\n\n--BOUNDARY\nContent-Type: text/x-shellscript\n\necho hi\n--BOUNDARY--\n", "text/x-shellscript"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			f.class.UserData = tt.data
			if _, err := f.p.Create(context.Background(), claim("a", []string{"m5.large"})); err != nil {
				t.Fatal(err)
			}
			ud, _ := base64.StdEncoding.DecodeString(f.srv.LaunchTemplates()[0].Data.Get("UserData"))
			_, types := nodeadmKubelet(t, string(ud))
			if diff := cmp.Diff([]string{tt.want, "application/node.eks.aws"}, types); diff != "" {
				t.Errorf("content types (-want +got):\n%s", diff)
			}
		})
	}
}

// The kubeadm join takes the launch's own bootstrap token and sets the node's provider ID
// from instance metadata (IMDSv2), so nodes register without the AWS cloud-controller-manager
// and no long-lived token is needed.
func TestKubeadmJoinPerLaunchTokenAndProviderID(t *testing.T) {
	f := newFixture(t, nil, func(o *ec2.Options) {
		o.Cluster.Kubeadm = &ec2.KubeadmJoin{CACertHashes: []string{"sha256:00ff"}} // no token given at start-up
	})
	f.class.AMIFamily = ec2.AMIFamilyCustom
	f.class.AMISelectorTerms = []ec2.AMISelectorTerm{{Tags: discovery()}}
	ctx := context.Background()
	if _, err := f.p.Create(ctx, claim("no-token", []string{"m5.large"})); err == nil || !strings.Contains(err.Error(), "BootstrapToken") {
		t.Errorf("Create() without a token = %v, want an error naming NodeClaim.BootstrapToken", err)
	}
	c := claim("with-token", []string{"m5.large"})
	c.BootstrapToken = "k7x2m9.4f8q1z6w3e5r7t9y"
	if _, err := f.p.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	if lts := f.srv.LaunchTemplates(); len(lts) != 0 {
		t.Errorf("%d launch templates left: a template holding a launch's own token is single-use and must go", len(lts))
	}
	uds, err := f.srv.LaunchTemplateUserData()
	if err != nil || len(uds) == 0 {
		t.Fatalf("launch templates' user data: %v, %d", err, len(uds))
	}
	ud := uds[len(uds)-1]
	join, err := ec2test.ReadKubeadmJoin(ud)
	if err != nil {
		t.Fatalf("%v:\n%s", err, ud)
	}
	if join.Token != c.BootstrapToken {
		t.Errorf("join token = %q, want the launch's %q", join.Token, c.BootstrapToken)
	}
	args := join.KubeletArgs
	if !strings.HasSuffix(args["node-labels"], ",topology.k8s.aws/zone-id=@ZONE_ID@") {
		t.Errorf("node-labels flag = %q, want the zone-id label from instance metadata", args["node-labels"])
	}
	if args["provider-id"] != "aws:///@ZONE@/@INSTANCE_ID@" {
		t.Errorf("provider-id flag = %q", args["provider-id"])
	}
	for _, want := range []string{
		`X-aws-ec2-metadata-token-ttl-seconds`, // IMDSv2 session
		`meta-data/instance-id`, `meta-data/placement/availability-zone`,
		`meta-data/placement/availability-zone-id`,
		`s|@ZONE@|${zone}|; s|@ZONE_ID@|${zone_id}|; s|@INSTANCE_ID@|${instance_id}|`,
	} {
		if !strings.Contains(ud, want) {
			t.Errorf("userData lacks %q:\n%s", want, ud)
		}
	}
}
