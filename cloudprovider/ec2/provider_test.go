package ec2_test

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
	corev1 "k8s.io/api/core/v1"
)

const queueURL = "https://sqs.us-east-1.amazonaws.com/123456789012/interruptions"

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

type fixture struct {
	srv   *ec2test.Server
	p     *ec2.Provider
	class *ec2.NodeClass
	clock *clock
}

func discovery() map[string]string {
	return map[string]string{ec2test.DiscoveryTag: ec2test.DiscoveryValue}
}

func newFixture(t testing.TB, srvOpts []ec2test.Option, mutate func(*ec2.Options)) *fixture {
	t.Helper()
	srv := ec2test.NewServer(srvOpts...)
	t.Cleanup(srv.Close)
	cfg := srv.Config("us-east-1")
	prices, err := ec2test.StaticPrices("us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{srv: srv, clock: &clock{now: time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)}}
	f.class = &ec2.NodeClass{
		Name:                       "default",
		AMISelectorTerms:           []ec2.AMISelectorTerm{{Alias: "al2023@latest"}},
		SubnetSelectorTerms:        []ec2.SubnetSelectorTerm{{Tags: discovery()}},
		SecurityGroupSelectorTerms: []ec2.SecurityGroupSelectorTerm{{Tags: discovery()}},
		Role:                       "KarpenterNodeRole",
		Tags:                       map[string]string{"team": "platform"},
	}
	var mu sync.Mutex
	opts := ec2.Options{
		Cluster: ec2.Cluster{Name: "test", Endpoint: "https://api.test:6443", CABundle: []byte("-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n"),
			ServiceCIDR: "10.100.0.0/16", ClusterDNS: "10.100.0.10", KubernetesVersion: "1.33"},
		Region: "us-east-1",
		EC2:    awsec2.NewFromConfig(cfg), SSM: ssm.NewFromConfig(cfg), SQS: sqs.NewFromConfig(cfg), QueueURL: queueURL,
		Prices: prices,
		NodeClass: func(name string) (*ec2.NodeClass, bool) {
			mu.Lock()
			defer mu.Unlock()
			if name != f.class.Name {
				return nil, false
			}
			c := *f.class
			return &c, true
		},
		Now: f.clock.Now,
	}
	if mutate != nil {
		mutate(&opts)
	}
	if !fullCatalog(t) {
		if err := srv.SetInstanceFamilies("m5", "m5a", "c5", "c5a", "m7g"); err != nil {
			t.Fatal(err)
		}
	}
	f.p, err = ec2.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// fullCatalog reports whether the test needs every built-in type; the others use five families
// so the suite stays fast under -race.
func fullCatalog(t testing.TB) bool {
	return strings.HasPrefix(t.Name(), "TestInstanceTypes") || strings.HasPrefix(t.Name(), "BenchmarkInstanceTypes")
}

func claim(name string, types []string, reqs ...nodeplan.Requirement) *nodeplan.NodeClaim {
	return &nodeplan.NodeClaim{
		Name: name, NodePool: "default", NodeClassRef: nodeplan.NodeClassRef{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		InstanceTypeOptions: types, Requirements: nodeplan.NewRequirements(reqs...),
		Labels: map[string]string{nodeplan.LabelNodePool: "default", "team": "web"},
		Taints: []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}},
	}
}

func pool() *nodeplan.NodePool {
	return &nodeplan.NodePool{Name: "default", Template: nodeplan.NodeClaimTemplate{NodeClassRef: nodeplan.NodeClassRef{Name: "default"}}}
}

func TestInstanceTypes(t *testing.T) {
	f := newFixture(t, nil, nil)
	its, err := f.p.InstanceTypes(context.Background(), pool())
	if err != nil {
		t.Fatal(err)
	}
	if len(its) < 1300 {
		t.Fatalf("InstanceTypes() returned %d types, want every built-in type", len(its))
	}
	i := slices.IndexFunc(its, func(it nodeplan.InstanceType) bool { return it.Name == "c5a.2xlarge" })
	if i < 0 {
		t.Fatal("c5a.2xlarge missing")
	}
	it := its[i]
	alloc := it.Allocatable()
	for res, want := range map[corev1.ResourceName]string{"cpu": "7910m", "memory": "14162Mi", "pods": "58", "ephemeral-storage": "17Gi", "vpc.amazonaws.com/pod-eni": "38"} {
		if got := alloc[res]; got.String() != want {
			t.Errorf("c5a.2xlarge allocatable %s = %s, want %s", res, got.String(), want)
		}
	}
	if it.Labels[nodeplan.LabelRegion] != "us-east-1" || it.Labels[nodeplan.LabelInstanceFamily] != "c5a" {
		t.Errorf("labels = %v", it.Labels)
	}
	if len(it.Offerings) != 6 {
		t.Errorf("offerings = %v, want 3 zones × 2 capacity types", it.Offerings)
	}
	for _, o := range it.Offerings {
		if !o.Available || o.Price <= 0 {
			t.Errorf("offering %+v not available/priced", o)
		}
	}
	if f.srv.Calls("DescribeInstanceTypes") < 14 {
		t.Errorf("DescribeInstanceTypes called %d times, want paging by 100", f.srv.Calls("DescribeInstanceTypes"))
	}
	// Cached: no further EC2 calls.
	before := f.srv.Calls("DescribeInstanceTypes")
	if _, err := f.p.InstanceTypes(context.Background(), pool()); err != nil || f.srv.Calls("DescribeInstanceTypes") != before {
		t.Errorf("second InstanceTypes() = %v, calls %d → %d", err, before, f.srv.Calls("DescribeInstanceTypes"))
	}
	// An unknown class is not ready.
	bad := pool()
	bad.Template.NodeClassRef.Name = "missing"
	if _, err := f.p.InstanceTypes(context.Background(), bad); !cloudprovider.IsNodeClassNotReady(err) {
		t.Errorf("InstanceTypes(missing class) error = %v", err)
	}
}

func TestCreateGetListDelete(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx := context.Background()
	got, err := f.p.Create(ctx, claim("web-1", []string{"m5.large", "c5.large"}, nodeplan.In(nodeplan.LabelCapacityType, "on-demand")))
	if err != nil {
		t.Fatal(err)
	}
	st := got.Status
	if !strings.HasPrefix(st.ProviderID, "aws:///us-east-1") || st.CapacityType != "on-demand" || st.ImageID != "ami-al2023x86" || st.Price <= 0 {
		t.Errorf("Create() status = %+v", st)
	}
	if st.InstanceType != "c5.large" && st.InstanceType != "m5.large" {
		t.Errorf("Create() instance type = %s", st.InstanceType)
	}
	if a := st.Allocatable[corev1.ResourceMemory]; a.IsZero() || got.Labels[nodeplan.LabelZone] != st.Zone {
		t.Errorf("Create() allocatable/labels missing: %v %v", st.Allocatable, got.Labels)
	}
	req := f.srv.Requests("CreateFleet")[0].Form
	for k, want := range map[string]string{"Type": "instant", "TargetCapacitySpecification.TotalTargetCapacity": "1",
		"TargetCapacitySpecification.DefaultTargetCapacityType": "on-demand", "OnDemandOptions.AllocationStrategy": "lowest-price"} {
		if req.Get(k) != want {
			t.Errorf("CreateFleet %s = %q, want %q", k, req.Get(k), want)
		}
	}
	if !strings.HasPrefix(req.Get("ClientToken"), "nodeplan-") {
		t.Errorf("CreateFleet ClientToken = %q", req.Get("ClientToken"))
	}
	inst := f.srv.Instances()[0]
	for k, want := range map[string]string{"kubernetes.io/cluster/test": "owned", "karpenter.sh/nodepool": "default", "karpenter.sh/nodeclaim": "web-1",
		"karpenter.k8s.aws/ec2nodeclass": "default", "team": "platform", "eks:eks-cluster-name": "test"} {
		if inst.Tags[k] != want {
			t.Errorf("instance tag %s = %q, want %q", k, inst.Tags[k], want)
		}
	}
	lts := f.srv.LaunchTemplates()
	if len(lts) != 1 || lts[0].Data.Get("MetadataOptions.HttpTokens") != "required" || lts[0].Data.Get("IamInstanceProfile.Name") != "KarpenterNodeRole" {
		t.Fatalf("launch templates = %+v", lts)
	}
	ud, _ := base64.StdEncoding.DecodeString(lts[0].Data.Get("UserData"))
	for _, want := range []string{"application/node.eks.aws", `name: test`, `apiServerEndpoint: https://api.test:6443`, `cidr: 10.100.0.0/16`,
		`- 10.100.0.10`, `key: dedicated`, `key: karpenter.sh/unregistered`, "--node-labels=karpenter.k8s.aws/ec2nodeclass=default,karpenter.sh/nodepool=default,team=web"} {
		if !strings.Contains(string(ud), want) {
			t.Errorf("userData lacks %q:\n%s", want, ud)
		}
	}

	// A second launch with the same content reuses the template.
	second, err := f.p.Create(ctx, claim("web-2", []string{"m5.large"}, nodeplan.In(nodeplan.LabelCapacityType, "on-demand")))
	if err != nil {
		t.Fatal(err)
	}
	if n := f.srv.Calls("CreateLaunchTemplate"); n != 1 {
		t.Errorf("CreateLaunchTemplate called %d times, want 1", n)
	}

	g, err := f.p.Get(ctx, st.ProviderID)
	if err != nil || g.Status.ProviderID != st.ProviderID || g.Name != "web-1" || g.Status.InstanceType != st.InstanceType || g.Status.ImageID != st.ImageID {
		t.Fatalf("Get() = %+v, %v", g, err)
	}
	list, err := f.p.List(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("List() = %d, %v; want 2", len(list), err)
	}
	if err := f.p.Delete(ctx, st.ProviderID); err != nil {
		t.Fatalf("Delete() = %v", err)
	}
	if err := f.p.Delete(ctx, st.ProviderID); !cloudprovider.IsNotFound(err) {
		t.Errorf("second Delete() = %v, want NotFound", err)
	}
	f.p.List(ctx) // describing moves shutting-down to terminated
	if _, err := f.p.Get(ctx, st.ProviderID); !cloudprovider.IsNotFound(err) {
		t.Errorf("Get() after Delete = %v, want NotFound", err)
	}
	if err := f.p.Delete(ctx, "aws:///us-east-1a/i-0doesnotexist"); !cloudprovider.IsNotFound(err) {
		t.Errorf("Delete(unknown) = %v, want NotFound", err)
	}
	if list, _ := f.p.List(ctx); len(list) != 1 || list[0].Status.ProviderID != second.Status.ProviderID {
		t.Errorf("List() after Delete = %v", list)
	}
}

// cheapestSpot returns the cheapest spot offering of the named types.
func cheapestSpot(t *testing.T, f *fixture, names ...string) cloudprovider.OfferingKey {
	its, err := f.p.InstanceTypes(context.Background(), pool())
	if err != nil {
		t.Fatal(err)
	}
	var best cloudprovider.OfferingKey
	price := 0.0
	for _, it := range its {
		if !slices.Contains(names, it.Name) {
			continue
		}
		for _, o := range it.Offerings {
			if o.CapacityType == "spot" && o.Available && (price == 0 || o.Price < price) {
				best, price = cloudprovider.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: "spot"}, o.Price
			}
		}
	}
	return best
}

