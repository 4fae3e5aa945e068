package kwok

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
)

var epoch = time.Date(2026, 9, 1, 9, 0, 0, 0, time.UTC)

func rl(cpu, mem, pods string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
		corev1.ResourcePods: resource.MustParse(pods)}
}

// testCatalog: m.large is cheapest in 1b on demand and on spot in 1a; c.xlarge costs more.
func testCatalog() []nodeplan.InstanceType {
	return []nodeplan.InstanceType{
		{Name: "m.large", Labels: map[string]string{nodeplan.LabelArch: "amd64", nodeplan.LabelInstanceFamily: "m"},
			Capacity: rl("2", "8Gi", "29"),
			Overhead: nodeplan.Overhead{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
			Offerings: []nodeplan.Offering{
				{Zone: "zone-1a", CapacityType: nodeplan.CapacityTypeOnDemand, Price: 0.10, Available: true},
				{Zone: "zone-1b", CapacityType: nodeplan.CapacityTypeOnDemand, Price: 0.09, Available: true},
				{Zone: "zone-1a", CapacityType: nodeplan.CapacityTypeSpot, Price: 0.03, Available: true},
			}},
		{Name: "c.xlarge", Labels: map[string]string{nodeplan.LabelArch: "arm64", nodeplan.LabelInstanceFamily: "c"},
			Capacity: rl("4", "8Gi", "58"),
			Offerings: []nodeplan.Offering{
				{Zone: "zone-1a", CapacityType: nodeplan.CapacityTypeOnDemand, Price: 0.20, Available: true},
			}},
	}
}

func newProvider(t *testing.T, now *time.Time) (*Provider, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset()
	return &Provider{Client: client, Catalog: testCatalog(), Now: func() time.Time { return *now }}, client
}

func onDemand(t *testing.T) nodeplan.Requirements {
	t.Helper()
	r, err := nodeplan.NewRequirement(nodeplan.LabelCapacityType, corev1.NodeSelectorOpIn, string(nodeplan.CapacityTypeOnDemand))
	if err != nil {
		t.Fatal(err)
	}
	return nodeplan.NewRequirements(r)
}

func TestCreateWritesTheNode(t *testing.T) {
	now := epoch
	p, client := newProvider(t, &now)
	ctx := context.Background()
	claim := &nodeplan.NodeClaim{
		Name: "default-abcde", NodePool: "default", Requirements: onDemand(t),
		InstanceTypeOptions: []string{"m.large", "c.xlarge"},
		Labels:              map[string]string{"eks-team": "my-team"},
		Taints:              []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}},
		StartupTaints:       []corev1.Taint{{Key: "cni.example/not-ready", Effect: corev1.TaintEffectNoExecute}},
	}
	got, err := p.Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus := nodeplan.NodeClaimStatus{ProviderID: "kwok://default-abcde", InstanceType: "m.large", Zone: "zone-1b",
		CapacityType: nodeplan.CapacityTypeOnDemand, Price: 0.09, Capacity: rl("2", "8Gi", "29"),
		Allocatable: testCatalog()[0].Allocatable(), ImageID: "kwok-image-1", LaunchTime: epoch}
	if diff := cmp.Diff(wantStatus, got.Status); diff != "" {
		t.Errorf("Create(%s).Status (-want +got):\n%s", claim.Name, diff)
	}
	if got.Labels[nodeplan.LabelZone] != "zone-1b" || got.Labels[nodeplan.LabelNodePool] != "default" || got.Labels["eks-team"] != "my-team" {
		t.Errorf("Create(%s).Labels = %v, want the zone, the pool and the claim's labels", claim.Name, got.Labels)
	}

	n, err := client.CoreV1().Nodes().Get(ctx, "default-abcde", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Node of the claim: %v", err)
	}
	wantLabels := map[string]string{
		nodeplan.LabelArch: "amd64", nodeplan.LabelInstanceFamily: "m", "eks-team": "my-team",
		nodeplan.LabelInstanceType: "m.large", nodeplan.LabelZone: "zone-1b", nodeplan.LabelCapacityType: "on-demand",
		nodeplan.LabelNodePool: "default", nodeplan.LabelHostname: "default-abcde", nodeplan.LabelOS: "linux",
		LabelOwner: "nodeplan",
	}
	if diff := cmp.Diff(wantLabels, n.Labels); diff != "" {
		t.Errorf("Node labels (-want +got):\n%s", diff)
	}
	wantTaints := []corev1.Taint{claim.Taints[0], claim.StartupTaints[0], {Key: nodeplan.TaintUnregistered, Effect: corev1.TaintEffectNoExecute}}
	if diff := cmp.Diff(wantTaints, n.Spec.Taints); diff != "" {
		t.Errorf("Node taints (-want +got):\n%s", diff)
	}
	if n.Spec.ProviderID != "kwok://default-abcde" {
		t.Errorf("Node providerID = %q, want kwok://default-abcde", n.Spec.ProviderID)
	}
	if !n.Status.Allocatable.Cpu().Equal(resource.MustParse("1900m")) || !n.Status.Capacity.Cpu().Equal(resource.MustParse("2")) {
		t.Errorf("Node capacity %v allocatable %v, want the type's: 2 CPUs, 1900m allocatable", n.Status.Capacity, n.Status.Allocatable)
	}
	if readyStatus(n) != corev1.ConditionFalse {
		t.Errorf("Node Ready = %q, want False until the kubelet reports it", readyStatus(n))
	}

	// Idempotent for the claim: the same Node, not a second one.
	again, err := p.Create(ctx, claim)
	if err != nil || again.Status.ProviderID != got.Status.ProviderID {
		t.Errorf("Create again = %v, %v; want the same launch %s", again, err, got.Status.ProviderID)
	}
	// A Node of the same name that is not this launch is a refusal, and is left alone.
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "taken"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Create(ctx, &nodeplan.NodeClaim{Name: "taken", InstanceTypeOptions: []string{"m.large"}}); cloudprovider.LaunchReason(err) != cloudprovider.ReasonInvalidConfiguration {
		t.Errorf("Create(taken) = %v, want an InvalidConfiguration LaunchError", err)
	}
}

