package ec2

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	corev1 "k8s.io/api/core/v1"
)

// liveStates are the states of an instance that still exists for the cluster.
var liveStates = []string{"pending", "running", "stopping", "stopped", "shutting-down"}

type instanceResult struct{ inst ec2types.Instance }

type terminateResult struct{ previous string }

// describeBatch describes live instances by id; ids EC2 does not know are simply absent.
func (p *Provider) describeBatch(ctx context.Context, ids []string) (map[string]instanceResult, error) {
	out := map[string]instanceResult{}
	in := &ec2.DescribeInstancesInput{InstanceIds: ids, Filters: []ec2types.Filter{
		{Name: aws.String("instance-state-name"), Values: liveStates},
	}}
	for {
		page, err := p.opts.EC2.DescribeInstances(ctx, in)
		if err != nil {
			if code := errorCode(err); code == "InvalidInstanceID.NotFound" || code == "InvalidInstanceID.Malformed" {
				if len(ids) == 1 {
					return out, nil
				}
				// One bad id fails the whole call: fall back to one call per id.
				for _, id := range ids {
					one, err := p.describeBatch(ctx, []string{id})
					if err != nil {
						return nil, err
					}
					maps.Copy(out, one)
				}
				return out, nil
			}
			return nil, err
		}
		for _, r := range page.Reservations {
			for _, i := range r.Instances {
				out[aws.ToString(i.InstanceId)] = instanceResult{i}
			}
		}
		if aws.ToString(page.NextToken) == "" {
			return out, nil
		}
		in.NextToken = page.NextToken
	}
}

func (p *Provider) terminateBatch(ctx context.Context, ids []string) (map[string]terminateResult, error) {
	out, err := p.opts.EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids})
	if err != nil {
		if code := errorCode(err); (code == "InvalidInstanceID.NotFound" || code == "InvalidInstanceID.Malformed") && len(ids) > 1 {
			res := map[string]terminateResult{}
			for _, id := range ids {
				one, err := p.terminateBatch(ctx, []string{id})
				if err == nil {
					maps.Copy(res, one)
				}
			}
			return res, nil
		} else if code == "InvalidInstanceID.NotFound" {
			return map[string]terminateResult{}, nil
		}
		return nil, err
	}
	res := map[string]terminateResult{}
	for _, c := range out.TerminatingInstances {
		prev := ""
		if c.PreviousState != nil {
			prev = string(c.PreviousState.Name)
		}
		res[aws.ToString(c.InstanceId)] = terminateResult{previous: prev}
	}
	return res, nil
}

// Get implements [cloudprovider.Provider]. Concurrent calls are merged into one
// DescribeInstances. A terminated instance is not found.
func (p *Provider) Get(ctx context.Context, pid string) (*nodeplan.NodeClaim, error) {
	id, ok := instanceID(pid)
	if !ok {
		return nil, &cloudprovider.NotFoundError{ProviderID: pid, Err: fmt.Errorf("ec2: %q is not an aws:///<zone>/<instance-id> provider ID", pid)}
	}
	res, found, err := p.describe.do(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("ec2: describing %s: %w", id, err)
	}
	if !found {
		return nil, &cloudprovider.NotFoundError{ProviderID: pid}
	}
	return p.instanceClaim(ctx, &res.inst), nil
}

// List implements [cloudprovider.Provider]: every live instance tagged
// kubernetes.io/cluster/<name>=owned with a karpenter.sh/nodepool tag, including those no
// NodeClaim knows of; compare with your claims and Delete the strays.
func (p *Provider) List(ctx context.Context) ([]*nodeplan.NodeClaim, error) {
	pages := ec2.NewDescribeInstancesPaginator(p.opts.EC2, &ec2.DescribeInstancesInput{
		Filters: []ec2types.Filter{
			{Name: aws.String("tag:" + clusterTag(p.opts.Cluster.Name)), Values: []string{"owned"}},
			{Name: aws.String("tag-key"), Values: []string{nodeplan.LabelNodePool}},
			{Name: aws.String("instance-state-name"), Values: liveStates},
		},
		MaxResults: aws.Int32(1000),
	})
	var out []*nodeplan.NodeClaim
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("ec2: listing instances: %w", err)
		}
		for _, r := range page.Reservations {
			for i := range r.Instances {
				out = append(out, p.instanceClaim(ctx, &r.Instances[i]))
			}
		}
	}
	slices.SortFunc(out, func(a, b *nodeplan.NodeClaim) int { return strings.Compare(a.Status.ProviderID, b.Status.ProviderID) })
	return out, nil
}

