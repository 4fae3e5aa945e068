package nodeplan

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// NodeClaim is a request for one node and, once launched, what the cloud provided. The solver
// fills the request; a cloudprovider launches it and fills Status.
type NodeClaim struct {
	// Name identifies the claim within the cluster.
	Name string
	// NodePool is the pool the claim was made for.
	NodePool string
	// NodeClassRef is the pool's node class.
	NodeClassRef NodeClassRef
	// Requirements constrain the node: the pool's requirements and labels narrowed by the pods
	// placed on it (zone, capacity type, instance types, arch…), with minValues.
	Requirements Requirements
	// InstanceTypeOptions are the instance types the node may be launched as, cheapest first (by
	// the cheapest offering the requirements allow). Every option fits all of Resources. A
	// provider tries them in order, or hands the whole list to the cloud (EC2 CreateFleet).
	InstanceTypeOptions []string
	// Labels are put on the node: the pool's labels plus every requirement pinned to one value.
	Labels map[string]string
	// Annotations are put on the node.
	Annotations map[string]string
	// Taints and StartupTaints are put on the node (see [NodeClaimTemplate]).
	Taints        []corev1.Taint
	StartupTaints []corev1.Taint
	// Resources is what the node must have allocatable: its pods' requests plus DaemonSet
	// overhead — the smallest among its options, per resource, where DaemonSets run on some
	// types only (as Karpenter's NodeClaims carry it), so every option fits it.
	Resources corev1.ResourceList
	// ExpireAfter and TerminationGracePeriod are copied from the pool.
	ExpireAfter            time.Duration
	TerminationGracePeriod time.Duration
	// BootstrapToken is a short-lived credential the node joins the cluster with, minted by the
	// controller for this launch only (a kubeadm bootstrap token, "abcdef.0123456789abcdef",
	// whose Secret expires soon after and is deleted once the node registers). Providers that
	// join nodes with a token (the EC2 provider's kubeadm join) write it into the node's
	// userData; others ignore it. Empty: the provider's own configuration decides.
	BootstrapToken string
	// DeletionTimestamp, when set, says the claim is being deleted (its
	// metadata.deletionTimestamp): its node is going away, so the solver places no pod on it.
	DeletionTimestamp *time.Time `json:",omitempty"`

	// Status is what was launched; zero until then.
	Status NodeClaimStatus
}

// NodeClaimStatus records what the cloud launched for a claim.
type NodeClaimStatus struct {
	// ProviderID is the node's spec.providerID, e.g. aws:///us-east-1a/i-0123456789abcdef0.
	ProviderID   string
	InstanceType string
	Zone         string
	CapacityType CapacityType
	// Price is the offering's price in USD per hour when launched.
	Price       float64
	Capacity    corev1.ResourceList
	Allocatable corev1.ResourceList
	// ImageID is the machine image the node boots, e.g. an AMI id; drift detection compares it.
	ImageID    string
	LaunchTime time.Time
	// NodeName is the Kubernetes Node the instance registered as; empty until it registers.
	NodeName string
}

// Launched reports whether the claim has an instance behind it.
func (c *NodeClaim) Launched() bool { return c.Status.ProviderID != "" }

// DeepCopy returns a copy of c that shares no mutable memory with it: slices, maps, taints,
// resource lists and the deletion timestamp are copied. Requirements is an immutable value and is shared. The one copy of a
// NodeClaim: providers hand out copies of what they record, the controller of what it tracks.
func (c *NodeClaim) DeepCopy() *NodeClaim {
	if c == nil {
		return nil
	}
	out := new(NodeClaim)
	c.DeepCopyInto(out)
	return out
}

// DeepCopyInto writes a deep copy of c into out (see [NodeClaim.DeepCopy]).
func (c *NodeClaim) DeepCopyInto(out *NodeClaim) {
	*out = *c
	out.InstanceTypeOptions = slices.Clone(c.InstanceTypeOptions)
	out.Labels = maps.Clone(c.Labels)
	out.Annotations = maps.Clone(c.Annotations)
	out.Taints = deepCopyTaints(c.Taints)
	out.StartupTaints = deepCopyTaints(c.StartupTaints)
	out.Resources = deepCopyResources(c.Resources)
	if c.DeletionTimestamp != nil {
		t := *c.DeletionTimestamp
		out.DeletionTimestamp = &t
	}
	out.Status.Capacity = deepCopyResources(c.Status.Capacity)
	out.Status.Allocatable = deepCopyResources(c.Status.Allocatable)
}

func deepCopyTaints(ts []corev1.Taint) []corev1.Taint {
	if ts == nil {
		return nil
	}
	out := make([]corev1.Taint, len(ts))
	for i := range ts {
		ts[i].DeepCopyInto(&out[i])
	}
	return out
}

func deepCopyResources(rl corev1.ResourceList) corev1.ResourceList {
	if rl == nil {
		return nil
	}
	return rl.DeepCopy()
}
