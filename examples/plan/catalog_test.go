package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/google/go-cmp/cmp"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
)

// useEC2 points the catalog's AWS configuration at srv, as credentials for a real account
// would point it at EC2.
func useEC2(t *testing.T, srv *ec2test.Server) {
	t.Helper()
	old := connectAWS
	connectAWS = func(_ context.Context, region string) (aws.Config, error) { return srv.Config(region), nil }
	t.Cleanup(func() { connectAWS = old })
}

func TestOfflineCatalogFallsBackToUSEast1Prices(t *testing.T) {
	b, err := buildCatalog(t.Context(), catalogInput{flags: catalogFlags{region: "eu-west-1", offline: true}})
	if err != nil {
		t.Fatal(err)
	}
	notices := strings.Join(b.notices, "\n")
	for _, want := range []string{"WARNING: no on-demand prices for eu-west-1; using us-east-1's prices", "assumed eu-west-1a, eu-west-1b, eu-west-1c", "spot prices are a model"} {
		if !strings.Contains(notices, want) {
			t.Errorf("notices lack %q:\n%s", want, notices)
		}
	}
	if len(b.types) < 500 {
		t.Fatalf("offline catalog has %d types, want the embedded data's (over 1,000)", len(b.types))
	}
	for _, it := range b.types {
		for _, o := range it.Offerings {
			if !(o.Price > 0) {
				t.Fatalf("%s %s %s price %v: an unpriced offering would look free", it.Name, o.Zone, o.CapacityType, o.Price)
			}
			if !strings.HasPrefix(o.Zone, "eu-west-1") {
				t.Fatalf("%s offered in %s, outside eu-west-1", it.Name, o.Zone)
			}
		}
	}
	m5 := findType(b.types, "m5.large")
	if m5 == nil || len(m5.Offerings) != 6 {
		t.Fatalf("m5.large = %+v, want on-demand and spot in three zones", m5)
	}
}

func TestOfflineCatalogInAPricedRegionHasNoWarning(t *testing.T) {
	b, err := buildCatalog(t.Context(), catalogInput{flags: catalogFlags{region: "us-east-1", zones: "us-east-1a,us-east-1d", offline: true}})
	if err != nil {
		t.Fatal(err)
	}
	if notices := strings.Join(b.notices, "\n"); strings.Contains(notices, "WARNING") {
		t.Errorf("us-east-1 has embedded prices, yet: %s", notices)
	}
	if m5 := findType(b.types, "m5.large"); m5 == nil || m5.Offerings[0].Zone != "us-east-1a" {
		t.Errorf("m5.large offerings = %+v, want them in the zones given", m5)
	}
}

func TestCatalogFollowsTheNodePoolsNodeClass(t *testing.T) {
	classes, err := ec2.DecodeNodeClasses([]byte(`apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: small-pods}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  kubelet: {maxPods: 20}
`))
	if err != nil {
		t.Fatal(err)
	}
	pools := []nodeplan.NodePool{{Name: "dense"}, {Name: "small"}}
	pools[1].Template.NodeClassRef.Name = "small-pods"
	b, err := buildCatalog(t.Context(), catalogInput{flags: catalogFlags{region: "us-east-1", offline: true}, pools: pools, classes: classes})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.perPool["dense"]; ok {
		t.Errorf("pool dense has no node class, yet got a catalog of its own")
	}
	small := findType(b.perPool["small"], "m5.4xlarge")
	if small == nil {
		t.Fatal("pool small has no catalog of its own, or no m5.4xlarge in it")
	}
	if got := small.Capacity.Pods().Value(); got != 20 {
		t.Errorf("m5.4xlarge pods in pool small = %d, want the node class's maxPods 20", got)
	}
}

func TestProvisionBuildsTheCatalogFromEC2(t *testing.T) {
	fakeCluster(t)
	useEC2(t, ec2test.NewServer())
	dir := t.TempDir()

	code, catalogJSON, stderr := runPlan(t, []string{"catalog", "--kubeconfig", "fake"})
	if code != exitOK {
		t.Fatalf("plan catalog = %d; stderr:\n%s", code, stderr)
	}
	written := filepath.Join(dir, "catalog.json")
	if err := os.WriteFile(written, []byte(catalogJSON), 0o644); err != nil {
		t.Fatal(err)
	}

	code, built, stderr := runPlan(t, []string{"provision", "--kubeconfig", "fake", "-o", "json"})
	if code != exitOK {
		t.Fatalf("plan provision without --catalog = %d; stderr:\n%s", code, stderr)
	}
	code, given, stderr := runPlan(t, []string{"provision", "--kubeconfig", "fake", "--catalog", written, "-o", "json"})
	if code != exitOK {
		t.Fatalf("plan provision --catalog = %d; stderr:\n%s", code, stderr)
	}
	var a, b map[string]any
	for raw, v := range map[string]*map[string]any{built: &a, given: &b} {
		if err := json.Unmarshal([]byte(normalize(raw)), v); err != nil {
			t.Fatal(err)
		}
		delete(*v, "notices")
	}
	if diff := cmp.Diff(b, a); diff != "" {
		t.Errorf("the plan on the catalog built from EC2 differs from the plan on the same catalog written by plan catalog (-file +built):\n%s", diff)
	}
	if len(a["nodeClaims"].([]any)) == 0 {
		t.Errorf("no node claims: the example snapshot should need some")
	}
}

func findType(types []nodeplan.InstanceType, name string) *nodeplan.InstanceType {
	for i := range types {
		if types[i].Name == name {
			return &types[i]
		}
	}
	return nil
}
