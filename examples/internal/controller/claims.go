package controller

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

// Phase is where a claim is in its life: launching → launched → registered → initialized →
// terminating. A claim leaves the table when its instance is gone.
type Phase int

const (
	// PhaseLaunching: Provider.Create is in flight; there is no provider ID yet.
	PhaseLaunching Phase = iota
	// PhaseLaunched: the instance exists but no Node with its provider ID has registered.
	PhaseLaunched
	// PhaseRegistered: a Node with the claim's provider ID exists but is not ready yet, or
	// still carries startup taints.
	PhaseRegistered
	// PhaseInitialized: the node is Ready with its startup taints gone: pods can use it and
	// the planner may disrupt it.
	PhaseInitialized
	// PhaseTerminating: the node is being drained and its instance deleted.
	PhaseTerminating
)

func (p Phase) String() string {
	switch p {
	case PhaseLaunching:
		return "Launching"
	case PhaseLaunched:
		return "Launched"
	case PhaseRegistered:
		return "Registered"
	case PhaseInitialized:
		return "Initialized"
	case PhaseTerminating:
		return "Terminating"
	}
	return "Unknown"
}

// Claim is one tracked NodeClaim and what the controller knows about it beyond the claim.
type Claim struct {
	nodeplan.NodeClaim
	Phase Phase
	// Created is when the claim was made (launch started), or when it was adopted.
	Created time.Time
	// Initialized is when the node became initialized.
	Initialized time.Time
	// LastPodEvent is when a pod last arrived on or left the node; consolidateAfter counts
	// from it.
	LastPodEvent time.Time
	// Reason is why the claim is terminating (a disruption reason, or a timeout).
	Reason string
	// Replacement is true for claims launched by a disruption command.
	Replacement bool
	// Planned holds the requests of the pods the claim was launched for, by pod key, so the
	// room they reserve on it can be released once they are pending again (and re-placed by
	// the solver) or gone.
	Planned map[string]corev1.ResourceList
	// Adopted is true for claims rebuilt from their NodeClaim objects after a restart (or taken
	// over from another installation): which pods they were for is not known, so they reserve
	// no room.
	Adopted bool
	// UID is the NodeClaim object's; Nodes get an owner reference to it.
	UID string
	// Deleting is true when the NodeClaim object has a deletionTimestamp: someone asked for
	// it to go (`kubectl delete nodeclaim`), and the termination finalizer holds it until the
	// node is drained and the instance terminated.
	Deleting bool
	// LaunchFailed is when Provider.Create failed in a way that does not prove nothing was
	// launched (a timeout, a lost answer): the claim stays, reserving nothing, until a listing
	// shows an instance carrying its name — bound to it, as after a restart — or
	// MissedListings listings over Timeouts.Collect show none ([Tracker.LaunchUnknown]).
	// Zero otherwise.
	LaunchFailed time.Time
}

// ActionKind is an effect the tracker asks the controller to carry out.
type ActionKind int

const (
	// ActRegister: the claim's node registered; sync the claim's labels and taints onto it.
	ActRegister ActionKind = iota + 1
	// ActInitialize: the node is ready; label it initialized.
	ActInitialize
	// ActRegistrationTimeout: the instance never registered; delete it.
	ActRegistrationTimeout
	// ActLaunchTimeout: Create has not returned in time; it is abandoned.
	ActLaunchTimeout
	// ActNodeGone: the node of a registered claim was deleted by someone else; delete the
	// instance too, as Karpenter does for `kubectl delete node`.
	ActNodeGone
	// ActInstanceGone: the instance has been missing from the cloud's listings long enough to be
	// sure (see [Tracker.Reconcile]); forget the claim. Node, when set, names its Node to
	// delete; a Ready Node is never named.
	ActInstanceGone
	// ActAdopt: an instance no claim knew about was adopted (launched by an earlier run).
	ActAdopt
	// ActStray: an instance no claim owns was seen for the first time. It is reported once and
	// never deleted: without a claim nothing proves it is ours (a Karpenter installation in
	// the same account tags its instances the same way).
	ActStray
	// ActPoolGone: the claim's NodePool has been missing for Timeouts.Collect while the pool
	// source worked; drain and delete the claim's node as Karpenter does when its NodePool is
	// deleted.
	ActPoolGone
	// ActNoInstance: a claim whose launch failed without proof that nothing was launched
	// ([Tracker.LaunchUnknown]) has no instance in MissedListings listings over
	// Timeouts.Collect; it left the table: delete its object.
	ActNoInstance
	// ActOrphan: an instance carries the name of one of this run's claims that cannot use it —
	// the claim has another instance (a fleet that returned more than asked), or was given up
	// before its instance was seen. It is ours beyond doubt and no claim will ever use it:
	// terminate it, and its Node if one registered (never initialized by this controller).
	ActOrphan
)

