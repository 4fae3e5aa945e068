package cloudprovider_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func testCatalog() []nodeplan.InstanceType {
	mk := func(name string, cpu string, od, spot float64) nodeplan.InstanceType {
		return nodeplan.InstanceType{
			Name:     name,
			Labels:   map[string]string{nodeplan.LabelInstanceType: name, nodeplan.LabelArch: "amd64"},
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi")},
			Overhead: nodeplan.Overhead{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
			Offerings: []nodeplan.Offering{
				{Zone: "zone-a", CapacityType: nodeplan.CapacityTypeOnDemand, Price: od, Available: true},
				{Zone: "zone-b", CapacityType: nodeplan.CapacityTypeOnDemand, Price: od, Available: true},
				{Zone: "zone-a", CapacityType: nodeplan.CapacityTypeSpot, Price: spot, Available: true},
				{Zone: "zone-b", CapacityType: nodeplan.CapacityTypeSpot, Price: spot + 0.001, Available: true},
			},
		}
	}
	return []nodeplan.InstanceType{mk("small", "2", 0.10, 0.03), mk("large", "4", 0.20, 0.05)}
}

type launched struct {
	Type, Zone string
	CT         nodeplan.CapacityType
	Price      float64
}

func summary(c *nodeplan.NodeClaim) launched {
	return launched{c.Status.InstanceType, c.Status.Zone, c.Status.CapacityType, c.Status.Price}
}

func TestMemoryCreateChoosesCheapestAllowed(t *testing.T) {
	tests := []struct {
		name    string
		options []string
		reqs    nodeplan.Requirements
		want    launched
	}{
		{"cheapest overall", []string{"small", "large"}, nodeplan.Requirements{}, launched{"small", "zone-a", "spot", 0.03}},
		{"zone b", []string{"small", "large"}, nodeplan.NewRequirements(nodeplan.In(nodeplan.LabelZone, "zone-b")), launched{"small", "zone-b", "spot", 0.031}},
		{"on-demand", []string{"large"}, nodeplan.NewRequirements(nodeplan.In(nodeplan.LabelCapacityType, "on-demand")), launched{"large", "zone-a", "on-demand", 0.20}},
		{"any type", nil, nodeplan.NewRequirements(nodeplan.In(nodeplan.LabelInstanceType, "large")), launched{"large", "zone-a", "spot", 0.05}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &cloudprovider.Memory{Catalog: testCatalog()}
			got, err := m.Create(context.Background(), &nodeplan.NodeClaim{Name: "c", NodePool: "p", InstanceTypeOptions: tt.options, Requirements: tt.reqs})
			if err != nil {
				t.Fatalf("Create() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, summary(got)); diff != "" {
				t.Errorf("Create() mismatch (-want +got):\n%s", diff)
			}
			if got.Labels[nodeplan.LabelNodePool] != "p" || got.Labels[nodeplan.LabelZone] != tt.want.Zone {
				t.Errorf("Create() labels = %v, want nodepool and zone", got.Labels)
			}
			if want := "memory:///" + tt.want.Zone + "/i-00000000000000001"; got.Status.ProviderID != want {
				t.Errorf("ProviderID = %q, want %q", got.Status.ProviderID, want)
			}
		})
	}
}

func TestMemoryCapacityErrorFallsBackAndIsLearned(t *testing.T) {
	now := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	m := &cloudprovider.Memory{Catalog: testCatalog(), Now: func() time.Time { return now }}
	ctx := context.Background()
	cheapest := cloudprovider.OfferingKey{InstanceType: "small", Zone: "zone-a", CapacityType: "spot"}
	m.SetCapacityError(cheapest, true)
	claim := &nodeplan.NodeClaim{Name: "c", InstanceTypeOptions: []string{"small", "large"}}
	got, err := m.Create(ctx, claim)
	if err != nil {
		t.Fatalf("Create() error = %v", err)
	}
	if diff := cmp.Diff(launched{"small", "zone-b", "spot", 0.031}, summary(got)); diff != "" {
		t.Errorf("Create() mismatch (-want +got):\n%s", diff)
	}
	its, _ := m.InstanceTypes(ctx, &nodeplan.NodePool{Name: "p"})
	for _, it := range its {
		for _, o := range it.Offerings {
			k := cloudprovider.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}
			if o.Available == (k == cheapest) {
				t.Errorf("InstanceTypes: %v Available = %v", k, o.Available)
			}
		}
	}
	now = now.Add(4 * time.Minute) // the learned unavailability expires
	its, _ = m.InstanceTypes(ctx, nil)
	if !its[1].Offerings[2].Available {
		t.Errorf("offering still unavailable after UnavailableFor")
	}

	// Every allowed offering out of capacity: a typed error naming them.
	only := &nodeplan.NodeClaim{Name: "d", InstanceTypeOptions: []string{"small"},
		Requirements: nodeplan.NewRequirements(nodeplan.In(nodeplan.LabelCapacityType, "spot"))}
	m.SetCapacityError(cloudprovider.OfferingKey{InstanceType: "small", Zone: "zone-b", CapacityType: "spot"}, true)
	_, err = m.Create(ctx, only)
	var ice *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &ice) {
		t.Fatalf("Create() error = %v, want InsufficientCapacityError", err)
	}
	want := []cloudprovider.OfferingKey{cheapest, {InstanceType: "small", Zone: "zone-b", CapacityType: "spot"}}
	if diff := cmp.Diff(want, ice.Offerings); diff != "" {
		t.Errorf("ICE offerings mismatch (-want +got):\n%s", diff)
	}
	// Both are now learned: the next attempt fails without trying, naming none.
	_, err = m.Create(ctx, only)
	if !errors.As(err, &ice) || len(ice.Offerings) != 0 {
		t.Errorf("Create() error = %v, want InsufficientCapacityError with no offerings", err)
	}
	m.ClearCapacityErrors()
	if _, err := m.Create(ctx, only); err != nil {
		t.Errorf("Create() after ClearCapacityErrors error = %v", err)
	}
}

