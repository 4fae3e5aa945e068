package ec2

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan/cloudprovider"
)

// ResolveNodeClass implements [cloudprovider.NodeClassResolver] from the same resolution a
// launch uses (cached for CacheFor): the selected subnets with their zones and zone IDs, the
// security-group IDs, the newest image per architecture (with a kubernetes.io/arch
// requirement) and the instance profile.
func (p *Provider) ResolveNodeClass(ctx context.Context, name string) (*cloudprovider.NodeClassResolution, error) {
	rc, err := p.resolveClass(ctx, name)
	if err != nil {
		return nil, err
	}
	out := &cloudprovider.NodeClassResolution{InstanceProfile: rc.profile}
	for _, s := range rc.subnets {
		out.Subnets = append(out.Subnets, cloudprovider.ResolvedSubnet{ID: s.id, Zone: s.zone, ZoneID: s.zoneID})
	}
	slices.SortFunc(out.Subnets, func(a, b cloudprovider.ResolvedSubnet) int { return strings.Compare(a.ID, b.ID) })
	for _, g := range rc.groups {
		out.SecurityGroups = append(out.SecurityGroups, cloudprovider.ResolvedSecurityGroup{ID: g})
	}
	for _, arch := range sortedKeys(rc.amis) {
		img := rc.amis[arch]
		out.Images = append(out.Images, cloudprovider.ResolvedImage{ID: img.id, Name: img.name,
			Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}}})
	}
	slices.SortFunc(out.Images, func(a, b cloudprovider.ResolvedImage) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
