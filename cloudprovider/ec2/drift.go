package ec2

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
)

// IsDrifted implements [cloudprovider.Provider]. Checked in order: the node class's launch
// settings changed (NodeClassDrift, from the hash tagged at launch), the instance's image is no
// longer the class's image for its architecture (AMIDrift), its subnet is no longer selected
// (SubnetDrift), its security groups differ from those selected (SecurityGroupDrift).
//
// A controller checks every node in turn, so the instances are described in bulk: one
// paginated DescribeInstances of the cluster's instances (1,000 a page) serves every check for
// driftSnapshotFor; only an instance missing from it (launched since) is described alone.
func (p *Provider) IsDrifted(ctx context.Context, claim *nodeplan.NodeClaim) (cloudprovider.DriftReason, error) {
	if claim == nil || claim.Status.ProviderID == "" {
		return "", fmt.Errorf("ec2: IsDrifted needs a launched NodeClaim")
	}
	id, ok := instanceID(claim.Status.ProviderID)
	if !ok {
		return "", &cloudprovider.NotFoundError{ProviderID: claim.Status.ProviderID}
	}
	inst, found, err := p.driftInstance(ctx, id)
	if err != nil {
		return "", fmt.Errorf("ec2: describing %s: %w", id, err)
	}
	if !found {
		return "", &cloudprovider.NotFoundError{ProviderID: claim.Status.ProviderID}
	}
	tags := map[string]string{}
	for _, t := range inst.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	className := claim.NodeClassRef.Name
	if className == "" {
		className = tags[LabelNodeClass]
	}
	rc, err := p.resolveClass(ctx, className)
	if err != nil {
		return "", err
	}
	if h := tags[TagNodeClassHash]; h != "" && h != rc.hash {
		return cloudprovider.DriftNodeClass, nil
	}
	arch := "amd64"
	if inst.Architecture == "arm64" {
		arch = "arm64"
	}
	if img, ok := rc.amis[arch]; !ok || img.id != aws.ToString(inst.ImageId) {
		return cloudprovider.DriftImage, nil
	}
	if sub := aws.ToString(inst.SubnetId); sub != "" && !slices.ContainsFunc(rc.subnets, func(s subnet) bool { return s.id == sub }) {
		return cloudprovider.DriftSubnet, nil
	}
	var groups []string
	for _, g := range inst.SecurityGroups {
		groups = append(groups, aws.ToString(g.GroupId))
	}
	slices.Sort(groups)
	if len(groups) > 0 && !slices.Equal(groups, rc.groups) {
		return cloudprovider.DriftSecurityGroup, nil
	}
	return "", nil
}

// driftSnapshotFor is how long one bulk description of the cluster's instances serves drift
// checks. Drift is not urgent; an instance's image, subnet and tags do not change.
const driftSnapshotFor = time.Minute

// driftSnapshot is the cluster's live instances as one bulk DescribeInstances saw them.
type driftSnapshot struct {
	mu   sync.Mutex
	at   time.Time
	byID map[string]ec2types.Instance
}

// driftInstance returns the instance for a drift check: from the snapshot, refreshed when
// stale, else described alone (through the batcher).
func (p *Provider) driftInstance(ctx context.Context, id string) (*ec2types.Instance, bool, error) {
	s := &p.drift
	s.mu.Lock()
	if s.byID == nil || p.now().Sub(s.at) >= driftSnapshotFor {
		byID, err := p.describeCluster(ctx)
		if err != nil {
			s.mu.Unlock()
			return nil, false, err
		}
		s.byID, s.at = byID, p.now()
	}
	inst, ok := s.byID[id]
	s.mu.Unlock()
	if ok {
		return &inst, true, nil
	}
	res, found, err := p.describe.do(ctx, id)
	if err != nil || !found {
		return nil, false, err
	}
	return &res.inst, true, nil
}

// describeCluster describes every live instance of the cluster, 1,000 a call.
func (p *Provider) describeCluster(ctx context.Context) (map[string]ec2types.Instance, error) {
	pages := ec2.NewDescribeInstancesPaginator(p.opts.EC2, &ec2.DescribeInstancesInput{
		Filters:    p.ownFilters(),
		MaxResults: aws.Int32(1000),
	})
	out := map[string]ec2types.Instance{}
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Reservations {
			for _, i := range r.Instances {
				out[aws.ToString(i.InstanceId)] = i
			}
		}
	}
	return out, nil
}
