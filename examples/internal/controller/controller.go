package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/pricing"
	"github.com/nodeplan/nodeplan/scheduling"
)

// SolveFunc is the provisioning solver's signature: scheduling.Solve, or a stand-in in tests.
type SolveFunc func(context.Context, scheduling.Input) (scheduling.Result, error)

// Controller is a node autoscaler on client-go: it launches nodes for pending pods, tracks
// them until they are ready, removes or replaces nodes the planner picks, and reacts to cloud
// interruptions. Fields are configuration, read when Run starts; zero fields mean the defaults.
// A Controller runs once: call Run on a fresh value after it returns.
type Controller struct {
	// Client talks to the cluster. Required.
	Client kubernetes.Interface
	// Dynamic reads and writes the Karpenter objects (NodeClaims: the controller's record).
	// Required; simulations pass k8s.io/client-go/dynamic/fake with [ListKinds].
	Dynamic dynamic.Interface
	// Installation names this controller's installation on the NodeClaims it creates
	// (annotation nodeplan.io/installation); empty means "nodeplan". It acts only on the
	// NodeClaims that carry it.
	Installation string
	// Adopt takes over NodeClaims that do not carry this installation's annotation — those of
	// a Karpenter controller being replaced — and marks them as this installation's. Their
	// instances and Nodes are used as they are: nothing is relaunched.
	Adopt bool
	// Provider launches and deletes instances. Required.
	Provider cloudprovider.Provider
	// NodePools gives the NodePools to provision from. Required.
	NodePools NodePoolSource
	// Solve is the provisioning solver. Required (scheduling.Solve).
	Solve SolveFunc
	// Planner picks the nodes to disrupt; nil means disruption.Plan.
	Planner Planner
	// Clock is read for every decision and drives every wait; nil means the real clock.
	// Simulations pass a fake clock and advance it.
	Clock clock.WithTicker
	// Logger receives the operator-facing log lines; nil discards them.
	Logger *slog.Logger
	// Recorder records Kubernetes Events on pods and nodes; nil records none.
	Recorder record.EventRecorder
	// BootstrapTokens, when set, mints a kubeadm bootstrap token for each launch
	// (NodeClaim.BootstrapToken) and deletes it once the node registers; see bootstrap.go.
	BootstrapTokens *BootstrapTokens
	// Events, when set, receives a typed [Event] for each step operators follow (launches,
	// registrations, disruptions, deletions…), as the log lines tell them. It is called from
	// the controller's goroutines, synchronously: it must be quick and safe for concurrent use.
	Events func(Event)
	// Metrics, when set, is updated as the controller works.
	Metrics *Metrics
	// Health, when set, learns when the caches have synced (for /readyz).
	Health *Health
	// CostModel and NodeOverlays price every pool's instance types before each solve and each
	// disruption plan (pricing.Adjust): what the user really pays, then Karpenter's overlays.
	// Zero values change nothing.
	CostModel    *pricing.CostModel
	NodeOverlays []nodeplan.NodeOverlay
	// NodeCost is what a node costs beyond its instance's price (scheduling.NodeCost: $/h per
	// node, and per pool): weighed by every solve and disruption plan, and included in the
	// costs they log. The zero value adds nothing.
	NodeCost scheduling.NodeCost
	// NodeClass, when set, finds an EC2NodeClass by name (as the EC2 provider does). Before each
	// solve and each disruption plan, the EBS volumes of each pool's class
	// (spec.blockDeviceMappings; 20Gi gp3 when it has none) are priced with EBSPrices and added
	// to the pool's NodeCost. A pool whose class has a volume EBSPrices cannot price is left out
	// of the pass with an error naming the class and the mapping: it is never taken as free.
	// A pool whose class is not found is not priced: the provider cannot launch it either.
	NodeClass func(name string) (*ec2.NodeClass, bool)
	// EBSPrices price those volumes; the zero value is us-east-1's list prices
	// (pricing.USEast1EBS).
	EBSPrices pricing.EBSPrices
	// CapacityBuffers watches autoscaling.x-k8s.io/v1beta1 CapacityBuffers (their CRD must be
	// installed; [CRDs] includes it) and keeps their slots as spare room (buffers.go).
	CapacityBuffers bool
	// Preferences is how every solve, and the planner's simulations, treat soft constraints
	// (Karpenter's PREFERENCE_POLICY); empty means scheduling's default, CostAware.
	Preferences scheduling.PreferencePolicy
	// MinValues is what a claim short of its pool's minValues does (Karpenter's
	// MIN_VALUES_POLICY); empty means scheduling's default, Strict.
	MinValues scheduling.MinValuesPolicy
	// NoSpotToSpot forbids replacing a spot node by a spot node in consolidation
	// (disruption.Options.SpotFlexibility < 0): Karpenter's SpotToSpotConsolidation=false.
	NoSpotToSpot bool

	// Timeouts bound launch, registration and the life of unattributed instances.
	Timeouts Timeouts
	// BatchIdle and BatchMax shape provisioning batches: a batch closes once no pending pod
	// has appeared for BatchIdle, or BatchMax after it opened. Zero means 1s and 10s.
	BatchIdle, BatchMax time.Duration
	// LaunchConcurrency bounds Provider.Create calls in flight; zero means 8.
	LaunchConcurrency int
	// DisruptionInterval is how often the planner runs; zero means 10s.
	DisruptionInterval time.Duration
	// InterruptionInterval is how often the provider's interruption source is polled; zero
	// means 2s.
	InterruptionInterval time.Duration
	// ReconcileInterval is how often the claims are compared with Provider.List; zero means
	// 30s.
	ReconcileInterval time.Duration
	// ReplacementTimeout bounds the wait for a command's replacements to initialize; zero
	// means 10 minutes. On timeout the command is abandoned and its nodes left alone.
	ReplacementTimeout time.Duration
	// EvictionRetry is the wait between eviction attempts refused by a PDB (HTTP 429); zero
	// means 5s.
	EvictionRetry time.Duration
	// Tick is the period of the main loop; zero means 100ms.
	Tick time.Duration
	// Seed makes claim names reproducible; zero means random.
	Seed uint64

	tracker  Tracker
	launches chan struct{} // semaphore
	batch    batcher
	wg       sync.WaitGroup

	mu        sync.Mutex
	rnd       *rand.Rand
	nominated map[string]time.Time // node or claim name → nominated until
	busy      map[string]bool      // nodes being terminated, commands in flight by node
	drifted   map[string]string    // claim name → "Reason: message" of its drift
	// consolidatable holds the claims whose Consolidatable condition is True.
	consolidatable map[string]bool
	// disrupting holds, by claim name, the reason of the command the claim is a candidate of
	// while the command runs (the DisruptionReason condition).
	disrupting map[string]string
	// staticReplacing maps a static pool's drifted claim to its replacement (static.go).
	staticReplacing map[string]string
	// interruptions are disruptive events received, by provider ID, until the claim is gone.
	interruptions map[string]cloudprovider.Interruption
	disruptNow    atomic.Bool       // an interruption wants a planning pass now
	lastBlock     map[string]string // node → last DisruptionBlocked message (dedupe)
	// startingPods holds the keys (startingKey) of pods seen Pending, until they are ready (their start-up
	// time is observed then), terminal or gone.
	startingPods sync.Map

	pods       cache.SharedIndexInformer
	podLister  cache.Indexer
	nodeLister cache.Indexer
	pdbLister  cache.Indexer
	dsLister   cache.Indexer
	nsLister   cache.Indexer
	// claimLister caches the NodeClaim objects.
	claimLister cache.Indexer
	// buffers are the CapacityBuffer caches; nil unless CapacityBuffers.
	buffers *bufferInformers
	// The storage the solver's volume topology needs.
	pvcLister, pvLister, scLister, csiNodeLister cache.Indexer
}