func (k ActionKind) String() string {
	return [...]string{"", "Register", "Initialize", "RegistrationTimeout", "LaunchTimeout", "NodeGone",
		"InstanceGone", "Adopt", "Stray", "PoolGone", "NoInstance", "Orphan"}[k]
}

// Action is one effect: on a claim (a copy), an instance or a node.
type Action struct {
	Kind ActionKind
	// Claim is a copy of the claim concerned, when there is one.
	Claim *Claim
	// ProviderID names the instance of ActStray.
	ProviderID string
	// Node is the node concerned, when there is one.
	Node string
	// Repeat is true when the effect was asked for before but the node does not show it yet
	// (a concurrent writer overwrote it): carry it out again, quietly.
	Repeat bool
}

// Timeouts bound each phase. Zero fields mean the defaults, which are Karpenter's.
type Timeouts struct {
	// Launch bounds Provider.Create; zero means 5 minutes.
	Launch time.Duration
	// Registration bounds launch → a Node with the provider ID; zero means 15 minutes.
	Registration time.Duration
	// Collect is how long a claim's instance must have been missing from the cloud's listings
	// (and in at least MissedListings of them) before the claim is given up, and how long a
	// claim's NodePool must have been missing before its node is drained; zero means 2
	// minutes.
	Collect time.Duration
}

func (t Timeouts) launch() time.Duration       { return orDefault(t.Launch, 5*time.Minute) }
func (t Timeouts) registration() time.Duration { return orDefault(t.Registration, 15*time.Minute) }
func (t Timeouts) collect() time.Duration      { return orDefault(t.Collect, 2*time.Minute) }

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Tracker is the controller's table of NodeClaims: a state machine that is told what happened
// (launches, nodes, cloud listings, pod events) with the time, and answers with the effects to
// carry out. It does no I/O and reads no clock, so tests drive it with any times they like.
//
// There is no NodeClaim object in the cluster: the cloud's instances (Provider.List) and the
// Node objects are the durable record, and [Tracker.Reconcile] rebuilds the table from them
// after a restart. The zero value is an empty table with default timeouts. Safe for concurrent
// use.
type Tracker struct {
	Timeouts Timeouts
	// Installation, when set, is this installation's name: an instance listed with it in its
	// nodeplan.io/installation annotation (the tag the provider set at launch) whose claim is
	// not in the table is an orphan ([Tracker.Reconcile]). Empty leaves such instances strays.
	Installation string

	mu     sync.Mutex
	claims map[string]*Claim // by claim name
	// strays are instances no claim knows, by provider ID, reported once each.
	strays map[string]bool
	// missing counts, by claim name, the listings in a row that did not show the claim's
	// instance, and when the first of them began.
	missing map[string]miss
	// poolGone is when each claim's NodePool was first seen missing, by claim name.
	poolGone map[string]time.Time
	// abandoned are the claims given up before an instance was bound to them (launch timed
	// out, or failed without proof), by name, with when: an instance carrying one of these
	// names is an orphan. orphans are the instances reported as such, by provider ID.
	abandoned map[string]time.Time
	orphans   map[string]bool
}

type miss struct {
	count int
	since time.Time
}

// MissedListings is how many listings in a row must miss a claim's instance before the
// claim is given up: EC2's DescribeInstances is eventually consistent, so one miss proves
// nothing.
const MissedListings = 3