// Delete implements [cloudprovider.Provider]. Concurrent calls are merged into one
// TerminateInstances. It returns nil when it started termination, and NotFound when the
// instance was already shutting down or gone.
func (p *Provider) Delete(ctx context.Context, pid string) error {
	id, ok := instanceID(pid)
	if !ok {
		return &cloudprovider.NotFoundError{ProviderID: pid, Err: fmt.Errorf("ec2: %q is not an aws:///<zone>/<instance-id> provider ID", pid)}
	}
	res, found, err := p.terminate.do(ctx, id)
	if err != nil {
		return fmt.Errorf("ec2: terminating %s: %w", id, err)
	}
	if !found || res.previous == "shutting-down" || res.previous == "terminated" {
		return &cloudprovider.NotFoundError{ProviderID: pid}
	}
	p.log.Info("ec2: terminating", "instance", id)
	return nil
}

// instanceClaim describes an instance as a launched NodeClaim. Capacity comes from the type's
// description under its node class, when both are known.
func (p *Provider) instanceClaim(ctx context.Context, inst *ec2types.Instance) *nodeplan.NodeClaim {
	tags := map[string]string{}
	for _, t := range inst.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	zone, zoneID := "", ""
	if inst.Placement != nil {
		zone, zoneID = aws.ToString(inst.Placement.AvailabilityZone), aws.ToString(inst.Placement.AvailabilityZoneId)
	}
	ct := nodeplan.CapacityTypeOnDemand
	if inst.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot || inst.SpotInstanceRequestId != nil {
		ct = nodeplan.CapacityTypeSpot
	}
	itype := string(inst.InstanceType)
	c := &nodeplan.NodeClaim{
		Name:         tags[TagNodeClaim],
		NodePool:     tags[nodeplan.LabelNodePool],
		NodeClassRef: nodeplan.NodeClassRef{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: tags[LabelNodeClass]},
		Labels: map[string]string{
			nodeplan.LabelInstanceType: itype, nodeplan.LabelZone: zone, nodeplan.LabelCapacityType: string(ct),
		},
		Annotations: map[string]string{},
		Status: nodeplan.NodeClaimStatus{
			ProviderID:   providerID(zone, aws.ToString(inst.InstanceId)),
			InstanceType: itype,
			Zone:         zone,
			CapacityType: ct,
			ImageID:      aws.ToString(inst.ImageId),
			LaunchTime:   aws.ToTime(inst.LaunchTime),
			NodeName:     tags["Name"],
		},
	}
	if c.NodePool != "" {
		c.Labels[nodeplan.LabelNodePool] = c.NodePool
	}
	if zoneID != "" {
		c.Labels[LabelZoneID] = zoneID
	}
	if n := tags[LabelNodeClass]; n != "" {
		c.Labels[LabelNodeClass] = n
	}
	if h := tags[TagNodeClassHash]; h != "" {
		c.Annotations[TagNodeClassHash] = h
	}
	if price, ok := p.price(itype, zone, ct); ok {
		c.Status.Price = price
	}
	if cat := p.cachedCatalog(); cat != nil {
		i, found := slices.BinarySearchFunc(cat.types, itype, func(t ec2types.InstanceTypeInfo, name string) int {
			return strings.Compare(string(t.InstanceType), name)
		})
		if found {
			opts := CapacityOptions{VMMemoryOverhead: p.opts.VMMemoryOverhead}
			if nc, ok := p.opts.NodeClass(tags[LabelNodeClass]); ok && nc != nil {
				opts = p.capacityOptions(nc)
			}
			it := NewInstanceType(&cat.types[i], opts)
			c.Status.Capacity = it.Capacity
			c.Status.Allocatable = it.Allocatable()
			maps.Copy(c.Labels, it.Labels)
		}
	}
	return c
}

func (p *Provider) cachedCatalog() *catalog {
	p.catalog.mu.Lock()
	defer p.catalog.mu.Unlock()
	return p.catalog.value
}

func cloneClaim(c *nodeplan.NodeClaim) *nodeplan.NodeClaim {
	out := *c
	out.InstanceTypeOptions = slices.Clone(c.InstanceTypeOptions)
	out.Labels = maps.Clone(c.Labels)
	out.Annotations = maps.Clone(c.Annotations)
	out.Taints = slices.Clone(c.Taints)
	out.StartupTaints = slices.Clone(c.StartupTaints)
	if c.Resources != nil {
		out.Resources = c.Resources.DeepCopy()
	}
	out.Status.Capacity, out.Status.Allocatable = corev1.ResourceList(nil), corev1.ResourceList(nil)
	return &out
}