func TestCapacityErrorIsAvoided(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx := context.Background()
	types := []string{"m5.large", "m5a.large", "c5.large"}
	hot := cheapestSpot(t, f, types...)
	f.srv.SetCapacityError("spot", hot.InstanceType, hot.Zone, "")

	first, err := f.p.Create(ctx, claim("a", types))
	if err != nil {
		t.Fatalf("Create() = %v", err)
	}
	if k := (cloudprovider.OfferingKey{InstanceType: first.Status.InstanceType, Zone: first.Status.Zone, CapacityType: first.Status.CapacityType}); k == hot {
		t.Fatalf("launched into the offering out of capacity %v", k)
	}
	its, _ := f.p.InstanceTypes(ctx, pool())
	for _, it := range its {
		for _, o := range it.Offerings {
			if it.Name == hot.InstanceType && o.Zone == hot.Zone && o.CapacityType == "spot" && o.Available {
				t.Errorf("offering %v still available after a capacity error", hot)
			}
		}
	}
	// The next launch does not even ask for it.
	if _, err := f.p.Create(ctx, claim("b", types)); err != nil {
		t.Fatal(err)
	}
	reqs := f.srv.Requests("CreateFleet")
	last := reqs[len(reqs)-1].Form
	for k, v := range last {
		if strings.HasSuffix(k, ".InstanceType") && v[0] == hot.InstanceType && last.Get(strings.TrimSuffix(k, "InstanceType")+"AvailabilityZone") == hot.Zone {
			t.Errorf("second CreateFleet still offers %v", hot)
		}
	}
	// Three minutes later it is tried again; failing again keeps it away longer (6 minutes).
	f.clock.Add(3*time.Minute + time.Second)
	if _, err := f.p.Create(ctx, claim("c", types)); err != nil {
		t.Fatal(err)
	}
	f.clock.Add(3*time.Minute + time.Second)
	if k := cheapestSpot(t, f, types...); k == hot {
		t.Errorf("repeatedly failing offering available again after 3 minutes; want backoff")
	}
}