func (t *Tracker) initLocked() {
	if t.claims == nil {
		t.claims = map[string]*Claim{}
		t.strays = map[string]bool{}
		t.missing = map[string]miss{}
		t.poolGone = map[string]time.Time{}
		t.abandoned = map[string]time.Time{}
		t.orphans = map[string]bool{}
	}
}

func copyClaim(c *Claim) *Claim {
	out := *c
	c.NodeClaim.DeepCopyInto(&out.NodeClaim)
	return &out
}

// Begin records a claim whose launch starts now. It reports false if the name is taken.
func (t *Tracker) Begin(c nodeplan.NodeClaim, replacement bool, planned map[string]corev1.ResourceList, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.initLocked()
	if _, ok := t.claims[c.Name]; ok {
		return false
	}
	t.claims[c.Name] = &Claim{NodeClaim: c, Phase: PhaseLaunching, Created: now, Replacement: replacement, Planned: planned}
	return true
}

// Load puts claims read back from their NodeClaim objects into the table (those already there
// are skipped), with the phase their Node shows: a claim without a provider ID is still
// launching (a crash between the object and the cloud's answer: [Tracker.Reconcile] binds it
// to its instance if the cloud has one); one whose Node is missing is launched; one whose
// Node is there is registered, or initialized when the Node is ready for pods; one being
// deleted, or whose Node carries [AnnotationTerminating], is terminating. It returns an
// ActAdopt per claim loaded, in name order.
func (t *Tracker) Load(claims []*Claim, nodes []*corev1.Node, now time.Time) []Action {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.initLocked()
	byID := nodesByProviderID(nodes)
	var acts []Action
	for _, in := range claims {
		if t.claims[in.Name] != nil {
			continue
		}
		c := copyClaim(in)
		c.Adopted = true
		if c.Created.IsZero() {
			c.Created = now
		}
		c.Phase = PhaseLaunching
		if c.Status.ProviderID != "" {
			c.Phase = PhaseLaunched
			placeByNode(c, byID[c.Status.ProviderID], now)
		}
		t.claims[c.Name] = c
		acts = append(acts, Action{Kind: ActAdopt, Claim: copyClaim(c), Node: c.Status.NodeName})
	}
	slices.SortFunc(acts, func(a, b Action) int { return strings.Compare(a.Claim.Name, b.Claim.Name) })
	return acts
}

// placeByNode sets a launched claim's phase from its Node (nil: not registered yet).
func placeByNode(c *Claim, n *corev1.Node, now time.Time) {
	if n != nil {
		c.Phase = PhaseRegistered
		c.Status.NodeName = n.Name
		if nodeInitialized(n, c) {
			c.Phase = PhaseInitialized
			if c.Initialized.IsZero() {
				c.Initialized = now
			}
			if c.LastPodEvent.IsZero() {
				c.LastPodEvent = now
			}
		}
		if r := n.Annotations[AnnotationTerminating]; r != "" {
			c.Phase = PhaseTerminating
			c.Reason = r
		}
		if n.DeletionTimestamp != nil && c.Phase != PhaseTerminating {
			c.Phase = PhaseTerminating
			c.Reason = reasonNodeDeleted
		}
	}
	if c.Deleting && c.Phase != PhaseTerminating {
		c.Phase = PhaseTerminating
		c.Reason = reasonNodeClaimDeleted
	}
}

// Reasons for terminations an operator asked for by deleting an object.
const (
	reasonNodeDeleted      = "NodeDeleted"
	reasonNodeClaimDeleted = "NodeClaimDeleted"
)

// MarkDeleting records that the claim's NodeClaim or Node is being deleted and moves the claim
// to PhaseTerminating. It reports false when the claim is unknown or already terminating.
func (t *Tracker) MarkDeleting(name, reason string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.claims[name]
	if !ok || c.Phase == PhaseTerminating {
		return false
	}
	c.Deleting = true
	c.Phase = PhaseTerminating
	c.Reason = reason
	return true
}

