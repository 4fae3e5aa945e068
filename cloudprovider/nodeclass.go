package cloudprovider

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// NodeClassResolver is implemented by providers that can say what a node class's selectors
// resolve to now, for the node class's status (Karpenter's EC2NodeClass status.subnets,
// securityGroups, amis, instanceProfile) and for drift messages that name the images.
type NodeClassResolver interface {
	// ResolveNodeClass resolves the named node class. Errors: [*NodeClassNotReadyError] when
	// it cannot be resolved (unknown class, no subnet, no security group, no image).
	ResolveNodeClass(ctx context.Context, name string) (*NodeClassResolution, error)
}

// NodeClassResolution is what a node class's selectors match. Slices are sorted by ID.
type NodeClassResolution struct {
	Subnets        []ResolvedSubnet
	SecurityGroups []ResolvedSecurityGroup
	Images         []ResolvedImage
	// InstanceProfile is the instance profile nodes are launched with.
	InstanceProfile string
}

// ResolvedSubnet is one selected subnet.
type ResolvedSubnet struct {
	ID, Zone, ZoneID string
}

// ResolvedSecurityGroup is one selected security group; Name may be empty when the provider
// did not read it.
type ResolvedSecurityGroup struct {
	ID, Name string
}

// ResolvedImage is one image new nodes may boot, with the node requirements it serves (e.g.
// kubernetes.io/arch In [arm64]).
type ResolvedImage struct {
	ID, Name     string
	Requirements []corev1.NodeSelectorRequirement
}
