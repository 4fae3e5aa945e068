package kwok

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
)

// Provider is a [cloudprovider.Provider] whose instances are Node objects: Create writes a Node
// for the claim, Delete removes it, Get and List read the Nodes it wrote. [Provider.Run] plays
// the kubelets of those Nodes.
//
// Client is required; set the fields before the first call and do not change them after. The
// methods are safe for concurrent use. The zero value of every other field works: an empty
// Catalog sells nothing, so give it one (the controller gives the embedded EC2 catalog).
type Provider struct {
	// Client writes and reads the Nodes (and, in Run, their Leases and pods).
	Client kubernetes.Interface
	// Catalog is what the provider sells: instance types with their offerings and prices.
	// Offerings with Available false cannot be launched.
	Catalog []nodeplan.InstanceType
	// Owner tells this provider's Nodes from every other's: they carry the label
	// nodeplan.io/kwok=<Owner>, and List sees only those. "" means "nodeplan". Two controllers
	// on one cluster need different owners.
	Owner string
	// ReadyAfter is how long after its launch a Node reports Ready; zero means 5s.
	ReadyAfter time.Duration
	// Interval is how often Run looks at the Nodes and their pods; zero means 1s.
	Interval time.Duration
	// LeaseInterval is how often Run renews each Ready Node's Lease in kube-node-lease, as a
	// kubelet does, so a node lifecycle controller keeps the Node Ready; zero means 10s.
	LeaseInterval time.Duration
	// UnavailableFor is how long an offering that failed a launch with a capacity error (or
	// whose spot node was interrupted) is reported unavailable; zero means 3 minutes.
	UnavailableFor time.Duration
	// ImageID is the image new nodes "boot"; "" means "kwok-image-1". Nodes launched with
	// another image are drifted; change it with SetImageID.
	ImageID string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives a line per launch, deletion and injected fault; nil discards.
	Logger *slog.Logger

	mu          sync.Mutex
	imageID     string                                  // set by SetImageID; "" means ImageID
	capErrs     map[cloudprovider.OfferingKey]bool      // SetCapacityError
	unavailable map[cloudprovider.OfferingKey]time.Time // learned from failures: until
	events      []cloudprovider.Interruption
	interrupted map[string]bool // provider IDs whose interruption annotation was queued
	leases      map[string]time.Time
	seq         int
}

var _ interface {
	cloudprovider.Provider
	cloudprovider.InterruptionSource
	cloudprovider.Repairer
} = (*Provider)(nil)

// ProviderIDPrefix starts every provider ID of this provider: kwok://<node name>, the form of
// Karpenter's kwok provider.
const ProviderIDPrefix = "kwok://"

// The labels and annotations the provider writes on its Nodes.
const (
	// LabelOwner marks a Node as this provider's instance; its value is Provider.Owner.
	LabelOwner = "nodeplan.io/kwok"
	// AnnotationNodeClaim records the claim the Node was launched for.
	AnnotationNodeClaim = "nodeplan.io/kwok-nodeclaim"
	// AnnotationPrice records the offering's price in $/h at launch.
	AnnotationPrice = "nodeplan.io/kwok-price"
	// AnnotationImage records the image the Node "booted".
	AnnotationImage = "nodeplan.io/kwok-image"
	// AnnotationLaunchTime records when Create launched the Node (RFC 3339, nanoseconds).
	AnnotationLaunchTime = "nodeplan.io/kwok-launch-time"
	// AnnotationStartupTaints lists the claim's startup taints (key:effect, comma-separated),
	// which Run lifts once the Node is Ready, as a CNI or device plugin would.
	AnnotationStartupTaints = "nodeplan.io/kwok-startup-taints"
	// AnnotationTerminated is set by Delete: the instance is gone, and the Node object is only
	// waiting for its finalizers. Get and List no longer see it.
	AnnotationTerminated = "nodeplan.io/kwok-terminated"
	// AnnotationInterrupt, set by a person (kubectl annotate node N nodeplan.io/kwok-interrupt=
	// SpotInterruption), makes the next Interruptions call report that interruption of the Node.
	// The value is a [cloudprovider.InterruptionKind].
	AnnotationInterrupt = "nodeplan.io/kwok-interrupt"
	// AnnotationReady, set by a person to False or Unknown, makes Run report the Node's Ready
	// condition so (a broken kubelet, for node repair); removing it lets the Node be Ready again.
	AnnotationReady = "nodeplan.io/kwok-ready"
)

