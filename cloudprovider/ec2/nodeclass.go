package ec2

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/nodeplan/nodeplan/cloudprovider"
)

// resolvedClass is a node class with its selectors resolved against EC2.
type resolvedClass struct {
	class   *NodeClass
	subnets []subnet          // every selected subnet, by id
	byZone  map[string]subnet // the one with most free addresses per zone
	groups  []string          // security-group ids, sorted
	amis    map[string]image  // Kubernetes arch → newest image
	hash    string            // of the launch-relevant spec, for drift
	profile string
	at      time.Time
}

type subnet struct {
	id, zone string
	zoneID   string // topology.k8s.aws/zone-id, e.g. use1-az1
	free     int32
}

type image struct {
	id, name, created string
}

type classCache struct {
	mu      sync.Mutex
	entries map[string]*resolvedClass // by class name + hash
}

// resolveClass returns the class with its subnets, security groups and images, from cache when
// resolved within CacheFor under the same spec.
func (p *Provider) resolveClass(ctx context.Context, name string) (*resolvedClass, error) {
	nc, ok := p.opts.NodeClass(name)
	if !ok || nc == nil {
		return nil, &cloudprovider.NodeClassNotReadyError{NodeClass: name, Reason: "no such EC2NodeClass"}
	}
	hash := classHash(nc)
	key := name + "/" + hash
	c := &p.classes
	c.mu.Lock()
	if rc, ok := c.entries[key]; ok && p.now().Sub(rc.at) < p.cacheFor() {
		c.mu.Unlock()
		return rc, nil
	}
	c.mu.Unlock()

	rc := &resolvedClass{class: nc, hash: hash, at: p.now(), byZone: map[string]subnet{}, amis: map[string]image{}}
	notReady := func(reason string, err error) error {
		return &cloudprovider.NodeClassNotReadyError{NodeClass: name, Reason: reason, Err: err}
	}
	var err error
	if rc.subnets, err = p.resolveSubnets(ctx, nc); err != nil {
		return nil, notReady("resolving subnets", err)
	}
	if len(rc.subnets) == 0 {
		return nil, notReady("no subnet matches subnetSelectorTerms", nil)
	}
	for _, s := range rc.subnets {
		if cur, ok := rc.byZone[s.zone]; !ok || s.free > cur.free {
			rc.byZone[s.zone] = s
		}
	}
	if rc.groups, err = p.resolveSecurityGroups(ctx, nc); err != nil {
		return nil, notReady("resolving security groups", err)
	}
	if len(rc.groups) == 0 {
		return nil, notReady("no security group matches securityGroupSelectorTerms", nil)
	}
	if rc.amis, err = p.resolveImages(ctx, nc); err != nil {
		return nil, notReady("resolving AMIs", err)
	}
	if len(rc.amis) == 0 {
		return nil, notReady("no AMI matches amiSelectorTerms", nil)
	}
	rc.profile = nc.InstanceProfile
	if rc.profile == "" {
		rc.profile = nc.Role // an instance profile named after the role; see the package doc
	}
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[string]*resolvedClass{}
	}
	c.entries[key] = rc
	c.mu.Unlock()
	return rc, nil
}

// tagFilters turns selector tags into EC2 filters: tag:<k>=<v>, or tag-key=<k> for "*".
func tagFilters(tags map[string]string) []ec2types.Filter {
	var out []ec2types.Filter
	for _, k := range sortedKeys(tags) {
		if v := tags[k]; v == "*" {
			out = append(out, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			out = append(out, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{v}})
		}
	}
	return out
}

func (p *Provider) resolveSubnets(ctx context.Context, nc *NodeClass) ([]subnet, error) {
	seen := map[string]subnet{}
	for _, term := range nc.SubnetSelectorTerms {
		in := &ec2.DescribeSubnetsInput{Filters: tagFilters(term.Tags)}
		if term.ID != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("subnet-id"), Values: []string{term.ID}})
		}
		pages := ec2.NewDescribeSubnetsPaginator(p.opts.EC2, in)
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			for _, s := range out.Subnets {
				id := aws.ToString(s.SubnetId)
				seen[id] = subnet{id: id, zone: aws.ToString(s.AvailabilityZone), zoneID: aws.ToString(s.AvailabilityZoneId), free: aws.ToInt32(s.AvailableIpAddressCount)}
			}
		}
	}
	out := make([]subnet, 0, len(seen))
	for _, id := range sortedKeys(seen) {
		out = append(out, seen[id])
	}
	return out, nil
}

func (p *Provider) resolveSecurityGroups(ctx context.Context, nc *NodeClass) ([]string, error) {
	seen := map[string]bool{}
	for _, term := range nc.SecurityGroupSelectorTerms {
		in := &ec2.DescribeSecurityGroupsInput{Filters: tagFilters(term.Tags)}
		if term.ID != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("group-id"), Values: []string{term.ID}})
		}
		if term.Name != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("group-name"), Values: []string{term.Name}})
		}
		pages := ec2.NewDescribeSecurityGroupsPaginator(p.opts.EC2, in)
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			for _, g := range out.SecurityGroups {
				seen[aws.ToString(g.GroupId)] = true
			}
		}
	}
	return sortedKeys(seen), nil
}

