package ec2_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
)

// TestResolveNodeClass: the resolution the EC2NodeClass status shows is the one launches use:
// every selected subnet in the server's zones, the selected security groups, an image per
// architecture with its arch requirement, the role as instance profile; a new AMI shows up
// once the cache expires; an unknown class is NodeClassNotReady.
func TestResolveNodeClass(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx := context.Background()
	res, err := f.p.ResolveNodeClass(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	zones := f.srv.Zones("us-east-1")
	if len(res.Subnets) == 0 || len(res.SecurityGroups) == 0 || res.InstanceProfile != "KarpenterNodeRole" {
		t.Fatalf("resolution = %+v; want subnets, security groups and instance profile KarpenterNodeRole", res)
	}
	for _, s := range res.Subnets {
		if s.ID == "" || !slices.Contains(zones, s.Zone) || s.ZoneID == "" {
			t.Errorf("subnet %+v: want an id, a zone among %v and a zone id", s, zones)
		}
	}
	archs := map[string]string{}
	for _, img := range res.Images {
		if len(img.Requirements) != 1 || img.Requirements[0].Key != "kubernetes.io/arch" || len(img.Requirements[0].Values) != 1 {
			t.Fatalf("image %+v: want one kubernetes.io/arch requirement", img)
		}
		archs[img.Requirements[0].Values[0]] = img.ID
	}
	if archs["amd64"] != "ami-al2023x86" || archs["arm64"] == "" {
		t.Errorf("images by arch = %v; want amd64 ami-al2023x86 and an arm64 image", archs)
	}

	f.srv.AddImage(ec2test.Image{ID: "ami-newer", Name: "al2023-new", Arch: "x86_64", Created: "2026-08-01T00:00:00Z", Owner: "amazon"})
	f.srv.SetParameter("/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id", "ami-newer")
	f.clock.Add(10 * time.Minute)
	res, err = f.p.ResolveNodeClass(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res.Images, func(i cloudprovider.ResolvedImage) bool { return i.ID == "ami-newer" }) {
		t.Errorf("images after a new AMI = %+v; want ami-newer", res.Images)
	}

	var nr *cloudprovider.NodeClassNotReadyError
	if _, err := f.p.ResolveNodeClass(ctx, "missing"); !errors.As(err, &nr) {
		t.Errorf("ResolveNodeClass(missing) = %v; want NodeClassNotReadyError", err)
	}
}
