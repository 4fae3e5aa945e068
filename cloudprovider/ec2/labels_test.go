package ec2_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
)

// The node class and zone-id labels are on the types the solver sees and on launched nodes;
// spot requests and network interfaces carry the class's tags; template annotations stay on
// the launched claim for the controller to put on the Node.
func TestNodeLabelsTagsAndAnnotations(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx := context.Background()
	its, err := f.p.InstanceTypes(ctx, pool())
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		if it.Labels[ec2.LabelNodeClass] != "default" {
			t.Fatalf("%s labels lack %s=default: %v", it.Name, ec2.LabelNodeClass, it.Labels)
		}
	}
	c := claim("spot-1", []string{"m5.large"}, nodeplan.In(nodeplan.LabelCapacityType, "spot"))
	c.Annotations = map[string]string{"karpenter.sh/do-not-disrupt": "true"}
	got, err := f.p.Create(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{ec2.LabelZoneID: ec2test.ZoneID(got.Status.Zone), ec2.LabelNodeClass: "default"}
	for k, v := range want {
		if got.Labels[k] != v {
			t.Errorf("Create() label %s = %q, want %q", k, got.Labels[k], v)
		}
	}
	if got.Annotations["karpenter.sh/do-not-disrupt"] != "true" {
		t.Errorf("Create() dropped the template annotations: %v", got.Annotations)
	}
	again, err := f.p.Get(ctx, got.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if again.Labels[k] != v {
			t.Errorf("Get() label %s = %q, want %q", k, again.Labels[k], v)
		}
	}
	form := f.srv.Requests("CreateFleet")[0].Form
	tagged := map[string]bool{}
	for i := 1; ; i++ {
		p := "TagSpecification." + strconv.Itoa(i) + "."
		rt := form.Get(p + "ResourceType")
		if rt == "" {
			break
		}
		for j := 1; form.Get(p+"Tag."+strconv.Itoa(j)+".Key") != ""; j++ {
			if form.Get(p+"Tag."+strconv.Itoa(j)+".Key") == "team" && form.Get(p+"Tag."+strconv.Itoa(j)+".Value") == "platform" {
				tagged[rt] = true
			}
		}
	}
	for _, rt := range []string{"instance", "volume", "network-interface", "spot-instances-request", "fleet"} {
		if !tagged[rt] {
			t.Errorf("CreateFleet does not tag %s with the class's tags (tagged: %v)", rt, tagged)
		}
	}
	if !strings.Contains(form.Get("SpotOptions.AllocationStrategy"), "price-capacity-optimized") {
		t.Errorf("not a spot launch: %v", form)
	}
}

// With Options.Installation every launch carries the installation's tag, and List sees only
// instances carrying it: a Karpenter's or an EKS node group's instances in the same cluster,
// which share the cluster and pool tags, are not this provider's.
func TestInstallationTagScopesOwnership(t *testing.T) {
	f := newFixture(t, nil, func(o *ec2.Options) { o.Installation = "prod-a" })
	ctx := context.Background()
	got, err := f.p.Create(ctx, claim("ours", []string{"m5.large"}))
	if err != nil {
		t.Fatal(err)
	}
	f.srv.LaunchInstance(ec2test.Instance{Type: "m5.large", Zone: "us-east-1a",
		Tags: map[string]string{"kubernetes.io/cluster/test": "owned", nodeplan.LabelNodePool: "default"}}) // a Karpenter's
	if tag := f.srv.Instances()[0].Tags[ec2.TagInstallation]; tag != "prod-a" {
		t.Errorf("launched instance's %s tag = %q, want prod-a", ec2.TagInstallation, tag)
	}
	list, err := f.p.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Status.ProviderID != got.Status.ProviderID {
		var ids []string
		for _, c := range list {
			ids = append(ids, c.Status.ProviderID)
		}
		t.Errorf("List() = %v, want only %s", ids, got.Status.ProviderID)
	}
}