func TestMemoryDeleteGetList(t *testing.T) {
	m := &cloudprovider.Memory{Catalog: testCatalog()}
	ctx := context.Background()
	a, _ := m.Create(ctx, &nodeplan.NodeClaim{Name: "a"})
	b, _ := m.Create(ctx, &nodeplan.NodeClaim{Name: "b"})
	list, err := m.List(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "a" || list[1].Name != "b" {
		t.Fatalf("List() = %v, %v, want a, b", list, err)
	}
	got, err := m.Get(ctx, a.Status.ProviderID)
	if err != nil {
		t.Fatalf("Get() error = %v", err)
	}
	if diff := cmp.Diff(a, got); diff != "" {
		t.Errorf("Get() mismatch (-want +got):\n%s", diff)
	}
	got.Labels["mutated"] = "yes" // results are copies
	if again, _ := m.Get(ctx, a.Status.ProviderID); again.Labels["mutated"] != "" {
		t.Errorf("Get() returned shared memory")
	}
	if err := m.Delete(ctx, a.Status.ProviderID); err != nil {
		t.Fatalf("Delete() error = %v", err)
	}
	if err := m.Delete(ctx, a.Status.ProviderID); !cloudprovider.IsNotFound(err) {
		t.Errorf("second Delete() error = %v, want NotFound", err)
	}
	if _, err := m.Get(ctx, a.Status.ProviderID); !cloudprovider.IsNotFound(err) {
		t.Errorf("Get() after Delete error = %v, want NotFound", err)
	}
	if list, _ := m.List(ctx); len(list) != 1 || list[0].Status.ProviderID != b.Status.ProviderID {
		t.Errorf("List() after Delete = %v", list)
	}
}

func TestMemoryInjectedFailures(t *testing.T) {
	m := &cloudprovider.Memory{Catalog: testCatalog()}
	ctx := context.Background()
	boom := &cloudprovider.LaunchError{Reason: cloudprovider.ReasonUnauthorized, Message: "denied"}
	m.FailNext(cloudprovider.OpCreate, boom)
	if _, err := m.Create(ctx, &nodeplan.NodeClaim{Name: "a"}); cloudprovider.LaunchReason(err) != cloudprovider.ReasonUnauthorized {
		t.Errorf("Create() error = %v, want Unauthorized", err)
	}
	if list, _ := m.List(ctx); len(list) != 0 {
		t.Errorf("failed Create launched %d nodes", len(list))
	}
	if _, err := m.Create(ctx, &nodeplan.NodeClaim{Name: "a"}); err != nil {
		t.Errorf("second Create() error = %v", err)
	}
	m.FailNext(cloudprovider.OpList, errors.New("x"))
	if _, err := m.List(ctx); err == nil {
		t.Errorf("List() error = nil, want injected")
	}
	if _, err := m.Create(ctx, &nodeplan.NodeClaim{Name: "z", InstanceTypeOptions: []string{"nope"}}); cloudprovider.LaunchReason(err) != cloudprovider.ReasonNoInstanceTypeOption {
		t.Errorf("Create(unknown type) error = %v", err)
	}
}

func TestMemoryLatencyHonoursContext(t *testing.T) {
	var slept time.Duration
	m := &cloudprovider.Memory{Catalog: testCatalog(), LaunchLatency: time.Minute,
		Sleep: func(ctx context.Context, d time.Duration) error { slept += d; return ctx.Err() }}
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := m.Create(ctx, &nodeplan.NodeClaim{Name: "a"}); err != nil || slept != time.Minute {
		t.Fatalf("Create() = %v, slept %v; want nil, 1m", err, slept)
	}
	cancel()
	if _, err := m.Create(ctx, &nodeplan.NodeClaim{Name: "b"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Create(cancelled) error = %v", err)
	}
	// Real timer path.
	m2 := &cloudprovider.Memory{Catalog: testCatalog(), LaunchLatency: time.Hour}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel2()
	if _, err := m2.Create(ctx2, &nodeplan.NodeClaim{Name: "c"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Create(deadline) error = %v", err)
	}
	if l, _ := m2.List(context.Background()); len(l) != 0 {
		t.Errorf("cancelled Create launched a node")
	}
}

func TestMemoryDriftAndInterruptions(t *testing.T) {
	m := &cloudprovider.Memory{Catalog: testCatalog()}
	ctx := context.Background()
	a, _ := m.Create(ctx, &nodeplan.NodeClaim{Name: "a"})
	if r, err := m.IsDrifted(ctx, a); r != "" || err != nil {
		t.Errorf("IsDrifted() = %q, %v; want none", r, err)
	}
	m.SetImageID("img-2")
	if r, _ := m.IsDrifted(ctx, a); r != cloudprovider.DriftImage {
		t.Errorf("IsDrifted() after image change = %q", r)
	}
	m.SetDrift(a.Status.ProviderID, cloudprovider.DriftSubnet)
	if r, _ := m.IsDrifted(ctx, a); r != cloudprovider.DriftSubnet {
		t.Errorf("IsDrifted() = %q, want SubnetDrift", r)
	}
	deadline := time.Now().Add(2 * time.Minute)
	if err := m.Interrupt(a.Status.ProviderID, cloudprovider.InterruptionSpot, deadline); err != nil {
		t.Fatal(err)
	}
	if err := m.Interrupt("memory:///x/i-9", cloudprovider.InterruptionSpot, deadline); !cloudprovider.IsNotFound(err) {
		t.Errorf("Interrupt(unknown) = %v", err)
	}
	evs, err := m.Interruptions(ctx)
	if err != nil || len(evs) != 1 || evs[0].ProviderID != a.Status.ProviderID || evs[0].Kind != cloudprovider.InterruptionSpot || !evs[0].Deadline.Equal(deadline) {
		t.Fatalf("Interruptions() = %+v, %v", evs, err)
	}
	if evs, _ := m.Interruptions(ctx); len(evs) != 0 {
		t.Errorf("second Interruptions() = %v, want none", evs)
	}
	its, _ := m.InstanceTypes(ctx, nil)
	for _, it := range its {
		for _, o := range it.Offerings {
			if it.Name == a.Status.InstanceType && o.Zone == a.Status.Zone && o.CapacityType == a.Status.CapacityType && o.Available {
				t.Errorf("interrupted spot offering still available")
			}
		}
	}
}

func TestMemoryConcurrent(t *testing.T) {
	m := &cloudprovider.Memory{Catalog: testCatalog()}
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			c, err := m.Create(ctx, &nodeplan.NodeClaim{Name: fmt.Sprint(i)})
			if err != nil {
				t.Error(err)
				return
			}
			m.SetCapacityError(cloudprovider.OfferingKey{InstanceType: "large", Zone: "zone-a", CapacityType: "spot"}, i%2 == 0)
			_, _ = m.InstanceTypes(ctx, nil)
			_, _ = m.List(ctx)
			_, _ = m.IsDrifted(ctx, c)
			_ = m.Interrupt(c.Status.ProviderID, cloudprovider.InterruptionRebalance, time.Time{})
			_, _ = m.Interruptions(ctx)
			if i%3 == 0 {
				_ = m.Delete(ctx, c.Status.ProviderID)
			}
		})
	}
	wg.Wait()
	list, _ := m.List(ctx)
	seen := map[string]bool{}
	for _, c := range list {
		if seen[c.Status.ProviderID] {
			t.Errorf("duplicate provider ID %s", c.Status.ProviderID)
		}
		seen[c.Status.ProviderID] = true
	}
	if len(list) != 16-6 {
		t.Errorf("List() has %d nodes, want 10", len(list))
	}
}