func (p *Provider) owner() string { return cmp.Or(p.Owner, "nodeplan") }

func (p *Provider) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Provider) log() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (p *Provider) unavailableFor() time.Duration {
	return cmp.Or(p.UnavailableFor, 3*time.Minute)
}

func (p *Provider) currentImage() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return cmp.Or(p.imageID, p.ImageID, "kwok-image-1")
}

// initLocked allocates the maps; p.mu must be held.
func (p *Provider) initLocked() {
	if p.capErrs == nil {
		p.capErrs = map[cloudprovider.OfferingKey]bool{}
		p.unavailable = map[cloudprovider.OfferingKey]time.Time{}
		p.interrupted = map[string]bool{}
		p.leases = map[string]time.Time{}
	}
}

// nodeName returns the Node name of one of this provider's IDs, or "" for another provider's.
func nodeName(providerID string) string {
	name, ok := strings.CutPrefix(providerID, ProviderIDPrefix)
	if !ok {
		return ""
	}
	return name
}

// Create implements [cloudprovider.Provider]. It buys the cheapest (option, offering) pair
// that is available, not learned unavailable and allowed by the claim's zone and capacity-type
// requirements (ties: option order, zone, capacity type) without an injected capacity error,
// and writes a Node named after the claim: the instance type's labels and the claim's, its
// taints and startup taints and karpenter.sh/unregistered, the type's capacity and allocatable,
// and a Ready condition of False until ReadyAfter has passed (see [Provider.Run]). An empty
// InstanceTypeOptions means every catalog type whose labels the requirements allow and whose
// allocatable fits claim.Resources. Create is idempotent for a claim name: a Node already
// written for the claim is returned as launched.
func (p *Provider) Create(ctx context.Context, claim *nodeplan.NodeClaim) (*nodeplan.NodeClaim, error) {
	if claim == nil || claim.Name == "" {
		return nil, &cloudprovider.LaunchError{Reason: cloudprovider.ReasonInvalidConfiguration,
			Message: "kwok: a NodeClaim with a name is needed (the Node is named after it)"}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if p.Client == nil {
		return nil, &cloudprovider.LaunchError{Reason: cloudprovider.ReasonInvalidConfiguration, Message: "kwok: Provider.Client is nil"}
	}
	if existing, err := p.Client.CoreV1().Nodes().Get(ctx, claim.Name, metav1.GetOptions{}); err == nil {
		if existing.Labels[LabelOwner] == p.owner() && existing.Annotations[AnnotationNodeClaim] == claim.Name &&
			existing.Annotations[AnnotationTerminated] == "" {
			return p.launched(claim, existing), nil
		}
		return nil, &cloudprovider.LaunchError{Reason: cloudprovider.ReasonInvalidConfiguration,
			Message: fmt.Sprintf("kwok: a Node named %q already exists and is not this provider's launch for the claim", claim.Name)}
	} else if !apierrors.IsNotFound(err) {
		return nil, launchFailed(claim, err)
	}

	p.mu.Lock()
	cands, err := p.candidatesLocked(claim)
	var pick *candidate
	var failed []cloudprovider.OfferingKey
	now := p.now()
	for i, c := range cands {
		k := cloudprovider.OfferingKey{InstanceType: c.it.Name, Zone: c.off.Zone, CapacityType: c.off.CapacityType}
		if p.capErrs[k] {
			p.unavailable[k] = now.Add(p.unavailableFor())
			failed = append(failed, k)
			continue
		}
		pick = &cands[i]
		break
	}
	p.seq++
	seq := p.seq
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if pick == nil {
		slices.SortFunc(failed, compareOfferingKeys)
		p.log().Info("kwok: insufficient capacity", "nodeclaim", claim.Name, "offerings", len(failed))
		return nil, &cloudprovider.InsufficientCapacityError{Offerings: failed}
	}

	node := p.newNode(claim, pick.it, pick.off, now, seq)
	created, err := p.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// A concurrent Create of the same claim won: answer as it did.
		existing, gerr := p.Client.CoreV1().Nodes().Get(ctx, claim.Name, metav1.GetOptions{})
		if gerr == nil && p.mine(existing) && existing.Annotations[AnnotationNodeClaim] == claim.Name {
			return p.launched(claim, existing), nil
		}
	}
	if err != nil {
		return nil, launchFailed(claim, err)
	}
	// An API server drops the status of a created object; post it, as a kubelet does.
	created.Status = node.Status
	if _, err := p.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		// No instance may be left behind a failed Create.
		if derr := p.Client.CoreV1().Nodes().Delete(context.WithoutCancel(ctx), node.Name, metav1.DeleteOptions{}); derr != nil && !apierrors.IsNotFound(derr) {
			p.log().Error("kwok: could not delete the Node of a failed launch", "node", node.Name, "err", derr)
		}
		return nil, launchFailed(claim, fmt.Errorf("posting the status of Node %s: %w", node.Name, err))
	}
	p.log().Info("kwok: launched", "nodeclaim", claim.Name, "provider-id", node.Spec.ProviderID,
		"instance-type", pick.it.Name, "zone", pick.off.Zone, "capacity-type", pick.off.CapacityType, "price", pick.off.Price)
	return p.launched(claim, node), nil
}