func TestAllOfferingsOutOfCapacity(t *testing.T) {
	f := newFixture(t, nil, nil)
	for _, z := range f.srv.Zones("us-east-1") {
		f.srv.SetCapacityError("spot", "m5.large", z, "InsufficientInstanceCapacity")
	}
	_, err := f.p.Create(context.Background(), claim("a", []string{"m5.large"}, nodeplan.In(nodeplan.LabelCapacityType, "spot")))
	var ice *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &ice) || len(ice.Offerings) != 3 {
		t.Fatalf("Create() error = %v, want capacity error naming 3 offerings", err)
	}
	if len(f.srv.Instances()) != 0 {
		t.Errorf("instances launched: %v", f.srv.Instances())
	}
	// All of them are now known unavailable: the next Create fails without calling EC2.
	calls := f.srv.Calls("CreateFleet")
	if _, err := f.p.Create(context.Background(), claim("b", []string{"m5.large"}, nodeplan.In(nodeplan.LabelCapacityType, "spot"))); !cloudprovider.IsInsufficientCapacity(err) || f.srv.Calls("CreateFleet") != calls {
		t.Errorf("Create() = %v with %d new CreateFleet calls", err, f.srv.Calls("CreateFleet")-calls)
	}
}

func TestThrottledLaunchMakesOneInstance(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Throttle("CreateFleet", 2)
	f.srv.Throttle("DescribeLaunchTemplates", 1)
	if _, err := f.p.Create(context.Background(), claim("a", []string{"m5.large"})); err != nil {
		t.Fatal(err)
	}
	if n := len(f.srv.Instances()); n != 1 || f.srv.Calls("CreateFleet") != 3 {
		t.Errorf("%d instances after %d CreateFleet calls; want 1 after 3", n, f.srv.Calls("CreateFleet"))
	}
}

