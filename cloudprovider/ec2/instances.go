package ec2

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
)

// liveStates are the states of an instance that still exists for the cluster.
var liveStates = []string{"pending", "running", "stopping", "stopped", "shutting-down"}

type instanceResult struct{ inst ec2types.Instance }

// terminateResult is one instance's outcome in a TerminateInstances batch: its state before,
// or the error EC2 refused it with.
type terminateResult struct {
	previous string
	err      error
}

// EC2 fails a whole call over one id it cannot use: an unknown or malformed id, or (for
// TerminateInstances) an instance the caller's IAM policy or termination protection does not
// allow. Such a batch is split in halves and each half retried, so the refused ids end up alone
// and the others go through: about 2·log2(n) extra calls per refused id, never a call per id.
func refusesOneID(code string) bool {
	switch code {
	case "InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed", "UnauthorizedOperation", "OperationNotPermitted":
		return true
	}
	return false
}

// namedIDs returns the ids of batch that err's message names. EC2's InvalidInstanceID errors
// name the ids they refuse ("The instance IDs 'i-1, i-2' do not exist", `Invalid id: "i-x"`),
// so those can be set aside in one step rather than found by splitting.
func namedIDs(err error, batch []string) (named, rest []string) {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return nil, batch
	}
	msg := api.ErrorMessage()
	for _, id := range batch {
		if strings.Contains(msg, "'"+id+"'") || strings.Contains(msg, "'"+id+",") || strings.Contains(msg, " "+id+"'") ||
			strings.Contains(msg, " "+id+",") || strings.Contains(msg, `"`+id+`"`) {
			named = append(named, id)
		} else {
			rest = append(rest, id)
		}
	}
	return named, rest
}

// unknownID reports whether EC2 refused a lone id because it does not exist (or cannot).
func unknownID(code string) bool {
	return code == "InvalidInstanceID.NotFound" || code == "InvalidInstanceID.Malformed"
}

// describeBatch describes live instances by id; ids EC2 does not know are simply absent.
func (p *Provider) describeBatch(ctx context.Context, ids []string) (map[string]instanceResult, error) {
	out := map[string]instanceResult{}
	if err := p.describeSplit(ctx, ids, out); err != nil {
		return nil, err
	}
	return out, nil
}

func (p *Provider) describeSplit(ctx context.Context, ids []string, out map[string]instanceResult) error {
	in := &ec2.DescribeInstancesInput{InstanceIds: ids, Filters: []ec2types.Filter{
		{Name: aws.String("instance-state-name"), Values: liveStates},
	}}
	for {
		page, err := p.opts.EC2.DescribeInstances(ctx, in)
		if err != nil {
			code := errorCode(err)
			named, rest := namedIDs(err, ids)
			switch {
			case len(ids) == 1 && unknownID(code):
				return nil
			case unknownID(code) && len(named) > 0 && ctx.Err() == nil:
				if len(rest) == 0 {
					return nil
				}
				return p.describeSplit(ctx, rest, out)
			case len(ids) > 1 && unknownID(code) && ctx.Err() == nil:
				if err := p.describeSplit(ctx, ids[:len(ids)/2], out); err != nil {
					return err
				}
				return p.describeSplit(ctx, ids[len(ids)/2:], out)
			}
			return err
		}
		for _, r := range page.Reservations {
			for _, i := range r.Instances {
				out[aws.ToString(i.InstanceId)] = instanceResult{i}
			}
		}
		if aws.ToString(page.NextToken) == "" {
			return nil
		}
		in.NextToken = page.NextToken
	}
}

// terminateBatch terminates ids, splitting the batch around ids EC2 refuses. Each id gets its
// own outcome: its previous state, its own refusal, or no entry when it does not exist.
func (p *Provider) terminateBatch(ctx context.Context, ids []string) (map[string]terminateResult, error) {
	res := map[string]terminateResult{}
	p.terminateSplit(ctx, ids, res)
	return res, nil
}

func (p *Provider) terminateSplit(ctx context.Context, ids []string, res map[string]terminateResult) {
	out, err := p.opts.EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids})
	if err != nil {
		code := errorCode(err)
		named, rest := namedIDs(err, ids)
		switch {
		case len(ids) == 1 && unknownID(code):
			return // gone: the caller reports NotFound
		case unknownID(code) && len(named) > 0 && ctx.Err() == nil:
			if len(rest) > 0 { // the named ids are gone; the rest in one call
				p.terminateSplit(ctx, rest, res)
			}
			return
		case len(ids) > 1 && refusesOneID(code) && ctx.Err() == nil:
			p.terminateSplit(ctx, ids[:len(ids)/2], res)
			p.terminateSplit(ctx, ids[len(ids)/2:], res)
			return
		}
		for _, id := range ids {
			res[id] = terminateResult{err: err}
		}
		return
	}
	for _, c := range out.TerminatingInstances {
		prev := ""
		if c.PreviousState != nil {
			prev = string(c.PreviousState.Name)
		}
		res[aws.ToString(c.InstanceId)] = terminateResult{previous: prev}
	}
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
// kubernetes.io/cluster/<name>=owned with a karpenter.sh/nodepool tag (and, with
// Options.Installation, this installation's tag), including those no NodeClaim knows of;
// compare with your claims and Delete the strays.
func (p *Provider) List(ctx context.Context) ([]*nodeplan.NodeClaim, error) {
	pages := ec2.NewDescribeInstancesPaginator(p.opts.EC2, &ec2.DescribeInstancesInput{
		Filters:    append(p.ownFilters(), ec2types.Filter{Name: aws.String("tag-key"), Values: []string{nodeplan.LabelNodePool}}),
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
// instance was already shutting down or gone. An instance EC2 refuses to terminate
// (UnauthorizedOperation, termination protection) fails its own Delete only: the batch is
// split around it and the others go through.
func (p *Provider) Delete(ctx context.Context, pid string) error {
	id, ok := instanceID(pid)
	if !ok {
		return &cloudprovider.NotFoundError{ProviderID: pid, Err: fmt.Errorf("ec2: %q is not an aws:///<zone>/<instance-id> provider ID", pid)}
	}
	res, found, err := p.terminate.do(ctx, id)
	if err == nil {
		err = res.err
	}
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
	if v := tags[TagInstallation]; v != "" {
		c.Annotations[TagInstallation] = v // who launched it, for a caller telling its own from others'
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

// ownFilters select the live instances of this cluster (and installation, when set).
func (p *Provider) ownFilters() []ec2types.Filter {
	f := []ec2types.Filter{
		{Name: aws.String("tag:" + clusterTag(p.opts.Cluster.Name)), Values: []string{"owned"}},
		{Name: aws.String("instance-state-name"), Values: liveStates},
	}
	if p.opts.Installation != "" {
		f = append(f, ec2types.Filter{Name: aws.String("tag:" + TagInstallation), Values: []string{p.opts.Installation}})
	}
	return f
}