const podNodeIndex = "spec.nodeName"

// Tracker returns the controller's claim table, for inspection.
func (c *Controller) Tracker() *Tracker { return &c.tracker }

func (c *Controller) log() *slog.Logger {
	if c.Logger != nil {
		return slog.New(controllerHandler{Handler: c.Logger.Handler()})
	}
	return slog.New(slog.DiscardHandler)
}

func (c *Controller) clock() clock.WithTicker {
	if c.Clock != nil {
		return c.Clock
	}
	return clock.RealClock{}
}

func (c *Controller) now() time.Time { return c.clock().Now() }

// sleep waits d on the controller's clock, or until ctx is done.
func (c *Controller) sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-c.clock().After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Controller) event(obj runtime.Object, typ, reason, format string, args ...any) {
	if c.Recorder == nil || obj == nil || reflect.ValueOf(obj).IsNil() {
		return
	}
	c.Recorder.Eventf(obj, typ, reason, format, args...)
}

// Validate reports every missing required field at once.
func (c *Controller) Validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("controller: Client is required"))
	}
	if c.Dynamic == nil {
		errs = append(errs, errors.New("controller: Dynamic is required (the NodeClaims are the record)"))
	}
	if c.Provider == nil {
		errs = append(errs, errors.New("controller: Provider is required"))
	}
	if c.NodePools == nil {
		errs = append(errs, errors.New("controller: NodePools is required"))
	}
	if c.Solve == nil {
		errs = append(errs, errors.New("controller: Solve is required"))
	}
	return errors.Join(errs...)
}