func TestLostFleetResponseReturnsInstance(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.FailFleetAfterLaunch(1, nil) // the SDK retries with the same token and gets the instance
	got, err := f.p.Create(context.Background(), claim("a", []string{"m5.large"}))
	if err != nil {
		t.Fatal(err)
	}
	insts := f.srv.Instances()
	if len(insts) != 1 || !strings.HasSuffix(got.Status.ProviderID, insts[0].ID) {
		t.Errorf("instances %v, returned %s; want the one instance returned", insts, got.Status.ProviderID)
	}
}

func TestFailedFleetTerminatesInstance(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.FailFleetAfterLaunch(10, nil) // every retry fails: the launch fails
	_, err := f.p.Create(context.Background(), claim("a", []string{"m5.large"}))
	if err == nil || cloudprovider.LaunchReason(err) == "" {
		t.Fatalf("Create() error = %v, want a LaunchError", err)
	}
	insts := f.srv.Instances()
	if len(insts) != 1 || insts[0].State != "shutting-down" {
		t.Errorf("instances = %+v; want the launched one terminated", insts)
	}
}

func TestLaunchTemplateDeletedOutside(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx := context.Background()
	if _, err := f.p.Create(ctx, claim("a", []string{"m5.large"})); err != nil {
		t.Fatal(err)
	}
	f.srv.DeleteLaunchTemplates()
	if _, err := f.p.Create(ctx, claim("b", []string{"m5.large"})); err != nil {
		t.Fatalf("Create() after templates vanished = %v", err)
	}
	if n := f.srv.Calls("CreateLaunchTemplate"); n != 2 {
		t.Errorf("CreateLaunchTemplate calls = %d, want 2", n)
	}
}

