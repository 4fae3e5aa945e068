package cloudprovider

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nodeplan/nodeplan"
)

// Memory is a [Provider] whose cloud is a map in memory: launches succeed at once (or after
// LaunchLatency) from a configurable catalog, and capacity errors, failures, drift and
// interruptions are injected by the caller. It is meant for tests of controllers and for
// simulations, which can run it on virtual time through Now and Sleep.
//
// The zero value is an empty cloud with no instance types; set Catalog (or call SetCatalog)
// before launching. Configuration fields must be set before the first call; after that, change
// the cloud only through the methods, all of which are safe for concurrent use. Provider IDs are
// deterministic: memory:///<zone>/i-<17 hex digits>, numbered from 1 in launch order.
//
// Memory also implements [InterruptionSource] and [Repairer].
type Memory struct {
	// Catalog is the cloud's instance types and offerings. An offering with Available false
	// cannot be launched.
	Catalog []nodeplan.InstanceType
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Sleep waits for d or until ctx is done, returning ctx.Err() in that case; nil means a
	// real timer. Simulations on virtual time replace it.
	Sleep func(ctx context.Context, d time.Duration) error
	// LaunchLatency is how long Create takes.
	LaunchLatency time.Duration
	// UnavailableFor is how long an offering that failed a launch with a capacity error (or
	// whose spot instance was interrupted) is reported unavailable by InstanceTypes; zero means
	// 3 minutes.
	UnavailableFor time.Duration
	// ImageID is the image new nodes boot; "" means "img-1". Claims launched with another image
	// are drifted ([DriftImage]); change it with SetImageID.
	ImageID string
	// Policies are returned by RepairPolicies.
	Policies []RepairPolicy
	// Logger receives a line per launch, deletion and injected fault; nil discards.
	Logger *slog.Logger

	mu          sync.Mutex
	seq         uint64
	nodes       map[string]*nodeplan.NodeClaim // by provider ID
	capErrs     map[OfferingKey]bool
	unavailable map[OfferingKey]time.Time // learned from failures: until
	failures    map[Op][]error
	drift       map[string]DriftReason
	events      []Interruption
}

// Op names a [Memory] method, for injecting failures.
type Op string

// The operations of [Memory] that can be made to fail.
const (
	OpCreate        Op = "Create"
	OpDelete        Op = "Delete"
	OpGet           Op = "Get"
	OpList          Op = "List"
	OpInstanceTypes Op = "InstanceTypes"
	OpIsDrifted     Op = "IsDrifted"
	OpInterruptions Op = "Interruptions"
)

var _ interface {
	Provider
	InterruptionSource
	Repairer
} = (*Memory)(nil)

const memoryProviderPrefix = "memory://"

func (m *Memory) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Memory) log() *slog.Logger {
	if m.Logger != nil {
		return m.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (m *Memory) unavailableFor() time.Duration {
	if m.UnavailableFor > 0 {
		return m.UnavailableFor
	}
	return 3 * time.Minute
}

func (m *Memory) imageID() string {
	if m.ImageID != "" {
		return m.ImageID
	}
	return "img-1"
}

// initLocked allocates the maps; m.mu must be held.
func (m *Memory) initLocked() {
	if m.nodes == nil {
		m.nodes = map[string]*nodeplan.NodeClaim{}
		m.capErrs = map[OfferingKey]bool{}
		m.unavailable = map[OfferingKey]time.Time{}
		m.failures = map[Op][]error{}
		m.drift = map[string]DriftReason{}
	}
}

// takeFailure pops the next injected failure for op; m.mu must be held.
func (m *Memory) takeFailure(op Op) error {
	m.initLocked()
	q := m.failures[op]
	if len(q) == 0 {
		return nil
	}
	err := q[0]
	m.failures[op] = q[1:]
	m.log().Info("cloudprovider: memory: injected failure", "op", op, "err", err)
	return err
}

// FailNext makes the next len(errs) calls of op return these errors, in order, before doing
// anything else. A failed Create launches nothing.
func (m *Memory) FailNext(op Op, errs ...error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.initLocked()
	m.failures[op] = append(m.failures[op], errs...)
}

// SetCapacityError makes launches of the offering fail with insufficient capacity (on) or
// succeed again (!on). The offering is not marked unavailable until a launch has tried it, as
// with a real cloud.
func (m *Memory) SetCapacityError(k OfferingKey, on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.initLocked()
	if on {
		m.capErrs[k] = true
	} else {
		delete(m.capErrs, k)
	}
}

// ClearCapacityErrors removes every capacity error and forgets every offering learned to be
// unavailable.
func (m *Memory) ClearCapacityErrors() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.initLocked()
	clear(m.capErrs)
	clear(m.unavailable)
}

// SetCatalog replaces the catalog.
func (m *Memory) SetCatalog(catalog []nodeplan.InstanceType) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Catalog = catalog
}