func launchFailed(claim *nodeplan.NodeClaim, err error) error {
	return &cloudprovider.LaunchError{Reason: cloudprovider.ReasonLaunchFailed,
		Message: fmt.Sprintf("kwok: writing the Node of claim %q", claim.Name), Err: err}
}

// launched is claim as Create returns it: Status and the node's labels from node.
func (p *Provider) launched(claim *nodeplan.NodeClaim, node *corev1.Node) *nodeplan.NodeClaim {
	out := claim.DeepCopy()
	got := p.toClaim(node)
	out.Status = got.Status
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for _, k := range []string{nodeplan.LabelInstanceType, nodeplan.LabelZone, nodeplan.LabelCapacityType, nodeplan.LabelNodePool} {
		if v, ok := node.Labels[k]; ok {
			out.Labels[k] = v
		}
	}
	return out
}

type candidate struct {
	it    *nodeplan.InstanceType
	off   nodeplan.Offering
	order int
}

// candidatesLocked lists the offerings claim may launch on, in launch order; p.mu must be held.
func (p *Provider) candidatesLocked(claim *nodeplan.NodeClaim) ([]candidate, error) {
	p.initLocked()
	var types []*nodeplan.InstanceType
	if len(claim.InstanceTypeOptions) == 0 {
		var labelReqs []nodeplan.Requirement
		for _, r := range claim.Requirements.All() {
			if r.Key != nodeplan.LabelZone && r.Key != nodeplan.LabelCapacityType {
				labelReqs = append(labelReqs, r)
			}
		}
		rs := nodeplan.NewRequirements(labelReqs...)
		for i := range p.Catalog {
			it := &p.Catalog[i]
			if _, fits := nodeplan.Fits(claim.Resources, it.Allocatable()); fits && rs.Matches(it.Labels) {
				types = append(types, it)
			}
		}
	} else {
		for _, name := range claim.InstanceTypeOptions {
			if i := slices.IndexFunc(p.Catalog, func(it nodeplan.InstanceType) bool { return it.Name == name }); i >= 0 {
				types = append(types, &p.Catalog[i])
			}
		}
	}
	if len(types) == 0 {
		return nil, &cloudprovider.LaunchError{Reason: cloudprovider.ReasonNoInstanceTypeOption,
			Message: fmt.Sprintf("kwok: no instance type of the catalog (%d types) is an option of claim %q", len(p.Catalog), claim.Name)}
	}
	now := p.now()
	var cands []candidate
	for i, it := range types {
		for _, o := range it.Offerings {
			if !o.Available || !o.Accepts(claim.Requirements) {
				continue
			}
			k := cloudprovider.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}
			if until, ok := p.unavailable[k]; ok && now.Before(until) {
				continue
			}
			cands = append(cands, candidate{it: it, off: o, order: i})
		}
	}
	if len(cands) == 0 {
		return nil, &cloudprovider.InsufficientCapacityError{}
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.off.Price, b.off.Price), cmp.Compare(a.order, b.order),
			strings.Compare(a.off.Zone, b.off.Zone), strings.Compare(string(a.off.CapacityType), string(b.off.CapacityType)))
	})
	return cands, nil
}