func TestLaunchErrorsMapToReasons(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.Inject("CreateFleet", 1, ec2test.Fault{Err: &ec2test.APIError{Code: "UnauthorizedOperation", Message: "You are not authorized"}})
	_, err := f.p.Create(context.Background(), claim("a", []string{"m5.large"}))
	if r := cloudprovider.LaunchReason(err); r != cloudprovider.ReasonUnauthorized {
		t.Errorf("Create() reason = %q (%v), want Unauthorized", r, err)
	}
	f.srv.Inject("DescribeImages", 1, ec2test.Fault{Err: &ec2test.APIError{Code: "InvalidAMIID.NotFound", Message: "gone"}})
	f.clock.Add(time.Hour) // expire the class cache
	if _, err := f.p.Create(context.Background(), claim("b", []string{"m5.large"})); !cloudprovider.IsNodeClassNotReady(err) {
		t.Errorf("Create() with unresolvable AMIs = %v, want NodeClassNotReady", err)
	}
}

func TestDrift(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx := context.Background()
	c, err := f.p.Create(ctx, claim("a", []string{"m5.large"}))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := f.p.IsDrifted(ctx, c); r != "" || err != nil {
		t.Fatalf("IsDrifted() = %q, %v; want none", r, err)
	}
	// A new AMI is published.
	f.srv.AddImage(ec2test.Image{ID: "ami-newer", Name: "al2023-new", Arch: "x86_64", Created: "2026-08-01T00:00:00Z", Owner: "amazon"})
	f.srv.SetParameter("/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id", "ami-newer")
	f.clock.Add(10 * time.Minute)
	if r, _ := f.p.IsDrifted(ctx, c); r != cloudprovider.DriftImage {
		t.Errorf("IsDrifted() after new AMI = %q, want AMIDrift", r)
	}
	f.srv.SetParameter("/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id", "ami-al2023x86")
	// Its subnet is deselected.
	f.srv.RemoveSubnet(f.srv.Instances()[0].SubnetID)
	f.clock.Add(10 * time.Minute)
	if r, _ := f.p.IsDrifted(ctx, c); r != cloudprovider.DriftSubnet {
		t.Errorf("IsDrifted() after subnet removal = %q, want SubnetDrift", r)
	}
	// The class's launch settings change.
	f.class.UserData = "echo hello"
	if r, _ := f.p.IsDrifted(ctx, c); r != cloudprovider.DriftNodeClass {
		t.Errorf("IsDrifted() after class change = %q, want NodeClassDrift", r)
	}
}

func TestSecurityGroupDrift(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx := context.Background()
	c, err := f.p.Create(ctx, claim("a", []string{"m5.large"}))
	if err != nil {
		t.Fatal(err)
	}
	f.srv.AddSecurityGroup(ec2test.SecurityGroup{ID: "sg-0extra", Name: "extra", Tags: discovery()})
	f.clock.Add(10 * time.Minute)
	if r, _ := f.p.IsDrifted(ctx, c); r != cloudprovider.DriftSecurityGroup {
		t.Errorf("IsDrifted() = %q, want SecurityGroupDrift", r)
	}
}

