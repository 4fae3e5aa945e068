package cloudprovider

import (
	"context"
	"time"

	"github.com/nodeplan/nodeplan"
	corev1 "k8s.io/api/core/v1"
)

// Provider launches and removes nodes in one cluster of one cloud.
//
// Every method is safe for concurrent use, blocks until its cloud calls complete or ctx is done,
// and returns ctx.Err() (possibly wrapped) when ctx ends first. Arguments are not modified and
// results are fresh copies the caller owns.
type Provider interface {
	// Create launches one node for claim, choosing among claim.InstanceTypeOptions and the
	// offerings that claim.Requirements allow (zone, capacity type), and returns a copy of claim
	// with Status filled in and the node's labels (instance type, zone, capacity type, NodePool)
	// added to Labels.
	//
	// Errors: [*InsufficientCapacityError] when no allowed offering could be bought (the
	// offerings that failed are named and become unavailable in InstanceTypes for a while);
	// [*NodeClassNotReadyError] when the claim's node class cannot be resolved yet;
	// [*LaunchError] with a reason for every other refusal. When Create returns an error no
	// instance is left running for the claim.
	Create(ctx context.Context, claim *nodeplan.NodeClaim) (*nodeplan.NodeClaim, error)

	// Delete terminates the node with this provider ID. It is idempotent: it returns nil while
	// termination is under way and [*NotFoundError] once the node is gone, so a controller calls
	// it until it sees NotFound.
	Delete(ctx context.Context, providerID string) error

	// Get returns the node with this provider ID, or [*NotFoundError] if there is none (never
	// launched, or terminated).
	Get(ctx context.Context, providerID string) (*nodeplan.NodeClaim, error)

	// List returns every node of this cluster the provider can see, in provider-ID order,
	// including nodes no NodeClaim of the caller knows about (launched by a controller that
	// crashed before recording them): the caller compares and collects those. A node's claim Name
	// is empty when the cloud does not record it.
	List(ctx context.Context) ([]*nodeplan.NodeClaim, error)

	// InstanceTypes returns every instance type a node of pool may be launched as, with its
	// offerings and their prices, in name order. Offerings the cloud cannot supply right now
	// (recent capacity errors, no price, no subnet in the zone) are returned with Available
	// false rather than dropped. The types' Labels, Capacity and Overhead may be shared between
	// calls and must be treated as read-only; Offerings are the caller's. Errors:
	// [*NodeClassNotReadyError] when the pool's node class cannot be resolved.
	InstanceTypes(ctx context.Context, pool *nodeplan.NodePool) ([]nodeplan.InstanceType, error)

	// IsDrifted reports why a launched node no longer matches what its NodePool and node class
	// would launch today, or "" when it still matches. An error means the answer is unknown
	// (the node class cannot be resolved, the cloud did not answer), never that it drifted.
	IsDrifted(ctx context.Context, claim *nodeplan.NodeClaim) (DriftReason, error)
}

// DriftReason says why a launched node differs from what would be launched now; "" means it
// does not. The value is a stable CamelCase word a program may branch on.
type DriftReason string

// Drift reasons shared by providers. A provider may define more.
const (
	// DriftImage: the node's machine image is not among the images its class selects now.
	DriftImage DriftReason = "AMIDrift"
	// DriftSubnet: the node's subnet is no longer selected.
	DriftSubnet DriftReason = "SubnetDrift"
	// DriftSecurityGroup: the node's security groups differ from those selected.
	DriftSecurityGroup DriftReason = "SecurityGroupDrift"
	// DriftNodeClass: the node class's launch settings (userData, block devices, metadata
	// options, tags, kubelet…) changed since the node launched.
	DriftNodeClass DriftReason = "NodeClassDrift"
)

// InterruptionSource is implemented by providers that learn of involuntary disruptions before
// they happen: spot reclaims, scheduled maintenance, instances stopped outside the controller.
type InterruptionSource interface {
	// Interruptions returns the events received since the last call, oldest first, and
	// acknowledges them: an event is returned at most once. It may block for a bounded time
	// waiting for events (an SQS long poll) and returns early when ctx is done. Events about
	// nodes that are not this cluster's are dropped and logged, not returned. Safe for
	// concurrent use, though one poller at a time is the intended use; the caller schedules
	// the calls — the provider starts no goroutine.
	Interruptions(ctx context.Context) ([]Interruption, error)
}

// Interruption is one involuntary disruption of one node.
type Interruption struct {
	// ProviderID identifies the node, as in NodeClaim.Status.ProviderID.
	ProviderID string
	// InstanceID is the cloud's id of the instance (e.g. i-0123456789abcdef0).
	InstanceID string
	Kind       InterruptionKind
	// Time is when the cloud emitted the event.
	Time time.Time
	// Deadline is when the node will be stopped or reclaimed; zero when unknown or not
	// applicable (a rebalance recommendation).
	Deadline time.Time
	// State is the instance's new state for an InterruptionStateChange (stopping, stopped,
	// shutting-down, terminated).
	State string
	// ID identifies the event at the source (an SQS message or EventBridge event id).
	ID string
}

// InterruptionKind classifies an [Interruption].
type InterruptionKind string

// The kinds of interruption.
const (
	// InterruptionSpot: the spot instance will be reclaimed, usually two minutes after Time.
	InterruptionSpot InterruptionKind = "SpotInterruption"
	// InterruptionRebalance: the spot instance is at elevated risk of interruption. Advisory.
	InterruptionRebalance InterruptionKind = "RebalanceRecommendation"
	// InterruptionScheduledChange: the cloud scheduled maintenance (retirement, reboot) for the
	// instance at Deadline.
	InterruptionScheduledChange InterruptionKind = "ScheduledChange"
	// InterruptionStateChange: the instance is stopping or terminating outside the controller.
	InterruptionStateChange InterruptionKind = "StateChange"
)

// Disruptive reports whether the node should be drained and replaced now. A rebalance
// recommendation is advisory; everything else means the node is going away.
func (k InterruptionKind) Disruptive() bool {
	return k != InterruptionRebalance && k != ""
}

// Repairer is implemented by providers that know which unhealthy node conditions warrant
// replacing a node.
type Repairer interface {
	// RepairPolicies returns the policies; the result is constant and safe to share.
	RepairPolicies() []RepairPolicy
}

// RepairPolicy says: a node whose condition ConditionType has had status ConditionStatus for
// longer than TolerationDuration is replaced.
type RepairPolicy struct {
	ConditionType      corev1.NodeConditionType
	ConditionStatus    corev1.ConditionStatus
	TolerationDuration time.Duration
}