// Launched records what Provider.Create returned for the claim. It reports false when the
// claim is no longer tracked (its launch timed out meanwhile): the caller must then delete the
// instance, or it would leak.
func (t *Tracker) Launched(name string, launched *nodeplan.NodeClaim) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.initLocked()
	c, ok := t.claims[name]
	if ok && c.Status.ProviderID != "" && c.Status.ProviderID == launched.Status.ProviderID {
		return true // Reconcile bound it to its instance first
	}
	if !ok || c.Phase != PhaseLaunching {
		return false
	}
	resources := c.Resources
	c.NodeClaim = *launched
	if c.Resources == nil {
		c.Resources = resources
	}
	c.Phase = PhaseLaunched
	return true
}

// SetUID records the UID of the claim's NodeClaim object.
func (t *Tracker) SetUID(name, uid string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.claims[name]; ok {
		c.UID = uid
	}
}

// Forget drops a claim (its launch failed, or its instance is gone).
func (t *Tracker) Forget(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.initLocked()
	delete(t.claims, name)
}

// Get returns a copy of the claim, or nil.
func (t *Tracker) Get(name string) *Claim {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.initLocked()
	if c, ok := t.claims[name]; ok {
		return copyClaim(c)
	}
	return nil
}

// ByNode returns a copy of the claim whose node has this name, or nil.
func (t *Tracker) ByNode(node string) *Claim {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.claims {
		if node != "" && c.Status.NodeName == node {
			return copyClaim(c)
		}
	}
	return nil
}

// ByProviderID returns a copy of the claim with this provider ID, or nil.
func (t *Tracker) ByProviderID(id string) *Claim {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.claims {
		if id != "" && c.Status.ProviderID == id {
			return copyClaim(c)
		}
	}
	return nil
}

