package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/google/go-cmp/cmp"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
	"github.com/nodeplan/nodeplan/pricing"
)

// The partial fleets of the soak, on the real EC2 provider's wire path: the AWS SDK against
// ec2test. One claim is one instance; whatever a CreateFleet leaves behind must end with a claim
// or terminated.

func ec2Provider(t *testing.T) (*ec2.Provider, *ec2test.Server) {
	t.Helper()
	srv := ec2test.NewServer()
	t.Cleanup(srv.Close)
	cfg := srv.Config("us-east-1")
	table, err := pricing.Static("us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	discovery := map[string]string{ec2test.DiscoveryTag: ec2test.DiscoveryValue}
	class := &ec2.NodeClass{
		Name:                       "default",
		AMISelectorTerms:           []ec2.AMISelectorTerm{{Alias: "al2023@latest"}},
		SubnetSelectorTerms:        []ec2.SubnetSelectorTerm{{Tags: discovery}},
		SecurityGroupSelectorTerms: []ec2.SecurityGroupSelectorTerm{{Tags: discovery}},
		Role:                       "KarpenterNodeRole",
	}
	p, err := ec2.New(ec2.Options{
		Cluster: ec2.Cluster{Name: "test", Endpoint: "https://api.test:6443", CABundle: []byte("-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n"),
			ServiceCIDR: "10.100.0.0/16", ClusterDNS: "10.100.0.10", KubernetesVersion: "1.33"},
		Region:       "us-east-1",
		EC2:          awsec2.NewFromConfig(cfg),
		SSM:          ssm.NewFromConfig(cfg),
		Prices:       table,
		Installation: "nodeplan",
		NodeClass: func(name string) (*ec2.NodeClass, bool) {
			if name != class.Name {
				return nil, false
			}
			c := *class
			return &c, true
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, srv
}

func ec2Claim(name string) nodeplan.NodeClaim {
	return nodeplan.NodeClaim{Name: name, NodePool: "default", InstanceTypeOptions: []string{"m5.large"},
		NodeClassRef: nodeplan.NodeClassRef{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		Requirements: nodeplan.NewRequirements(nodeplan.In(nodeplan.LabelCapacityType, "on-demand"))}
}

func running(srv *ec2test.Server) []string {
	var out []string
	for _, i := range srv.Instances() {
		if i.State == "pending" || i.State == "running" {
			out = append(out, i.ID+" "+i.Tags[ec2.TagNodeClaim])
		}
	}
	return out
}

// The fleet call fails after EC2 made the instance, and the provider's clean-up does not see it
// (DescribeInstances is eventually consistent): Create fails, the instance runs. The controller
// keeps the claim and binds the instance at the next listing.
func TestEC2LaunchFailedAfterLaunchIsTracked(t *testing.T) {
	p, srv := ec2Provider(t)
	ctx := context.Background()
	srv.FailFleetAfterLaunch(10, nil)
	// The clean-up's DescribeInstances answers before the new instance is visible.
	srv.Inject("DescribeInstances", 1, ec2test.Fault{Body: `<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">` +
		`<requestId>r</requestId><reservationSet/></DescribeInstancesResponse>`})
	tr := &Tracker{}
	cl := ec2Claim("default-lost1")
	tr.Begin(cl, false, nil, t0)
	_, err := p.Create(ctx, &cl)
	if err == nil {
		t.Fatal("Create() succeeded; want the failed fleet's error")
	}
	if got := running(srv); len(got) != 1 {
		t.Fatalf("running instances = %v, want the one the failed call made", got)
	}
	if !launchMayHaveSucceeded(err) {
		t.Fatalf("launchMayHaveSucceeded(%v) = false: the claim would be dropped and its instance leak", err)
	}
	tr.LaunchUnknown(cl.Name, t0.Add(time.Second))
	insts, err := p.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	acts := tr.Reconcile(insts, nil, []string{"default"}, t0.Add(30*time.Second), t0.Add(30*time.Second))
	if diff := cmp.Diff([]string{"Adopt default-lost1"}, describe(acts)); diff != "" {
		t.Errorf("Reconcile() (-want +got):\n%s", diff)
	}
	if got := tr.Get(cl.Name); got == nil || !strings.HasSuffix(got.Status.ProviderID, strings.Fields(running(srv)[0])[0]) {
		t.Errorf("claim = %+v, want it bound to the running instance", got)
	}
	// Had the claim been lost (a restart after its object went), the installation's tag, set
	// at launch and read back by List, still marks the instance as ours: an orphan, not a stray.
	if ec2.TagInstallation != AnnotationInstallation {
		t.Fatalf("ec2.TagInstallation %q != AnnotationInstallation %q", ec2.TagInstallation, AnnotationInstallation)
	}
	fresh := &Tracker{Installation: "nodeplan"}
	acts = fresh.Reconcile(insts, nil, []string{"default"}, t0.Add(time.Minute), t0.Add(time.Minute))
	if len(acts) != 1 || acts[0].Kind != ActOrphan {
		t.Errorf("a fresh table's Reconcile() = %v, want the instance an orphan", describe(acts))
	}
}

// A fleet answers with one instance more than asked. The provider terminates the extra before
// Create returns; when it cannot (TerminateInstances refused), the extra carries the claim's
// name and the controller's next listing terminates it.
func TestEC2ExtraFleetInstanceIsTerminated(t *testing.T) {
	p, srv := ec2Provider(t)
	ctx := context.Background()
	srv.FleetExtraInstances(1)
	cl := ec2Claim("default-extra1")
	got, err := p.Create(ctx, &cl)
	if err != nil {
		t.Fatal(err)
	}
	if r := running(srv); len(r) != 1 || !strings.HasSuffix(got.Status.ProviderID, strings.Fields(r[0])[0]) {
		t.Errorf("running instances = %v after Create returned %s; want only that one", r, got.Status.ProviderID)
	}

	srv.FleetExtraInstances(1)
	srv.Inject("TerminateInstances", 1, ec2test.Fault{Err: &ec2test.APIError{Code: "UnauthorizedOperation", Message: "You are not authorized to perform this operation."}})
	tr := &Tracker{}
	cl = ec2Claim("default-extra2")
	tr.Begin(cl, false, nil, t0)
	got, err = p.Create(ctx, &cl)
	if err != nil {
		t.Fatal(err)
	}
	tr.Launched(cl.Name, got)
	insts, err := p.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var extra string
	for _, i := range insts {
		if i.Name == cl.Name && i.Status.ProviderID != got.Status.ProviderID {
			extra = i.Status.ProviderID
		}
	}
	if extra == "" {
		t.Fatalf("listing = %v: the extra instance is not there to test with", insts)
	}
	acts := tr.Reconcile(insts, nil, []string{"default"}, t0.Add(time.Minute), t0.Add(time.Minute))
	var orphans []string
	for _, a := range acts {
		if a.Kind == ActOrphan {
			orphans = append(orphans, a.ProviderID)
		} else if a.Kind == ActStray && a.ProviderID == extra {
			t.Errorf("the extra instance was reported a stray and left running")
		}
	}
	if diff := cmp.Diff([]string{extra}, orphans); diff != "" {
		t.Fatalf("orphans (-want +got):\n%s", diff)
	}
	// What collectOrphan does with it.
	if err := p.Delete(ctx, extra); err != nil {
		t.Fatalf("Delete(%s) = %v", extra, err)
	}
	if err := p.Delete(ctx, extra); !cloudprovider.IsNotFound(err) {
		t.Errorf("second Delete(%s) = %v, want NotFound", extra, err)
	}
	// Left running: the two claims' own instances.
	own := got.Status.ProviderID[strings.LastIndexByte(got.Status.ProviderID, '/')+1:] + " default-extra2"
	if r := running(srv); len(r) != 2 || !strings.Contains(strings.Join(r, ","), own) {
		t.Errorf("running instances = %v, want the two claims' own", r)
	}
}