// Run starts the informers, rebuilds the claim table from the cloud and the Nodes, and runs the
// loops until ctx is done. It returns after every goroutine it started has stopped; a launch
// in flight is given its own deadline, not ctx, so that a stop does not orphan an instance the
// cloud is about to return.
func (c *Controller) Run(ctx context.Context) error {
	if err := c.Validate(); err != nil {
		return err
	}
	c.tracker.Timeouts = c.Timeouts
	c.Provider = c.Metrics.InstrumentProvider(c.Provider) // metrics.go: karpenter_cloudprovider_* series
	c.tracker.Installation = c.installation()
	concurrency := c.LaunchConcurrency
	if concurrency <= 0 {
		concurrency = 8
	}
	c.launches = make(chan struct{}, concurrency)
	c.nominated = map[string]time.Time{}
	c.busy = map[string]bool{}
	c.drifted = map[string]string{}
	c.consolidatable = map[string]bool{}
	c.staticReplacing = map[string]string{}
	c.disrupting = map[string]string{}
	c.interruptions = map[string]cloudprovider.Interruption{}
	c.lastBlock = map[string]string{}
	seed := c.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	c.rnd = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	c.batch = batcher{idle: orDefault(c.BatchIdle, time.Second), max: orDefault(c.BatchMax, 10*time.Second)}

	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		c.wg.Wait()
	}()

	factory := informers.NewSharedInformerFactory(c.Client, 0)
	c.pods = factory.Core().V1().Pods().Informer()
	if err := c.pods.AddIndexers(cache.Indexers{podNodeIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return fmt.Errorf("controller: pod index: %w", err)
	}
	c.podLister = c.pods.GetIndexer()
	nodes := factory.Core().V1().Nodes().Informer()
	c.nodeLister = nodes.GetIndexer()
	c.pdbLister = factory.Policy().V1().PodDisruptionBudgets().Informer().GetIndexer()
	c.dsLister = factory.Apps().V1().DaemonSets().Informer().GetIndexer()
	c.nsLister = factory.Core().V1().Namespaces().Informer().GetIndexer()
	c.pvcLister = factory.Core().V1().PersistentVolumeClaims().Informer().GetIndexer()
	c.pvLister = factory.Core().V1().PersistentVolumes().Informer().GetIndexer()
	c.scLister = factory.Storage().V1().StorageClasses().Informer().GetIndexer()
	c.csiNodeLister = factory.Storage().V1().CSINodes().Informer().GetIndexer()
	if _, err := c.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.onPod(nil, obj) },
		UpdateFunc: func(old, obj any) { c.onPod(old, obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				c.startingPods.Delete(startingKey(p))
				if p.Spec.NodeName != "" {
					c.tracker.PodEvent(p.Spec.NodeName, c.now())
				}
			}
		},
	}); err != nil {
		return fmt.Errorf("controller: pod handler: %w", err)
	}
	dfactory := dynamicinformer.NewDynamicSharedInformerFactory(c.Dynamic, 0)
	c.claimLister = dfactory.ForResource(NodeClaimGVR).Informer().GetIndexer()
	if c.CapacityBuffers {
		c.buffers = &bufferInformers{
			buffers:      dfactory.ForResource(CapacityBufferGVR).Informer().GetIndexer(),
			podTemplates: factory.Core().V1().PodTemplates().Informer().GetIndexer(),
			deployments:  factory.Apps().V1().Deployments().Informer().GetIndexer(),
			replicaSets:  factory.Apps().V1().ReplicaSets().Informer().GetIndexer(),
			statefulSets: factory.Apps().V1().StatefulSets().Informer().GetIndexer(),
		}
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	dfactory.Start(ctx.Done())
	defer dfactory.Shutdown()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("controller: %v informer did not sync", typ)
		}
	}
	for gvr, ok := range dfactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("controller: %v informer did not sync (are Karpenter's CRDs installed?)", gvr.Resource)
		}
	}
	if src, ok := c.NodePools.(interface{ Start(context.Context) error }); ok {
		if err := src.Start(ctx); err != nil {
			return fmt.Errorf("controller: node pools: %w", err)
		}
	}

	if err := c.rebuild(ctx); err != nil {
		return err
	}
	if _, err := c.NodePools.NodePools(); err != nil {
		c.log().Error("nodepools unavailable: not provisioning or disrupting until they are", "err", err)
	}
	c.log().Info("controller started", "nodepools", len(c.poolNames()), "claims", len(c.tracker.List()))
	c.emit(Event{Kind: EventStarted, Count: len(c.tracker.List()), Pools: len(c.poolNames())})
	c.Health.setSynced(true)
	defer c.Health.setSynced(false)

	ticker := c.clock().NewTicker(orDefault(c.Tick, 100*time.Millisecond))
	defer ticker.Stop()
	next := map[string]time.Time{}
	due := func(name string, every time.Duration, now time.Time) bool {
		if now.Before(next[name]) {
			return false
		}
		next[name] = now.Add(every)
		return true
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
		now := c.now()
		c.syncClaims(ctx, now)
		if due("reconcile", orDefault(c.ReconcileInterval, 30*time.Second), now) {
			c.reconcile(ctx)
		}
		if due("poolstatus", poolStatusInterval, now) {
			c.updatePoolStatus(ctx)
			c.updateClassStatus(ctx)
		}
		if due("resolve", resolveInterval, now) && c.anyProvisionable() {
			// A safety net: pods left pending (a failed launch, a pool without instance types
			// a moment ago) are solved again even if no new pod event arrives.
			c.batch.trigger(now)
		}
		c.provisionInBackground(ctx, now)
		if due("static", staticInterval, now) {
			c.staticPass(ctx)
		}
		if due("buffers", bufferInterval, now) {
			c.buffersPass(ctx, now)
		}
		if due("interruptions", orDefault(c.InterruptionInterval, 2*time.Second), now) {
			c.pollInterruptions(ctx)
		}
		if due("disruption", orDefault(c.DisruptionInterval, 10*time.Second), now) || c.disruptNow.Load() {
			if c.disrupt(ctx) {
				c.disruptNow.Store(false)
			}
		}
		c.updateGauges()
	}
}