// SetImageID changes the image new nodes boot; nodes launched before are then drifted.
func (m *Memory) SetImageID(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ImageID = id
}

// SetDrift makes IsDrifted report reason for the node ("" clears it).
func (m *Memory) SetDrift(providerID string, reason DriftReason) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.initLocked()
	if reason == "" {
		delete(m.drift, providerID)
	} else {
		m.drift[providerID] = reason
	}
}

// Create implements [Provider]. It considers every (option, offering) pair that is available,
// not learned unavailable and allowed by the claim's zone and capacity-type requirements,
// cheapest first (ties: option order, zone, capacity type), and launches the first one without
// an injected capacity error. An empty InstanceTypeOptions means every catalog type whose labels
// satisfy the requirements and whose allocatable fits claim.Resources.
func (m *Memory) Create(ctx context.Context, claim *nodeplan.NodeClaim) (*nodeplan.NodeClaim, error) {
	if claim == nil {
		return nil, &LaunchError{Reason: ReasonInvalidConfiguration, Message: "nil NodeClaim"}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	if err := m.takeFailure(OpCreate); err != nil {
		m.mu.Unlock()
		return nil, err
	}
	cands, err := m.candidatesLocked(claim)
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if m.LaunchLatency > 0 {
		sleep := m.Sleep
		if sleep == nil {
			sleep = sleepTimer
		}
		if err := sleep(ctx, m.LaunchLatency); err != nil {
			return nil, err
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	var failed []OfferingKey
	for _, c := range cands {
		k := OfferingKey{InstanceType: c.it.Name, Zone: c.off.Zone, CapacityType: c.off.CapacityType}
		if until, ok := m.unavailable[k]; ok && now.Before(until) {
			continue // learned by a concurrent launch while this one slept
		}
		if m.capErrs[k] {
			m.unavailable[k] = now.Add(m.unavailableFor())
			failed = append(failed, k)
			continue
		}
		return m.launchLocked(claim, c.it, c.off, now), nil
	}
	slices.SortFunc(failed, compareOfferingKeys)
	m.log().Info("cloudprovider: memory: insufficient capacity", "claim", claim.Name, "offerings", len(failed))
	return nil, &InsufficientCapacityError{Offerings: failed}
}

type candidate struct {
	it    *nodeplan.InstanceType
	off   nodeplan.Offering
	order int
}

// candidatesLocked lists the offerings claim may launch on, in launch order; m.mu must be held.
func (m *Memory) candidatesLocked(claim *nodeplan.NodeClaim) ([]candidate, error) {
	byName := make(map[string]*nodeplan.InstanceType, len(m.Catalog))
	for i := range m.Catalog {
		byName[m.Catalog[i].Name] = &m.Catalog[i]
	}
	var types []*nodeplan.InstanceType
	if len(claim.InstanceTypeOptions) == 0 {
		labelReqs := withoutKeys(claim.Requirements, nodeplan.LabelZone, nodeplan.LabelCapacityType)
		for i := range m.Catalog {
			it := &m.Catalog[i]
			if _, fits := nodeplan.Fits(claim.Resources, it.Allocatable()); fits && labelReqs.Matches(it.Labels) {
				types = append(types, it)
			}
		}
	} else {
		for _, name := range claim.InstanceTypeOptions {
			if it, ok := byName[name]; ok {
				types = append(types, it)
			}
		}
	}
	if len(types) == 0 {
		return nil, &LaunchError{Reason: ReasonNoInstanceTypeOption,
			Message: fmt.Sprintf("no instance type in the catalog matches claim %q", claim.Name)}
	}
	now := m.now()
	m.initLocked()
	var cands []candidate
	for i, it := range types {
		for _, o := range it.Offerings {
			if !o.Available || !o.Accepts(claim.Requirements) {
				continue
			}
			k := OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}
			if until, ok := m.unavailable[k]; ok && now.Before(until) {
				continue
			}
			cands = append(cands, candidate{it: it, off: o, order: i})
		}
	}
	if len(cands) == 0 {
		return nil, &InsufficientCapacityError{}
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.off.Price, b.off.Price), cmp.Compare(a.order, b.order),
			strings.Compare(a.off.Zone, b.off.Zone), strings.Compare(string(a.off.CapacityType), string(b.off.CapacityType)))
	})
	return cands, nil
}

