package ec2

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
)

// IsDrifted implements [cloudprovider.Provider]. Checked in order: the node class's launch
// settings changed (NodeClassDrift, from the hash tagged at launch), the instance's image is no
// longer the class's image for its architecture (AMIDrift), its subnet is no longer selected
// (SubnetDrift), its security groups differ from those selected (SecurityGroupDrift).
func (p *Provider) IsDrifted(ctx context.Context, claim *nodeplan.NodeClaim) (cloudprovider.DriftReason, error) {
	if claim == nil || claim.Status.ProviderID == "" {
		return "", fmt.Errorf("ec2: IsDrifted needs a launched NodeClaim")
	}
	id, ok := instanceID(claim.Status.ProviderID)
	if !ok {
		return "", &cloudprovider.NotFoundError{ProviderID: claim.Status.ProviderID}
	}
	res, found, err := p.describe.do(ctx, id)
	if err != nil {
		return "", fmt.Errorf("ec2: describing %s: %w", id, err)
	}
	if !found {
		return "", &cloudprovider.NotFoundError{ProviderID: claim.Status.ProviderID}
	}
	inst := &res.inst
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