// Delete implements [cloudprovider.Provider]. The first call marks the Node terminated
// (AnnotationTerminated) and deletes it; a Node held by finalizers (the controller's
// termination finalizer) stays as an object, but its instance is gone: later calls, Get and
// List report it not found, as a cloud reports a terminated instance whose Node object is
// still there.
func (p *Provider) Delete(ctx context.Context, providerID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name := nodeName(providerID)
	if name == "" {
		return &cloudprovider.NotFoundError{ProviderID: providerID, Err: fmt.Errorf("kwok: not a %s provider ID", ProviderIDPrefix)}
	}
	nodes := p.Client.CoreV1().Nodes()
	gone := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !p.mine(n) {
			gone = true
			return nil
		}
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[AnnotationTerminated] = p.now().UTC().Format(time.RFC3339Nano)
		_, err = nodes.Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) || gone {
		return &cloudprovider.NotFoundError{ProviderID: providerID}
	}
	if err != nil {
		return fmt.Errorf("kwok: marking Node %s terminated: %w", name, err)
	}
	if err := nodes.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kwok: deleting Node %s: %w", name, err)
	}
	p.mu.Lock()
	delete(p.leases, name)
	p.mu.Unlock()
	p.log().Info("kwok: deleted", "provider-id", providerID)
	return nil
}

// mine reports whether n is a live instance of this provider: its label, not terminated.
func (p *Provider) mine(n *corev1.Node) bool {
	return n.Labels[LabelOwner] == p.owner() && n.Annotations[AnnotationTerminated] == "" &&
		strings.HasPrefix(n.Spec.ProviderID, ProviderIDPrefix)
}

// Get implements [cloudprovider.Provider]: the Node of the provider ID, read from the API server.
func (p *Provider) Get(ctx context.Context, providerID string) (*nodeplan.NodeClaim, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name := nodeName(providerID)
	if name == "" {
		return nil, &cloudprovider.NotFoundError{ProviderID: providerID, Err: fmt.Errorf("kwok: not a %s provider ID", ProviderIDPrefix)}
	}
	n, err := p.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, &cloudprovider.NotFoundError{ProviderID: providerID}
	}
	if err != nil {
		return nil, fmt.Errorf("kwok: reading Node %s: %w", name, err)
	}
	if !p.mine(n) || n.Spec.ProviderID != providerID {
		return nil, &cloudprovider.NotFoundError{ProviderID: providerID}
	}
	return p.toClaim(n), nil
}

// List implements [cloudprovider.Provider]: the Nodes labelled nodeplan.io/kwok=<Owner> that
// Delete has not terminated, read from the API server, in provider-ID order.
func (p *Provider) List(ctx context.Context) ([]*nodeplan.NodeClaim, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	list, err := p.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelOwner + "=" + p.owner()})
	if err != nil {
		return nil, fmt.Errorf("kwok: listing Nodes %s=%s: %w", LabelOwner, p.owner(), err)
	}
	var out []*nodeplan.NodeClaim
	for i := range list.Items {
		if n := &list.Items[i]; p.mine(n) {
			out = append(out, p.toClaim(n))
		}
	}
	slices.SortFunc(out, func(a, b *nodeplan.NodeClaim) int { return strings.Compare(a.Status.ProviderID, b.Status.ProviderID) })
	return out, nil
}