func withoutKeys(rs nodeplan.Requirements, keys ...string) nodeplan.Requirements {
	var keep []nodeplan.Requirement
	for _, r := range rs.All() {
		if !slices.Contains(keys, r.Key) {
			keep = append(keep, r)
		}
	}
	return nodeplan.NewRequirements(keep...)
}

func (m *Memory) launchLocked(claim *nodeplan.NodeClaim, it *nodeplan.InstanceType, o nodeplan.Offering, now time.Time) *nodeplan.NodeClaim {
	m.seq++
	out := claim.DeepCopy()
	out.Status = nodeplan.NodeClaimStatus{
		ProviderID:   fmt.Sprintf("%s/%s/i-%017x", memoryProviderPrefix, o.Zone, m.seq),
		InstanceType: it.Name,
		Zone:         o.Zone,
		CapacityType: o.CapacityType,
		Price:        o.Price,
		Capacity:     cloneResources(it.Capacity),
		Allocatable:  it.Allocatable(),
		ImageID:      m.imageID(),
		LaunchTime:   now,
	}
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	maps.Copy(out.Labels, it.Labels)
	out.Labels[nodeplan.LabelInstanceType] = it.Name
	out.Labels[nodeplan.LabelZone] = o.Zone
	out.Labels[nodeplan.LabelCapacityType] = string(o.CapacityType)
	if claim.NodePool != "" {
		out.Labels[nodeplan.LabelNodePool] = claim.NodePool
	}
	m.nodes[out.Status.ProviderID] = out.DeepCopy()
	m.log().Info("cloudprovider: memory: launched", "claim", claim.Name, "providerID", out.Status.ProviderID,
		"instanceType", it.Name, "zone", o.Zone, "capacityType", o.CapacityType, "price", o.Price)
	return out
}