// onPod notes pod events: a pod becoming pending, or a pending pod the scheduler has tried
// again, opens or extends a provisioning batch; a pod arriving on or leaving a node restarts
// that node's consolidateAfter.
func (c *Controller) onPod(old, obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := c.now()
	c.podStartup(p)
	if provisionable(p) {
		var was *corev1.Pod
		if old != nil {
			was, _ = old.(*corev1.Pod)
		}
		// A pod that was already pending opens a batch too when the scheduler has tried it
		// again (its PodScheduled condition changed: new nodes came, and it fits none of
		// them). Nodes launched for a batch are filled by the scheduler in its own order, not
		// the plan's, and leave a few pods over; waiting for the safety net held those 30s.
		if was == nil || !provisionable(was) || scheduledCondition(was) != scheduledCondition(p) {
			c.batch.trigger(now)
		}
	}
	if old == nil {
		if p.Spec.NodeName != "" {
			c.tracker.PodEvent(p.Spec.NodeName, now)
		}
		return
	}
	if o, ok := old.(*corev1.Pod); ok {
		if o.Spec.NodeName != p.Spec.NodeName || (o.DeletionTimestamp == nil) != (p.DeletionTimestamp == nil) ||
			nodeplan.PodTerminal(o) != nodeplan.PodTerminal(p) {
			c.tracker.PodEvent(p.Spec.NodeName, now)
		}
	}
}