func TestCreateChoosesAndFails(t *testing.T) {
	now := epoch
	ctx := context.Background()
	t.Run("spot when allowed", func(t *testing.T) {
		p, _ := newProvider(t, &now)
		got, err := p.Create(ctx, &nodeplan.NodeClaim{Name: "a", InstanceTypeOptions: []string{"m.large"}})
		if err != nil || got.Status.CapacityType != nodeplan.CapacityTypeSpot || got.Status.Zone != "zone-1a" {
			t.Errorf("Create = %+v, %v; want the spot offering in zone-1a", got.Status, err)
		}
	})
	t.Run("no options: every type the requirements and resources allow", func(t *testing.T) {
		p, _ := newProvider(t, &now)
		got, err := p.Create(ctx, &nodeplan.NodeClaim{Name: "b", Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}})
		if err != nil || got.Status.InstanceType != "c.xlarge" {
			t.Errorf("Create(3 CPUs) = %+v, %v; want c.xlarge, the only type that fits", got.Status, err)
		}
	})
	t.Run("unknown options", func(t *testing.T) {
		p, _ := newProvider(t, &now)
		_, err := p.Create(ctx, &nodeplan.NodeClaim{Name: "c", InstanceTypeOptions: []string{"z.huge"}})
		if cloudprovider.LaunchReason(err) != cloudprovider.ReasonNoInstanceTypeOption {
			t.Errorf("Create(z.huge) = %v, want NoInstanceTypeOption", err)
		}
	})
	t.Run("capacity errors fall back, then fail, and mark offerings unavailable", func(t *testing.T) {
		p, client := newProvider(t, &now)
		cheapest := cloudprovider.OfferingKey{InstanceType: "m.large", Zone: "zone-1b", CapacityType: nodeplan.CapacityTypeOnDemand}
		p.SetCapacityError(cheapest, true)
		got, err := p.Create(ctx, &nodeplan.NodeClaim{Name: "d", Requirements: onDemand(t), InstanceTypeOptions: []string{"m.large"}})
		if err != nil || got.Status.Zone != "zone-1a" {
			t.Fatalf("Create = %+v, %v; want m.large in zone-1a after 1b's capacity error", got.Status, err)
		}
		p.SetCapacityError(cloudprovider.OfferingKey{InstanceType: "m.large", Zone: "zone-1a", CapacityType: nodeplan.CapacityTypeOnDemand}, true)
		_, err = p.Create(ctx, &nodeplan.NodeClaim{Name: "e", Requirements: onDemand(t), InstanceTypeOptions: []string{"m.large"}})
		var ice *cloudprovider.InsufficientCapacityError
		if !errors.As(err, &ice) || len(ice.Offerings) != 1 || ice.Offerings[0].Zone != "zone-1a" {
			t.Fatalf("Create with every on-demand offering failing = %v, want InsufficientCapacity naming m.large in zone-1a (1b is already unavailable)", err)
		}
		if _, err := client.CoreV1().Nodes().Get(ctx, "e", metav1.GetOptions{}); err == nil {
			t.Error("a failed Create left a Node behind")
		}
		its, err := p.InstanceTypes(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var unavailable []string
		for _, it := range its {
			for _, o := range it.Offerings {
				if !o.Available {
					unavailable = append(unavailable, it.Name+"/"+o.Zone+"/"+string(o.CapacityType))
				}
			}
		}
		want := []string{"m.large/zone-1a/on-demand", "m.large/zone-1b/on-demand"}
		if !slices.Equal(unavailable, want) {
			t.Errorf("InstanceTypes: unavailable offerings %v, want %v", unavailable, want)
		}
		now = now.Add(4 * time.Minute) // past UnavailableFor
		// The capacity errors are still injected: 1a and 1b fail again, c.xlarge is bought.
		got, err = p.Create(ctx, &nodeplan.NodeClaim{Name: "f", Requirements: onDemand(t), InstanceTypeOptions: []string{"m.large", "c.xlarge"}})
		if err != nil || got.Status.InstanceType != "c.xlarge" {
			t.Errorf("Create after UnavailableFor = %+v, %v; want c.xlarge", got.Status, err)
		}
	})
}