func TestInterruptions(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx := context.Background()
	c, err := f.p.Create(ctx, claim("a", []string{"m5.large"}, nodeplan.In(nodeplan.LabelCapacityType, "spot")))
	if err != nil {
		t.Fatal(err)
	}
	id := f.srv.Instances()[0].ID
	f.srv.SendSpotInterruption(queueURL, id)
	f.srv.SendSpotInterruption(queueURL, "i-0notours")
	f.srv.SendMessage(queueURL, "not json")
	f.srv.SendRebalanceRecommendation(queueURL, id)
	f.srv.SendStateChange(queueURL, id, "running") // not an interruption
	evs, err := f.p.Interruptions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Kind != cloudprovider.InterruptionSpot || evs[0].ProviderID != c.Status.ProviderID ||
		evs[0].Deadline.Sub(evs[0].Time) != 2*time.Minute || evs[1].Kind != cloudprovider.InterruptionRebalance {
		t.Fatalf("Interruptions() = %+v", evs)
	}
	if n := f.srv.QueueLength(queueURL); n != 0 {
		t.Errorf("%d messages left in the queue, want all deleted", n)
	}
	if evs, err := f.p.Interruptions(ctx); len(evs) != 0 || err != nil {
		t.Errorf("second Interruptions() = %v, %v", evs, err)
	}
	its, _ := f.p.InstanceTypes(ctx, pool())
	for _, it := range its {
		for _, o := range it.Offerings {
			if it.Name == c.Status.InstanceType && o.Zone == c.Status.Zone && o.CapacityType == "spot" && o.Available {
				t.Error("interrupted spot offering still available")
			}
		}
	}
	f.srv.SendScheduledChange(queueURL, id, f.clock.Now().Add(48*time.Hour))
	f.srv.SendStateChange(queueURL, id, "stopping")
	evs, _ = f.p.Interruptions(ctx)
	if len(evs) != 2 || evs[0].Kind != cloudprovider.InterruptionScheduledChange || evs[0].Deadline.IsZero() || evs[1].State != "stopping" {
		t.Errorf("Interruptions() = %+v", evs)
	}
}

func TestListReportsUnknownInstances(t *testing.T) {
	f := newFixture(t, nil, nil)
	f.srv.LaunchInstance(ec2test.Instance{Type: "m5.large", Zone: "us-east-1a", Tags: map[string]string{"kubernetes.io/cluster/test": "owned", "karpenter.sh/nodepool": "default"}})
	f.srv.LaunchInstance(ec2test.Instance{Type: "m5.large", Zone: "us-east-1a", Tags: map[string]string{"kubernetes.io/cluster/other": "owned", "karpenter.sh/nodepool": "default"}})
	list, err := f.p.List(context.Background())
	if err != nil || len(list) != 1 || list[0].Name != "" || list[0].NodePool != "default" {
		t.Fatalf("List() = %+v, %v; want the one stray instance of this cluster", list, err)
	}
}

func TestConcurrentGetsAreBatched(t *testing.T) {
	f := newFixture(t, nil, func(o *ec2.Options) { o.BatchWindow = 50 * time.Millisecond })
	ctx := context.Background()
	var ids []string
	for i := range 5 {
		c, err := f.p.Create(ctx, claim(string(rune('a'+i)), []string{"m5.large"}))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.Status.ProviderID)
	}
	before := f.srv.Calls("DescribeInstances")
	var wg sync.WaitGroup
	for _, id := range append(ids, "aws:///us-east-1a/i-0missing") {
		wg.Go(func() {
			c, err := f.p.Get(ctx, id)
			if strings.Contains(id, "missing") {
				if !cloudprovider.IsNotFound(err) {
					t.Errorf("Get(%s) = %v, want NotFound", id, err)
				}
				return
			}
			if err != nil || c.Status.ProviderID != id {
				t.Errorf("Get(%s) = %v, %v", id, c, err)
			}
		})
	}
	wg.Wait()
	// One batched call that fails on the unknown id, then one call per id.
	if n := f.srv.Calls("DescribeInstances") - before; n > 1+6 {
		t.Errorf("%d DescribeInstances calls for 6 concurrent Gets", n)
	}
	wg = sync.WaitGroup{}
	before = f.srv.Calls("TerminateInstances")
	for _, id := range ids {
		wg.Go(func() {
			if err := f.p.Delete(ctx, id); err != nil {
				t.Errorf("Delete(%s) = %v", id, err)
			}
		})
	}
	wg.Wait()
	if n := f.srv.Calls("TerminateInstances") - before; n != 1 {
		t.Errorf("%d TerminateInstances calls for 5 concurrent Deletes, want 1", n)
	}
}