func TestErrorsMessagesAndUnwrap(t *testing.T) {
	inner := errors.New("api said no")
	tests := []struct {
		err  error
		want string
	}{
		{&cloudprovider.InsufficientCapacityError{Offerings: []cloudprovider.OfferingKey{{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "spot"}}, Err: inner},
			"cloudprovider: insufficient capacity for spot:m5.large:us-east-1a: api said no"},
		{&cloudprovider.InsufficientCapacityError{}, "cloudprovider: insufficient capacity: no available offering is allowed"},
		{&cloudprovider.NotFoundError{ProviderID: "aws:///a/i-1", Err: inner}, `cloudprovider: node "aws:///a/i-1" not found: api said no`},
		{&cloudprovider.NodeClassNotReadyError{NodeClass: "default", Reason: "no subnets", Err: inner}, `cloudprovider: node class "default" is not ready: no subnets: api said no`},
		{&cloudprovider.LaunchError{Reason: cloudprovider.ReasonImageNotFound, Message: "ami-1", Err: inner}, "cloudprovider: launch failed (AMINotFound): ami-1: api said no"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
		if tt.want != tests[1].want && !errors.Is(tt.err, inner) {
			t.Errorf("errors.Is(%v, inner) = false", tt.err)
		}
	}
	wrapped := fmt.Errorf("ctx: %w", tests[2].err)
	if !cloudprovider.IsNotFound(wrapped) || cloudprovider.IsInsufficientCapacity(wrapped) || cloudprovider.IsNodeClassNotReady(wrapped) {
		t.Errorf("Is* helpers misclassify %v", wrapped)
	}
}

func ExampleMemory() {
	m := &cloudprovider.Memory{Catalog: testCatalog()}
	ctx := context.Background()
	m.SetCapacityError(cloudprovider.OfferingKey{InstanceType: "small", Zone: "zone-a", CapacityType: nodeplan.CapacityTypeSpot}, true)
	c, err := m.Create(ctx, &nodeplan.NodeClaim{Name: "web-1", InstanceTypeOptions: []string{"small", "large"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Status.ProviderID, c.Status.InstanceType, c.Status.CapacityType)
	fmt.Println(m.Delete(ctx, c.Status.ProviderID), cloudprovider.IsNotFound(m.Delete(ctx, c.Status.ProviderID)))
	// Output:
	// memory:///zone-b/i-00000000000000001 small spot
	// <nil> true
}