func TestListGetDelete(t *testing.T) {
	now := epoch
	p, client := newProvider(t, &now)
	ctx := context.Background()
	for _, name := range []string{"b", "a"} {
		if _, err := p.Create(ctx, &nodeplan.NodeClaim{Name: name, NodePool: "default", InstanceTypeOptions: []string{"m.large"}}); err != nil {
			t.Fatal(err)
		}
	}
	other := &Provider{Client: client, Catalog: testCatalog(), Owner: "other"}
	if _, err := other.Create(ctx, &nodeplan.NodeClaim{Name: "c", InstanceTypeOptions: []string{"m.large"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "real"},
		Spec: corev1.NodeSpec{ProviderID: "aws:///zone-1a/i-0123"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ids := func() []string {
		list, err := p.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range list {
			out = append(out, c.Name+"="+c.Status.ProviderID)
		}
		return out
	}
	if got, want := ids(), []string{"a=kwok://a", "b=kwok://b"}; !slices.Equal(got, want) {
		t.Errorf("List = %v, want %v (not the other owner's, not the real node)", got, want)
	}
	got, err := p.Get(ctx, "kwok://a")
	if err != nil || got.Name != "a" || got.NodePool != "default" || got.Status.InstanceType != "m.large" || got.Status.Price != 0.03 {
		t.Errorf("Get(kwok://a) = %+v, %v; want claim a of pool default, m.large at $0.03", got, err)
	}
	for _, id := range []string{"kwok://c", "kwok://real", "aws:///zone-1a/i-0123", "kwok://nothing"} {
		if _, err := p.Get(ctx, id); !cloudprovider.IsNotFound(err) {
			t.Errorf("Get(%s) = %v, want NotFound", id, err)
		}
		if err := p.Delete(ctx, id); !cloudprovider.IsNotFound(err) {
			t.Errorf("Delete(%s) = %v, want NotFound", id, err)
		}
	}
	if err := p.Delete(ctx, "kwok://a"); err != nil {
		t.Fatalf("Delete(kwok://a) = %v, want nil: termination under way", err)
	}
	if err := p.Delete(ctx, "kwok://a"); !cloudprovider.IsNotFound(err) {
		t.Errorf("Delete(kwok://a) again = %v, want NotFound", err)
	}
	if _, err := client.CoreV1().Nodes().Get(ctx, "a", metav1.GetOptions{}); err == nil {
		t.Error("Node a is still there after Delete")
	}
	if got, want := ids(), []string{"b=kwok://b"}; !slices.Equal(got, want) {
		t.Errorf("List after Delete = %v, want %v", got, want)
	}
	if _, err := client.CoreV1().Nodes().Get(ctx, "c", metav1.GetOptions{}); err != nil {
		t.Errorf("the other owner's Node: %v", err)
	}
}

// A Node held by a finalizer outlives its instance: Delete marks it terminated, and from
// then on Get, List and Delete see the instance gone.
func TestDeleteHeldByFinalizer(t *testing.T) {
	now := epoch
	p, client := newProvider(t, &now)
	ctx := context.Background()
	if _, err := p.Create(ctx, &nodeplan.NodeClaim{Name: "a", InstanceTypeOptions: []string{"m.large"}}); err != nil {
		t.Fatal(err)
	}
	// The fake clientset ignores finalizers; fail the Node's deletion to leave the object.
	client.PrependReactor("delete", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	if err := p.Delete(ctx, "kwok://a"); err != nil {
		t.Fatal(err)
	}
	n, err := client.CoreV1().Nodes().Get(ctx, "a", metav1.GetOptions{})
	if err != nil || n.Annotations[AnnotationTerminated] == "" {
		t.Fatalf("Node a after Delete: %v, %v; want it annotated %s", n, err, AnnotationTerminated)
	}
	if _, err := p.Get(ctx, "kwok://a"); !cloudprovider.IsNotFound(err) {
		t.Errorf("Get of a terminated instance = %v, want NotFound", err)
	}
	if list, _ := p.List(ctx); len(list) != 0 {
		t.Errorf("List = %d instances, want none", len(list))
	}
	if err := p.Delete(ctx, "kwok://a"); !cloudprovider.IsNotFound(err) {
		t.Errorf("Delete again = %v, want NotFound", err)
	}
}

func TestIsDrifted(t *testing.T) {
	now := epoch
	p, _ := newProvider(t, &now)
	ctx := context.Background()
	c, err := p.Create(ctx, &nodeplan.NodeClaim{Name: "a", InstanceTypeOptions: []string{"m.large"}})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := p.IsDrifted(ctx, c); r != "" || err != nil {
		t.Errorf("IsDrifted before a new image = %q, %v; want \"\"", r, err)
	}
	p.SetImageID("kwok-image-2")
	if r, err := p.IsDrifted(ctx, c); r != cloudprovider.DriftImage || err != nil {
		t.Errorf("IsDrifted after a new image = %q, %v; want %s", r, err, cloudprovider.DriftImage)
	}
	if err := p.Delete(ctx, c.Status.ProviderID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.IsDrifted(ctx, c); !cloudprovider.IsNotFound(err) {
		t.Errorf("IsDrifted of a deleted node = %v, want NotFound", err)
	}
}

// Two Creates of one claim racing: the one whose Node write loses answers as the winner did.
func TestCreateRace(t *testing.T) {
	now := epoch
	p, client := newProvider(t, &now)
	ctx := context.Background()
	claim := &nodeplan.NodeClaim{Name: "a", InstanceTypeOptions: []string{"m.large"}}
	winner := &Provider{Client: fake.NewClientset(), Catalog: testCatalog(), Now: p.Now}
	won, err := winner.Create(ctx, claim)
	if err != nil {
		t.Fatal(err)
	}
	wonNode, _ := winner.Client.CoreV1().Nodes().Get(ctx, "a", metav1.GetOptions{})
	// The winner's Node lands between this Create's read and its write.
	client.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if err := client.Tracker().Add(wonNode); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewAlreadyExists(corev1.Resource("nodes"), "a")
	})
	got, err := p.Create(ctx, claim)
	if err != nil || got.Status.ProviderID != won.Status.ProviderID {
		t.Errorf("the losing Create = %v, %v; want the winner's launch %s", got, err, won.Status.ProviderID)
	}
}