// InstanceTypes implements [cloudprovider.Provider]. The pool is not consulted: every catalog
// type is returned, with the offerings learned unavailable (capacity errors, spot
// interruptions within UnavailableFor) Available false.
func (p *Provider) InstanceTypes(ctx context.Context, pool *nodeplan.NodePool) ([]nodeplan.InstanceType, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.initLocked()
	now := p.now()
	out := make([]nodeplan.InstanceType, len(p.Catalog))
	for i := range p.Catalog {
		it := &p.Catalog[i]
		// Labels, Capacity and Overhead may be shared (the interface's contract); Offerings
		// are the caller's.
		out[i] = *it
		out[i].Offerings = slices.Clone(it.Offerings)
		for j := range out[i].Offerings {
			o := &out[i].Offerings[j]
			k := cloudprovider.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}
			if until, ok := p.unavailable[k]; ok && now.Before(until) {
				o.Available = false
			}
		}
	}
	slices.SortStableFunc(out, func(a, b nodeplan.InstanceType) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// IsDrifted implements [cloudprovider.Provider]: a node whose image is not the current one
// (ImageID, or SetImageID's) has drifted ([cloudprovider.DriftImage]).
func (p *Provider) IsDrifted(ctx context.Context, claim *nodeplan.NodeClaim) (cloudprovider.DriftReason, error) {
	if claim == nil || claim.Status.ProviderID == "" {
		return "", &cloudprovider.LaunchError{Reason: cloudprovider.ReasonInvalidConfiguration, Message: "kwok: IsDrifted needs a launched NodeClaim"}
	}
	got, err := p.Get(ctx, claim.Status.ProviderID)
	if err != nil {
		return "", err
	}
	if got.Status.ImageID != p.currentImage() {
		return cloudprovider.DriftImage, nil
	}
	return "", nil
}

// newNode is the Node a kubelet would register for the claim on the offering.
func (p *Provider) newNode(claim *nodeplan.NodeClaim, it *nodeplan.InstanceType, o nodeplan.Offering, now time.Time, seq int) *corev1.Node {
	labels := maps.Clone(it.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, claim.Labels)
	labels[nodeplan.LabelInstanceType] = it.Name
	labels[nodeplan.LabelZone] = o.Zone
	labels[nodeplan.LabelCapacityType] = string(o.CapacityType)
	if claim.NodePool != "" {
		labels[nodeplan.LabelNodePool] = claim.NodePool
	}
	labels[nodeplan.LabelHostname] = claim.Name
	if labels[nodeplan.LabelOS] == "" {
		labels[nodeplan.LabelOS] = "linux"
	}
	labels[LabelOwner] = p.owner()
	var startup []string
	for _, t := range claim.StartupTaints {
		startup = append(startup, t.Key+":"+string(t.Effect))
	}
	annotations := map[string]string{
		AnnotationNodeClaim:  claim.Name,
		AnnotationPrice:      strconv.FormatFloat(o.Price, 'g', -1, 64),
		AnnotationImage:      p.currentImage(),
		AnnotationLaunchTime: now.UTC().Format(time.RFC3339Nano),
	}
	if len(startup) > 0 {
		annotations[AnnotationStartupTaints] = strings.Join(startup, ",")
	}
	taints := slices.Clone(claim.Taints)
	taints = append(taints, claim.StartupTaints...)
	taints = append(taints, corev1.Taint{Key: nodeplan.TaintUnregistered, Effect: corev1.TaintEffectNoExecute})
	ip := fmt.Sprintf("10.%d.%d.%d", 64+seq/65536%64, seq/256%256, seq%256)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: claim.Name, Labels: labels, Annotations: annotations},
		Spec:       corev1.NodeSpec{ProviderID: ProviderIDPrefix + claim.Name, Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    it.Capacity.DeepCopy(),
			Allocatable: it.Allocatable(),
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
				Message: "kwok: the node is starting", LastHeartbeatTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: claim.Name}},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v0.0.0-kwok", OSImage: "kwok (no kubelet: nodeplan plays it)",
				OperatingSystem: labels[nodeplan.LabelOS], Architecture: labels[nodeplan.LabelArch]},
		},
	}
}

// toClaim is what the provider knows of a Node's instance: what Create recorded on it.
func (p *Provider) toClaim(n *corev1.Node) *nodeplan.NodeClaim {
	price, _ := strconv.ParseFloat(n.Annotations[AnnotationPrice], 64)
	launch, err := time.Parse(time.RFC3339Nano, n.Annotations[AnnotationLaunchTime])
	if err != nil {
		launch = n.CreationTimestamp.Time
	}
	return &nodeplan.NodeClaim{
		Name:     n.Annotations[AnnotationNodeClaim],
		NodePool: n.Labels[nodeplan.LabelNodePool],
		Labels:   maps.Clone(n.Labels),
		Status: nodeplan.NodeClaimStatus{
			ProviderID:   n.Spec.ProviderID,
			InstanceType: n.Labels[nodeplan.LabelInstanceType],
			Zone:         n.Labels[nodeplan.LabelZone],
			CapacityType: nodeplan.CapacityType(n.Labels[nodeplan.LabelCapacityType]),
			Price:        price,
			Capacity:     n.Status.Capacity.DeepCopy(),
			Allocatable:  n.Status.Allocatable.DeepCopy(),
			ImageID:      n.Annotations[AnnotationImage],
			LaunchTime:   launch,
		},
	}
}

func compareOfferingKeys(a, b cloudprovider.OfferingKey) int {
	return cmp.Or(strings.Compare(a.InstanceType, b.InstanceType), strings.Compare(a.Zone, b.Zone),
		strings.Compare(string(a.CapacityType), string(b.CapacityType)))
}
