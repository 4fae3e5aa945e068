package controller_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

// kubeadmHarness is the simulated cluster with the real EC2 provider (aws-sdk-go-v2 against
// ec2test) in kubeadm mode: Custom AMIs, no token given at start-up.
func kubeadmHarness(t *testing.T) (*harness, *ec2test.Server, *ec2.Provider) {
	t.Helper()
	h := newHarness(t)
	srv := ec2test.NewServer(ec2test.WithClock(h.w.Clock.Now))
	t.Cleanup(srv.Close)
	// A few families (the provider's first catalog load is slow under -race), and more real
	// time a step for the SDK calls to ec2test.
	if err := srv.SetInstanceFamilies("c5", "m5", "r5", "c6a"); err != nil {
		t.Fatal(err)
	}
	h.w.Settle = 5 * time.Millisecond
	cfg := srv.Config("us-east-1")
	prices, err := ec2test.StaticPrices("us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	disc := map[string]string{ec2test.DiscoveryTag: ec2test.DiscoveryValue}
	class := &ec2.NodeClass{Name: "default", AMIFamily: ec2.AMIFamilyCustom,
		AMISelectorTerms:           []ec2.AMISelectorTerm{{Tags: disc}},
		SubnetSelectorTerms:        []ec2.SubnetSelectorTerm{{Tags: disc}},
		SecurityGroupSelectorTerms: []ec2.SecurityGroupSelectorTerm{{Tags: disc}},
		Role:                       "KubeadmNodeRole"}
	p, err := ec2.New(ec2.Options{
		Cluster: ec2.Cluster{Name: "lab", Endpoint: "https://10.0.0.10:6443", KubernetesVersion: "1.37",
			Kubeadm: &ec2.KubeadmJoin{CACertHashes: []string{"sha256:" + strings.Repeat("ab", 32)}}},
		Region: "us-east-1", EC2: awsec2.NewFromConfig(cfg), SSM: ssm.NewFromConfig(cfg), Prices: prices,
		NodeClass: func(name string) (*ec2.NodeClass, bool) {
			c := *class
			return &c, name == class.Name
		},
		Now: h.w.Clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.w.Kubelet.Provider = p
	return h, srv, p
}

// joinOf returns the token and kubelet flags of the kubeadm JoinConfiguration in userData.
func joinOf(t *testing.T, userData string) (token string, args map[string]string) {
	t.Helper()
	join, err := ec2test.ReadKubeadmJoin(userData)
	if err != nil {
		t.Fatalf("%v:\n%s", err, userData)
	}
	return join.Token, join.KubeletArgs
}

// userDatas decodes the userData of every launch template the provider created.
func userDatas(t *testing.T, srv *ec2test.Server) []string {
	t.Helper()
	out, err := srv.LaunchTemplateUserData()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func tokenSecrets(t *testing.T, h *harness) []corev1.Secret {
	t.Helper()
	list, err := h.w.Client.CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Secret
	for _, s := range list.Items {
		if s.Type == bootstrapapi.SecretTypeBootstrapToken {
			out = append(out, s)
		}
	}
	return out
}

// TestBootstrapTokenPerLaunch: a kubeadm launch joins with a token minted for it alone, whose
// Secret has Kubernetes' bootstrap token format and an expiration, and is deleted once the node
// registers; the join sets the node's provider ID from instance metadata.
func TestBootstrapTokenPerLaunch(t *testing.T) {
	h, srv, p := kubeadmHarness(t)
	tokens := &controller.BootstrapTokens{}
	h.start("a", func(c *controller.Controller) {
		c.Provider = p
		c.BootstrapTokens = tokens
	})
	h.w.Kubelet.SetBootTime(2 * time.Minute) // time to look at the Secret before the node joins
	h.deploy("inflate", 3, 0)
	h.until(time.Minute, "a kubeadm launch", func() bool { return len(userDatas(t, srv)) > 0 })
	launchedAt := h.w.Clock.Now()

	uds := userDatas(t, srv)
	token, args := joinOf(t, uds[0])
	if !bootstraputil.IsValidBootstrapToken(token) {
		t.Fatalf("join token %q is not a bootstrap token", token)
	}
	if args["provider-id"] != "aws:///@ZONE@/@INSTANCE_ID@" || !strings.Contains(uds[0], `s|@ZONE@|${zone}|`) ||
		!strings.Contains(uds[0], "meta-data/instance-id") {
		t.Errorf("the join does not set the provider ID from instance metadata: provider-id flag %q\n%s", args["provider-id"], uds[0])
	}
	id, secret, _ := strings.Cut(token, ".")
	secrets := tokenSecrets(t, h)
	if len(secrets) != 1 {
		t.Fatalf("%d bootstrap token Secrets, want 1 (the launch's)", len(secrets))
	}
	s := secrets[0]
	if s.Name != bootstraputil.BootstrapTokenSecretName(id) {
		t.Errorf("Secret %s, want %s (named by the token's id)", s.Name, bootstraputil.BootstrapTokenSecretName(id))
	}
	data := map[string]string{}
	for k, v := range s.Data {
		data[k] = string(v)
	}
	for k, want := range map[string]string{
		bootstrapapi.BootstrapTokenIDKey:               id,
		bootstrapapi.BootstrapTokenSecretKey:           secret,
		bootstrapapi.BootstrapTokenUsageAuthentication: "true",
		bootstrapapi.BootstrapTokenUsageSigningKey:     "true",
		bootstrapapi.BootstrapTokenExtraGroupsKey:      "system:bootstrappers:kubeadm:default-node-token",
	} {
		if data[k] != want {
			t.Errorf("Secret %s: %s = %q, want %q", s.Name, k, data[k], want)
		}
	}
	exp, err := time.Parse(time.RFC3339, data[bootstrapapi.BootstrapTokenExpirationKey])
	if err != nil {
		t.Fatalf("Secret %s: expiration %q: %v", s.Name, data[bootstrapapi.BootstrapTokenExpirationKey], err)
	}
	if ttl := exp.Sub(launchedAt); ttl <= 0 || ttl > 20*time.Minute {
		t.Errorf("token expires %v after the launch, want a short life (at most launch + registration timeouts, 20m)", ttl)
	}
	claim := s.Labels["karpenter.sh/nodeclaim"]
	if claim == "" || len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Name != claim {
		t.Errorf("Secret labels %v, owners %v: want the NodeClaim named and owning it", s.Labels, s.OwnerReferences)
	}

	h.until(5*time.Minute, "the node registered and its token deleted", func() bool {
		return h.nodes() == 1 && len(tokenSecrets(t, h)) == 0
	})
	if strings.Contains(h.logs.String(), "could not delete bootstrap token") {
		t.Errorf("deletion errors:\n%s", h.logs.String())
	}
}

// TestBootstrapTokenCleanup: a launch that fails deletes its token at once, and a token whose
// node has not joined by its expiration is deleted then.
func TestBootstrapTokenCleanup(t *testing.T) {
	t.Run("launch fails", func(t *testing.T) {
		h, srv, p := kubeadmHarness(t)
		srv.Inject("CreateFleet", 1000, ec2test.Fault{Err: &ec2test.APIError{Code: "UnauthorizedOperation", Message: "denied", Status: 403}})
		h.start("a", func(c *controller.Controller) {
			c.Provider = p
			c.BootstrapTokens = &controller.BootstrapTokens{}
		})
		h.deploy("inflate", 2, 0)
		h.until(time.Minute, "a failed launch", func() bool { return strings.Contains(h.logs.String(), "could not launch nodeclaim") })
		created := 0
		for _, a := range h.w.Client.Actions() {
			if a.Matches("create", "secrets") {
				created++
			}
		}
		if created == 0 {
			t.Fatal("no token Secret was created for the launch")
		}
		if n := len(tokenSecrets(t, h)); n != 0 {
			t.Errorf("%d token Secrets left after the launch failed, want 0", n)
		}
	})
	t.Run("expires before the node joins", func(t *testing.T) {
		h, srv, p := kubeadmHarness(t)
		h.start("a", func(c *controller.Controller) {
			c.Provider = p
			c.BootstrapTokens = &controller.BootstrapTokens{TTL: 30 * time.Second}
		})
		h.w.Kubelet.SetBootTime(3 * time.Minute)
		h.deploy("inflate", 2, 0)
		h.until(time.Minute, "a launch", func() bool { return len(userDatas(t, srv)) > 0 && len(tokenSecrets(t, h)) == 1 })
		h.until(time.Minute, "the expired token deleted", func() bool { return len(tokenSecrets(t, h)) == 0 })
		if h.nodes() != 0 {
			t.Errorf("the node joined before the token expired; the test wants it later")
		}
		if !regexp.MustCompile(`msg="deleted bootstrap token".*reason=expired`).MatchString(h.logs.String()) {
			t.Errorf("no deletion for expiry logged:\n%s", h.logs.String())
		}
	})
}

// TestBootstrapTokenID: ids are bootstrap token ids, stable for a claim name.
func TestBootstrapTokenID(t *testing.T) {
	seen := map[string]string{}
	for _, name := range []string{"default-abcde", "default-abcdf", "gpu-x2k9q", ""} {
		id := controller.BootstrapTokenID(name)
		if !bootstraputil.IsValidBootstrapTokenID(id) {
			t.Errorf("BootstrapTokenID(%q) = %q, not a token id", name, id)
		}
		if id != controller.BootstrapTokenID(name) {
			t.Errorf("BootstrapTokenID(%q) is not stable", name)
		}
		if other, dup := seen[id]; dup {
			t.Errorf("%q and %q share id %q", name, other, id)
		}
		seen[id] = name
	}
}