func TestUserDataFamilies(t *testing.T) {
	tests := []struct {
		name    string
		class   func(*ec2.NodeClass)
		kubeadm *ec2.KubeadmJoin
		want    []string
	}{
		{"bottlerocket", func(c *ec2.NodeClass) {
			c.AMISelectorTerms = []ec2.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
			c.Kubelet.MaxPods = 110
		}, nil, []string{"[settings.kubernetes]", `api-server = "https://api.test:6443"`, `cluster-name = "test"`, "max-pods = 110",
			`team = "web"`, `dedicated = ["web:NoSchedule"]`, `cluster-dns-ip = "10.100.0.10"`}},
		{"kubeadm", func(c *ec2.NodeClass) {
			c.AMIFamily = ec2.AMIFamilyCustom
			c.AMISelectorTerms = []ec2.AMISelectorTerm{{Tags: discovery()}}
			c.Kubelet.MaxPods = 110
			c.UserData = "echo prepare"
		}, &ec2.KubeadmJoin{Token: "abcdef.0123456789abcdef", CACertHashes: []string{"sha256:00ff"}},
			[]string{"kind: JoinConfiguration", `apiServerEndpoint: "api.test:6443"`, `token: "abcdef.0123456789abcdef"`, `- "sha256:00ff"`,
				`key: "dedicated"`, `value: "web"`, `effect: "NoSchedule"`, `value: "karpenter.k8s.aws/ec2nodeclass=default,karpenter.sh/nodepool=default,team=web,topology.k8s.aws/zone-id=@ZONE_ID@"`,
				`maxPods: 110`, "name: provider-id", "echo prepare", "kubeadm join --config"}},
		{"custom verbatim", func(c *ec2.NodeClass) {
			c.AMIFamily = ec2.AMIFamilyCustom
			c.AMISelectorTerms = []ec2.AMISelectorTerm{{ID: "ami-al2023x86"}}
			c.UserData = "#!/bin/bash\necho mine"
		}, nil, []string{"#!/bin/bash\necho mine"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, nil, func(o *ec2.Options) { o.Cluster.Kubeadm = tt.kubeadm })
			tt.class(f.class)
			if _, err := f.p.Create(context.Background(), claim("a", []string{"m5.large"})); err != nil {
				t.Fatal(err)
			}
			lts := f.srv.LaunchTemplates()
			if len(lts) != 1 {
				t.Fatalf("launch templates = %v", lts)
			}
			ud, _ := base64.StdEncoding.DecodeString(lts[0].Data.Get("UserData"))
			for _, want := range tt.want {
				if !strings.Contains(string(ud), want) {
					t.Errorf("userData lacks %q:\n%s", want, ud)
				}
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	_, err := ec2.New(ec2.Options{QueueWait: time.Minute, SQS: sqs.New(sqs.Options{}), Cluster: ec2.Cluster{Kubeadm: &ec2.KubeadmJoin{Token: "x"}}})
	for _, want := range []string{"Cluster.Name", "Options.EC2", "Options.NodeClass", "QueueURL", "QueueWait", "bootstrap token", "CACertHashes"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New() error = %v, want a mention of %s", err, want)
		}
	}
	_ = aws.String
}