// aliasParameters returns the SSM parameters naming the images of an alias, by EC2 arch.
func (p *Provider) aliasParameters(alias string) (map[string]string, error) {
	family, version, err := ParseAMIAlias(alias)
	if err != nil {
		return nil, err
	}
	k8s := p.opts.Cluster.KubernetesVersion
	if k8s == "" {
		return nil, errors.New("ec2: Cluster.KubernetesVersion is required to resolve AMI aliases")
	}
	out := map[string]string{}
	switch family {
	case AMIFamilyAL2023:
		for _, arch := range []string{"x86_64", "arm64"} {
			rel := "recommended"
			if version != "latest" {
				rel = fmt.Sprintf("amazon-eks-node-al2023-%s-standard-%s-%s", arch, k8s, version)
			}
			out[arch] = fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/standard/%s/image_id", k8s, arch, rel)
		}
	case AMIFamilyBottlerocket:
		v := version
		if v != "latest" {
			v = strings.TrimPrefix(v, "v")
		}
		for _, arch := range []string{"x86_64", "arm64"} {
			out[arch] = fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s/%s/%s/image_id", k8s, arch, v)
		}
	default:
		return nil, fmt.Errorf("ec2: AMI alias %q: only al2023 and bottlerocket aliases are supported", alias)
	}
	return out, nil
}

func (p *Provider) ssmParameter(ctx context.Context, name string) (string, error) {
	if p.opts.SSM == nil {
		return "", errors.New("ec2: an SSM client is required to read " + name)
	}
	out, err := p.opts.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		return "", err
	}
	if out.Parameter == nil || aws.ToString(out.Parameter.Value) == "" {
		return "", fmt.Errorf("ec2: SSM parameter %s is empty", name)
	}
	return aws.ToString(out.Parameter.Value), nil
}

func (p *Provider) resolveImages(ctx context.Context, nc *NodeClass) (map[string]image, error) {
	var found []ec2types.Image
	describe := func(in *ec2.DescribeImagesInput) error {
		pages := ec2.NewDescribeImagesPaginator(p.opts.EC2, in)
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return err
			}
			found = append(found, out.Images...)
		}
		return nil
	}
	for _, term := range nc.AMISelectorTerms {
		var ids []string
		switch {
		case term.Alias != "":
			params, err := p.aliasParameters(term.Alias)
			if err != nil {
				return nil, err
			}
			for _, arch := range sortedKeys(params) {
				id, err := p.ssmParameter(ctx, params[arch])
				if err != nil {
					return nil, err
				}
				ids = append(ids, id)
			}
		case term.SSMParameter != "":
			id, err := p.ssmParameter(ctx, term.SSMParameter)
			if err != nil {
				return nil, err
			}
			ids = append(ids, id)
		case term.ID != "":
			ids = append(ids, term.ID)
		}
		in := &ec2.DescribeImagesInput{Filters: tagFilters(term.Tags)}
		if len(ids) > 0 {
			in.ImageIds = ids
		}
		if term.Name != "" {
			in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("name"), Values: []string{term.Name}})
		}
		if term.Owner != "" {
			in.Owners = []string{term.Owner}
		}
		if err := describe(in); err != nil {
			return nil, err
		}
	}
	out := map[string]image{}
	for _, img := range found {
		if img.State != "" && img.State != ec2types.ImageStateAvailable {
			continue
		}
		arch := "amd64"
		if img.Architecture == ec2types.ArchitectureValuesArm64 {
			arch = "arm64"
		}
		cand := image{id: aws.ToString(img.ImageId), name: aws.ToString(img.Name), created: aws.ToString(img.CreationDate)}
		// Newest wins; ties go to the lower id so the choice is stable.
		if cur, ok := out[arch]; !ok || cand.created > cur.created || (cand.created == cur.created && cand.id < cur.id) {
			out[arch] = cand
		}
	}
	return out, nil
}

// classHash hashes what of a class changes a launched instance beyond its image, subnets and
// security groups (those drift separately): userData, disks, metadata, tags, kubelet,
// instance profile.
func classHash(nc *NodeClass) string {
	b, _ := json.Marshal(struct {
		Family     AMIFamily
		Role, IP   string
		Kubelet    KubeletConfiguration
		Blocks     []BlockDeviceMapping
		Store      InstanceStorePolicy
		Metadata   MetadataOptions
		UserData   string
		Tags       map[string]string
		PublicIP   *bool
		Monitoring bool
	}{nc.ResolvedAMIFamily(), nc.Role, nc.InstanceProfile, nc.Kubelet, nc.BlockDeviceMappings, nc.InstanceStorePolicy,
		nc.MetadataOptions.WithDefaults(), nc.UserData, nc.Tags, nc.AssociatePublicIPAddress, nc.DetailedMonitoring})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