// List returns copies of every claim, by name.
func (t *Tracker) List() []*Claim {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*Claim, 0, len(t.claims))
	for _, c := range t.claims {
		out = append(out, copyClaim(c))
	}
	slices.SortFunc(out, func(a, b *Claim) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// PodEvent records that a pod arrived on or left the node at now.
func (t *Tracker) PodEvent(node string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.claims {
		if node != "" && c.Status.NodeName == node && now.After(c.LastPodEvent) {
			c.LastPodEvent = now
		}
	}
}

// StartTermination moves the claim to PhaseTerminating with a reason. It reports false when
// the claim is unknown or already terminating, so a node is drained once.
func (t *Tracker) StartTermination(name, reason string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.claims[name]
	if !ok || c.Phase == PhaseTerminating {
		return false
	}
	c.Phase = PhaseTerminating
	c.Reason = reason
	return true
}

// Sync matches claims to Nodes by provider ID and advances them: launched → registered when
// the Node appears, registered → initialized when it is Ready without startup taints. It
// returns the effects due, in claim-name order: register and initialize syncs, and launch and
// registration timeouts. Claims it times out leave the table.
func (t *Tracker) Sync(nodes []*corev1.Node, now time.Time) []Action {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.initLocked()
	byID := nodesByProviderID(nodes)
	var acts []Action
	for _, name := range slices.Sorted(maps.Keys(t.claims)) {
		c := t.claims[name]
		switch c.Phase {
		case PhaseLaunching:
			// Create carries its own deadline; this is the backstop should a provider ignore
			// it. The instance, if one appears, is adopted or collected by Reconcile.
			limit := t.Timeouts.launch() + time.Minute
			if awaitingInstance(c) {
				// Restored from its object, or its Create failed without proof: no Create is
				// running; its instance, if the cloud made one, is bound by Reconcile. Wait
				// as long as for a registration.
				limit = t.Timeouts.registration()
			}
			if now.Sub(c.Created) > limit {
				delete(t.claims, name)
				t.abandoned[name] = now
				acts = append(acts, Action{Kind: ActLaunchTimeout, Claim: copyClaim(c)})
			}
			continue
		case PhaseTerminating:
			continue
		}
		n := byID[c.Status.ProviderID]
		if n == nil {
			if c.Status.NodeName != "" {
				// It had registered, and the Node is gone: someone deleted it.
				c.Phase = PhaseTerminating
				c.Reason = "NodeDeleted"
				acts = append(acts, Action{Kind: ActNodeGone, Claim: copyClaim(c), Node: c.Status.NodeName})
				continue
			}
			if now.Sub(launchTime(c)) > t.Timeouts.registration() {
				c.Phase = PhaseTerminating
				c.Reason = "RegistrationTimeout"
				acts = append(acts, Action{Kind: ActRegistrationTimeout, Claim: copyClaim(c)})
			}
			continue
		}
		if c.Phase == PhaseLaunched {
			c.Phase = PhaseRegistered
			c.Status.NodeName = n.Name
			acts = append(acts, Action{Kind: ActRegister, Claim: copyClaim(c), Node: n.Name})
		} else if c.Phase == PhaseRegistered && (n.Labels[nodeplan.LabelRegistered] != "true" || hasTaint(n, nodeplan.TaintUnregistered)) {
			acts = append(acts, Action{Kind: ActRegister, Claim: copyClaim(c), Node: n.Name, Repeat: true})
		}
		if c.Phase == PhaseRegistered && nodeInitialized(n, c) {
			c.Phase = PhaseInitialized
			c.Initialized = now
			if c.LastPodEvent.Before(now) {
				c.LastPodEvent = now
			}
			acts = append(acts, Action{Kind: ActInitialize, Claim: copyClaim(c), Node: n.Name})
		}
	}
	return acts
}

func launchTime(c *Claim) time.Time {
	if !c.Status.LaunchTime.IsZero() {
		return c.Status.LaunchTime
	}
	return c.Created
}

func hasTaint(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// nodeInitialized reports whether a registered node is ready for pods: Ready, with no startup
// taint and no unregistered taint left, and with allocatable cpu reported.
func nodeInitialized(n *corev1.Node, c *Claim) bool {
	if !nodeReady(n) {
		return false
	}
	for _, taint := range n.Spec.Taints {
		if taint.Key == nodeplan.TaintUnregistered {
			return false
		}
		for _, st := range c.StartupTaints {
			if taint.MatchTaint(&st) {
				return false
			}
		}
	}
	cpu, ok := n.Status.Allocatable[corev1.ResourceCPU]
	return ok && !cpu.IsZero()
}

// Reconcile compares the table with the cloud's instances (listed at listedAt) and the Nodes,
// and returns what to do about differences, in a stable order. It acts only on what the table
// proves is ours — its claims; an instance or a Node without a claim is never deleted:
//
//   - an instance no claim knows is bound to the claim named by its claim tag when that claim
//     was restored still launching ([Tracker.Load]): an earlier run created the object and
//     the instance but stopped before recording it (ActAdopt; its phase follows from its
//     Node), or when its Create failed without proof that nothing was launched
//     ([Tracker.LaunchUnknown]). An instance carrying the name of a claim that has another
//     instance, or that was given up before its instance was seen, is an orphan: ours, and of
//     no use (ActOrphan). Any other instance is reported once (ActStray) and left alone.
//   - a claim whose launch failed without proof is given up when MissedListings listings
//     begun after the failure, spanning Timeouts.Collect, show no instance with its name
//     (ActNoInstance).
//   - a claim whose instance is missing from MissedListings listings in a row spanning at least
//     Timeouts.Collect is given up (ActInstanceGone); its Node is deleted with it only when the
//     Node is not Ready (a Ready Node has a kubelet talking, whatever the listing says). A
//     claim launched after the listing began is not judged by it.
//   - a claim whose NodePool is not among pools for Timeouts.Collect is drained
//     (ActPoolGone). pools nil means the pool source failed: no claim is judged by its pool.
//
// It also fills in the price of claims restored from objects, which do not record it.
func (t *Tracker) Reconcile(instances []*nodeplan.NodeClaim, nodes []*corev1.Node, pools []string, listedAt, now time.Time) []Action {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.initLocked()
	byID := nodesByProviderID(nodes)
	known := map[string]*Claim{}
	for _, c := range t.claims {
		if c.Status.ProviderID != "" {
			known[c.Status.ProviderID] = c
		}
	}
	listed := map[string]bool{}
	var acts []Action
	for _, inst := range instances {
		id := inst.Status.ProviderID
		listed[id] = true
		if c := known[id]; c != nil {
			if c.Status.Price == 0 {
				c.Status.Price = inst.Status.Price // not recorded on the object
			}
			if c.Status.Capacity == nil {
				c.Status.Capacity = inst.Status.Capacity
			}
			continue
		}
		if c := t.claims[inst.Name]; inst.Name != "" && c != nil && awaitingInstance(c) {
			// Launched by an earlier run that stopped before it could record the instance.
			spec := c.NodeClaim
			c.NodeClaim.Status = inst.Status
			c.Labels = spec.Labels
			for k, v := range inst.Labels {
				if _, ok := c.Labels[k]; !ok {
					if c.Labels == nil {
						c.Labels = map[string]string{}
					}
					c.Labels[k] = v
				}
			}
			c.Phase = PhaseLaunched
			placeByNode(c, byID[id], now)
			known[id] = c
			delete(t.strays, id)
			acts = append(acts, Action{Kind: ActAdopt, Claim: copyClaim(c), Node: c.Status.NodeName})
			continue
		}
		if a, ok := t.orphanLocked(inst, byID[id], now); ok {
			if a.Kind != 0 {
				acts = append(acts, a)
			}
			continue
		}
		if !t.strays[id] {
			t.strays[id] = true
			acts = append(acts, Action{Kind: ActStray, ProviderID: id, Node: nodeName(byID[id])})
		}
	}
	for id := range t.strays {
		if !listed[id] {
			delete(t.strays, id)
		}
	}
	for id := range t.orphans {
		if !listed[id] {
			delete(t.orphans, id)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(t.claims)) {
		c := t.claims[name]
		if c.Phase == PhaseLaunching && !c.LaunchFailed.IsZero() {
			if a, ok := t.noInstanceLocked(c, listedAt, now); ok {
				acts = append(acts, a)
			}
			continue
		}
		if c.Phase == PhaseLaunching || listed[c.Status.ProviderID] || !launchTime(c).Before(listedAt) {
			delete(t.missing, name)
			continue
		}
		m, ok := t.missing[name]
		if !ok {
			m.since = listedAt
		}
		m.count++
		t.missing[name] = m
		if m.count < MissedListings || now.Sub(m.since) < t.Timeouts.collect() {
			continue
		}
		delete(t.claims, name)
		delete(t.missing, name)
		delete(t.poolGone, name)
		a := Action{Kind: ActInstanceGone, Claim: copyClaim(c)}
		if n := byID[c.Status.ProviderID]; n != nil && !nodeReady(n) {
			a.Node = n.Name
		}
		acts = append(acts, a)
	}
	for _, name := range slices.Sorted(maps.Keys(t.claims)) {
		c := t.claims[name]
		if pools == nil || c.Phase == PhaseLaunching || c.Phase == PhaseTerminating || slices.Contains(pools, c.NodePool) {
			delete(t.poolGone, name)
			continue
		}
		first, ok := t.poolGone[name]
		if !ok {
			t.poolGone[name] = now
			first = now
		}
		if now.Sub(first) >= t.Timeouts.collect() {
			acts = append(acts, Action{Kind: ActPoolGone, Claim: copyClaim(c), Node: c.Status.NodeName})
		}
	}
	for name := range t.missing {
		if t.claims[name] == nil {
			delete(t.missing, name)
		}
	}
	slices.SortStableFunc(acts, func(a, b Action) int { return cmp.Compare(a.Kind, b.Kind) })
	return acts
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodeName(n *corev1.Node) string {
	if n == nil {
		return ""
	}
	return n.Name
}

// nodesByProviderID indexes Nodes by provider ID, the key that ties a Node to its claim; Nodes
// without one (not yet initialized by their cloud) are left out.
func nodesByProviderID(nodes []*corev1.Node) map[string]*corev1.Node {
	byID := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		if n.Spec.ProviderID != "" {
			byID[n.Spec.ProviderID] = n
		}
	}
	return byID
}