// scheduledCondition is the pod's PodScheduled condition, or the zero condition.
func scheduledCondition(p *corev1.Pod) corev1.PodCondition {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled {
			return cond
		}
	}
	return corev1.PodCondition{}
}

// resolveInterval is how often pending pods are solved again without a new pod event.
const resolveInterval = 30 * time.Second

func (c *Controller) anyProvisionable() bool {
	for _, o := range c.podLister.List() {
		if provisionable(o.(*corev1.Pod)) {
			return true
		}
	}
	return false
}

// provisionable reports whether a pod waits for a node: unbound, not being deleted, and
// marked unschedulable by the scheduler (so pods the scheduler has not looked at yet, and
// pods it can place, never cause a launch).
func provisionable(p *corev1.Pod) bool {
	if p.Spec.NodeName != "" || p.DeletionTimestamp != nil || nodeplan.PodTerminal(p) || nodeplan.DaemonSetOf(p) != "" {
		return false
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// snapshot is one consistent-enough read of the informer caches.
type snapshot struct {
	pods       []*corev1.Pod
	nodes      []*corev1.Node
	podsByNode map[string][]*corev1.Pod
	pdbs       []*policyv1.PodDisruptionBudget
	daemonSets []*appsv1.DaemonSet
	namespaces []*corev1.Namespace
	volumes    scheduling.Volumes
}

func (c *Controller) snapshot() snapshot {
	s := snapshot{podsByNode: map[string][]*corev1.Pod{}}
	for _, o := range c.podLister.List() {
		p := o.(*corev1.Pod)
		s.pods = append(s.pods, p)
		if p.Spec.NodeName != "" && !nodeplan.PodTerminal(p) {
			s.podsByNode[p.Spec.NodeName] = append(s.podsByNode[p.Spec.NodeName], p)
		}
	}
	for _, o := range c.nodeLister.List() {
		s.nodes = append(s.nodes, o.(*corev1.Node))
	}
	for _, o := range c.pdbLister.List() {
		s.pdbs = append(s.pdbs, o.(*policyv1.PodDisruptionBudget))
	}
	for _, o := range c.dsLister.List() {
		s.daemonSets = append(s.daemonSets, o.(*appsv1.DaemonSet))
	}
	for _, o := range c.nsLister.List() {
		s.namespaces = append(s.namespaces, o.(*corev1.Namespace))
	}
	for _, o := range c.pvcLister.List() {
		s.volumes.PersistentVolumeClaims = append(s.volumes.PersistentVolumeClaims, o.(*corev1.PersistentVolumeClaim))
	}
	for _, o := range c.pvLister.List() {
		s.volumes.PersistentVolumes = append(s.volumes.PersistentVolumes, o.(*corev1.PersistentVolume))
	}
	for _, o := range c.scLister.List() {
		s.volumes.StorageClasses = append(s.volumes.StorageClasses, o.(*storagev1.StorageClass))
	}
	for _, o := range c.csiNodeLister.List() {
		s.volumes.CSINodes = append(s.volumes.CSINodes, o.(*storagev1.CSINode))
	}
	sortByName(s.pods)
	sortByName(s.nodes)
	return s
}

func (c *Controller) nodes() []*corev1.Node {
	var out []*corev1.Node
	for _, o := range c.nodeLister.List() {
		out = append(out, o.(*corev1.Node))
	}
	return out
}

func (c *Controller) node(name string) *corev1.Node {
	o, ok, _ := c.nodeLister.GetByKey(name)
	if !ok {
		return nil
	}
	return o.(*corev1.Node)
}

func (c *Controller) podsOn(node string) []*corev1.Pod {
	objs, _ := c.podLister.ByIndex(podNodeIndex, node)
	var out []*corev1.Pod
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if !nodeplan.PodTerminal(p) {
			out = append(out, p)
		}
	}
	sortByName(out)
	return out
}

// poolNames returns the NodePools' names, or nil when the source cannot say. A source that
// knows NodePool objects beyond the valid ones ([ClusterNodePools.Known]) names those too: a
// pool whose edit did not validate still exists, and its nodes are not those of a deleted
// pool (Karpenter stops provisioning for it and leaves its nodes be).
func (c *Controller) poolNames() []string {
	pools, err := c.NodePools.NodePools()
	if k, ok := c.NodePools.(interface{ Known() ([]string, bool) }); ok {
		// None at all is judged as the source failing, as an empty list is everywhere.
		if names, ok := k.Known(); ok && len(names) > 0 {
			return names
		}
	}
	if err != nil {
		return nil
	}
	out := []string{}
	for _, p := range pools {
		out = append(out, p.Name)
	}
	return out
}

func (c *Controller) pool(name string) (nodeplan.NodePool, bool) {
	pools, _ := c.NodePools.NodePools()
	for _, p := range pools {
		if p.Name == name {
			return p, true
		}
	}
	return nodeplan.NodePool{}, false
}

func selectorMatches(sel map[string]string, l map[string]string) bool {
	return labels.SelectorFromSet(sel).Matches(labels.Set(l))
}

// podStartup observes karpenter_pods_startup_duration_seconds as Karpenter does: a pod seen
// Pending is remembered, and once it is ready the time from its creation to its Ready
// condition is observed; a terminal pod is forgotten.
func (c *Controller) podStartup(p *corev1.Pod) {
	if c.Metrics == nil {
		return
	}
	if p.Status.Phase == corev1.PodPending {
		c.startingPods.Store(startingKey(p), true)
		return
	}
	if _, seen := c.startingPods.Load(startingKey(p)); !seen {
		return
	}
	if ready, at := podReady(p); ready {
		c.Metrics.PodStarted(at.Sub(p.CreationTimestamp.Time).Seconds())
		c.startingPods.Delete(startingKey(p))
	} else if nodeplan.PodTerminal(p) {
		c.startingPods.Delete(startingKey(p))
	}
}

// startingKey identifies a pod in startingPods: its namespace/name and UID (a pod re-created
// under the same name is another pod).
func startingKey(p *corev1.Pod) string { return nodeplan.PodKey(p) + "/" + string(p.UID) }

// podReady reports whether p's Ready condition is True, and since when.
func podReady(p *corev1.Pod) (bool, time.Time) {
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue, cond.LastTransitionTime.Time
		}
	}
	return false, time.Time{}
}