func sleepTimer(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Delete implements [Provider]: the node is gone at once, so the first call returns nil and
// later ones [*NotFoundError].
func (m *Memory) Delete(ctx context.Context, providerID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.takeFailure(OpDelete); err != nil {
		return err
	}
	if _, ok := m.nodes[providerID]; !ok {
		return &NotFoundError{ProviderID: providerID}
	}
	delete(m.nodes, providerID)
	delete(m.drift, providerID)
	m.log().Info("cloudprovider: memory: deleted", "providerID", providerID)
	return nil
}

// Get implements [Provider].
func (m *Memory) Get(ctx context.Context, providerID string) (*nodeplan.NodeClaim, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.takeFailure(OpGet); err != nil {
		return nil, err
	}
	n, ok := m.nodes[providerID]
	if !ok {
		return nil, &NotFoundError{ProviderID: providerID}
	}
	return n.DeepCopy(), nil
}

// List implements [Provider].
func (m *Memory) List(ctx context.Context) ([]*nodeplan.NodeClaim, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.takeFailure(OpList); err != nil {
		return nil, err
	}
	ids := slices.Sorted(maps.Keys(m.nodes))
	out := make([]*nodeplan.NodeClaim, len(ids))
	for i, id := range ids {
		out[i] = m.nodes[id].DeepCopy()
	}
	return out, nil
}

// InstanceTypes implements [Provider]. The pool is not consulted: every catalog type is
// returned, and offerings learned unavailable (capacity errors, spot interruptions within
// UnavailableFor) have Available false.
func (m *Memory) InstanceTypes(ctx context.Context, pool *nodeplan.NodePool) ([]nodeplan.InstanceType, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.takeFailure(OpInstanceTypes); err != nil {
		return nil, err
	}
	now := m.now()
	out := make([]nodeplan.InstanceType, len(m.Catalog))
	for i := range m.Catalog {
		out[i] = cloneInstanceType(&m.Catalog[i])
		for j := range out[i].Offerings {
			o := &out[i].Offerings[j]
			k := OfferingKey{InstanceType: out[i].Name, Zone: o.Zone, CapacityType: o.CapacityType}
			if until, ok := m.unavailable[k]; ok && now.Before(until) {
				o.Available = false
			}
		}
	}
	slices.SortStableFunc(out, func(a, b nodeplan.InstanceType) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// IsDrifted implements [Provider]: a reason set with SetDrift wins; otherwise a node whose image
// is not the current ImageID has drifted.
func (m *Memory) IsDrifted(ctx context.Context, claim *nodeplan.NodeClaim) (DriftReason, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if claim == nil || claim.Status.ProviderID == "" {
		return "", &LaunchError{Reason: ReasonInvalidConfiguration, Message: "IsDrifted needs a launched NodeClaim"}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.takeFailure(OpIsDrifted); err != nil {
		return "", err
	}
	n, ok := m.nodes[claim.Status.ProviderID]
	if !ok {
		return "", &NotFoundError{ProviderID: claim.Status.ProviderID}
	}
	if r := m.drift[claim.Status.ProviderID]; r != "" {
		return r, nil
	}
	if n.Status.ImageID != m.imageID() {
		return DriftImage, nil
	}
	return "", nil
}

// Interrupt queues an interruption of the node for the next Interruptions call. A spot
// interruption also makes the node's offering unavailable for UnavailableFor, as EC2's does.
// The node keeps running until deleted. It returns [*NotFoundError] for an unknown node.
func (m *Memory) Interrupt(providerID string, kind InterruptionKind, deadline time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.initLocked()
	n, ok := m.nodes[providerID]
	if !ok {
		return &NotFoundError{ProviderID: providerID}
	}
	now := m.now()
	ev := Interruption{
		ProviderID: providerID,
		InstanceID: providerID[strings.LastIndexByte(providerID, '/')+1:],
		Kind:       kind,
		Time:       now,
		Deadline:   deadline,
		ID:         fmt.Sprintf("memory-event-%d", len(m.events)+1),
	}
	if kind == InterruptionStateChange {
		ev.State = "shutting-down"
	}
	m.events = append(m.events, ev)
	if kind == InterruptionSpot {
		k := OfferingKey{InstanceType: n.Status.InstanceType, Zone: n.Status.Zone, CapacityType: n.Status.CapacityType}
		m.unavailable[k] = now.Add(m.unavailableFor())
	}
	return nil
}

// Interruptions implements [InterruptionSource]: it returns and forgets the queued events. It
// never blocks.
func (m *Memory) Interruptions(ctx context.Context) ([]Interruption, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.takeFailure(OpInterruptions); err != nil {
		return nil, err
	}
	out := m.events
	m.events = nil
	return out, nil
}

// RepairPolicies implements [Repairer]; it returns Policies.
func (m *Memory) RepairPolicies() []RepairPolicy { return m.Policies }

func compareOfferingKeys(a, b OfferingKey) int {
	return cmp.Or(strings.Compare(a.InstanceType, b.InstanceType), strings.Compare(a.Zone, b.Zone),
		strings.Compare(string(a.CapacityType), string(b.CapacityType)))
}
