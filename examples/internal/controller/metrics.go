package controller

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/disruption"
	"github.com/nodeplan/nodeplan/scheduling"
)

// Metrics are the controller's Prometheus metrics, on a registry of their own.
//
// Every series Karpenter v1.14 exposes that this controller can produce carries Karpenter's
// name, type and labels (karpenter_nodeclaims_created_total{nodepool,reason,min_values_relaxed},
// karpenter_nodes_allocatable{node_name,nodepool,resource_type,…}, …), so dashboards, alerts and
// recording rules written for Karpenter work unchanged. nodeplan's own figures — the fleet's
// $/h, the solver's lower bound, the savings of disruption commands, pods left unplaced by
// reason — are under nodeplan_. [KarpenterSeries] lists the Karpenter names served.
type Metrics struct {
	Registry *prometheus.Registry

	// Karpenter's counters and histograms, updated as the controller works.
	nodeClaimsCreated    *prometheus.CounterVec // reason, nodepool, min_values_relaxed
	nodeClaimsTerminated *prometheus.CounterVec // nodepool, capacity_type, zone
	nodeClaimsDisrupted  *prometheus.CounterVec // reason, nodepool, capacity_type
	nodesCreated         *prometheus.CounterVec // nodepool, zone
	nodesTerminated      *prometheus.CounterVec // nodepool, zone
	decisions            *prometheus.CounterVec // decision, reason, consolidation_type
	decisionsByPool      *prometheus.CounterVec // nodepool, decision, reason, consolidation_type
	schedulingDuration   *prometheus.HistogramVec
	evaluationDuration   *prometheus.HistogramVec
	cloudErrors          *prometheus.CounterVec // controller, method, provider, error
	cloudDuration        *prometheus.HistogramVec

	// nodeplan's own.
	claimsLaunched *prometheus.CounterVec
	unplaced       *prometheus.GaugeVec
	lowerBound     prometheus.Gauge
	plannedCost    prometheus.Gauge
	savings        *prometheus.CounterVec

	// ops are the series of metrics_ops.go.
	ops *opsMetrics

	// PodsPending is the number of provisionable pods at the last batch.
	PodsPending prometheus.Gauge
	// SolveDuration times the provisioning solver (Karpenter's
	// karpenter_scheduler_scheduling_duration_seconds{controller="provisioner"}); PlanDuration
	// times the disruption planner (nodeplan_plan_duration_seconds).
	SolveDuration, PlanDuration prometheus.Observer

	// state is the controller whose claims, nodes, pods and pools the gauges are read from at
	// scrape time (Karpenter refreshes its gauges every few seconds; reading at scrape time is
	// never stale and costs nothing between scrapes).
	state          atomic.Pointer[Controller]
	lowerBoundBits atomic.Uint64 // the last lower bound, for the fleet/bound ratio
	collectors     []prometheus.Collector
}

// Series names: Karpenter builds them from the namespace "karpenter", a subsystem and a name.
const (
	metricNodeClaimsCreated    = "karpenter_nodeclaims_created_total"
	metricNodeClaimsTerminated = "karpenter_nodeclaims_terminated_total"
	metricNodeClaimsDisrupted  = "karpenter_nodeclaims_disrupted_total"
	metricNodesCreated         = "karpenter_nodes_created_total"
	metricNodesTerminated      = "karpenter_nodes_terminated_total"
	metricNodesAllocatable     = "karpenter_nodes_allocatable"
	metricNodesPodRequests     = "karpenter_nodes_total_pod_requests"
	metricNodesPodLimits       = "karpenter_nodes_total_pod_limits"
	metricNodesDaemonRequests  = "karpenter_nodes_total_daemon_requests"
	metricNodesDaemonLimits    = "karpenter_nodes_total_daemon_limits"
	metricNodesSystemOverhead  = "karpenter_nodes_system_overhead"
	metricNodePoolsUsage       = "karpenter_nodepools_usage"
	metricNodePoolsLimit       = "karpenter_nodepools_limit"
	metricPodsState            = "karpenter_pods_state"
	metricDecisions            = "karpenter_voluntary_disruption_decisions_total"
	metricDecisionsByPool      = "karpenter_voluntary_disruption_decisions_by_nodepool_total"
	metricEvaluationDuration   = "karpenter_voluntary_disruption_decision_evaluation_duration_seconds"
	metricSchedulingDuration   = "karpenter_scheduler_scheduling_duration_seconds"
	metricCloudErrors          = "karpenter_cloudprovider_errors_total"
	metricCloudDuration        = "karpenter_cloudprovider_duration_seconds"
	metricClusterStateNodes    = "karpenter_cluster_state_node_count"
	metricClusterStateSynced   = "karpenter_cluster_state_synced"
	metricBuildInfo            = "karpenter_build_info"
)

// KarpenterSeries are the Karpenter v1.14 series this controller serves, with their labels.
// The README's table and the dashboard test are checked against it.
var KarpenterSeries = map[string][]string{
	metricNodeClaimsCreated:    {"reason", "nodepool", "min_values_relaxed"},
	metricNodeClaimsTerminated: {"nodepool", "capacity_type", "zone"},
	metricNodeClaimsDisrupted:  {"reason", "nodepool", "capacity_type"},
	metricNodesCreated:         {"nodepool", "zone"},
	metricNodesTerminated:      {"nodepool", "zone"},
	metricNodesAllocatable:     nodeLabelNames,
	metricNodesPodRequests:     nodeLabelNames,
	metricNodesPodLimits:       nodeLabelNames,
	metricNodesDaemonRequests:  nodeLabelNames,
	metricNodesDaemonLimits:    nodeLabelNames,
	metricNodesSystemOverhead:  nodeLabelNames,
	metricNodePoolsUsage:       {"resource_type", "nodepool"},
	metricNodePoolsLimit:       {"resource_type", "nodepool"},
	metricPodsState:            podStateLabelNames,
	metricDecisions:            {"decision", "reason", "consolidation_type"},
	metricDecisionsByPool:      {"nodepool", "decision", "reason", "consolidation_type"},
	metricEvaluationDuration:   {"reason", "consolidation_type"},
	metricSchedulingDuration:   {"controller"},
	metricCloudErrors:          {"controller", "method", "provider", "error"},
	metricCloudDuration:        {"controller", "method", "provider"},
	metricClusterStateNodes:    nil,
	metricClusterStateSynced:   nil,
	metricBuildInfo:            {"version", "goversion", "goarch", "commit"},
}

// nodeLabelNames are the labels of Karpenter's per-node gauges: the suffix of each well-known
// node label (after the "/", "-" as "_"), then node_name, phase, managed and resource_type.
var nodeLabelNames = []string{"nodepool", "zone", "region", "instance_type", "arch", "os", "capacity_type",
	"node_name", "phase", "managed", "resource_type"}

// wellKnownNodeLabels are the node labels behind nodeLabelNames' first seven names.
var wellKnownNodeLabels = []string{nodeplan.LabelNodePool, corev1.LabelTopologyZone, corev1.LabelTopologyRegion,
	corev1.LabelInstanceTypeStable, corev1.LabelArchStable, corev1.LabelOSStable, nodeplan.LabelCapacityType}

var podStateLabelNames = []string{"name", "namespace", "owner", "node", "scheduled", "nodepool", "zone", "arch",
	"capacity_type", "instance_type", "phase", "ready", "managed"}

var (
	descs = map[string]*prometheus.Desc{}
	// Help texts paraphrase what each Karpenter series counts.
	stateHelp = map[string]string{
		metricNodesAllocatable:    "Allocatable resources of each node, by resource type.",
		metricNodesPodRequests:    "Requests of the non-DaemonSet pods bound to each node, by resource type.",
		metricNodesPodLimits:      "Limits of the non-DaemonSet pods bound to each node, by resource type.",
		metricNodesDaemonRequests: "Requests of the DaemonSet pods bound to each node, by resource type.",
		metricNodesDaemonLimits:   "Limits of the DaemonSet pods bound to each node, by resource type.",
		metricNodesSystemOverhead: "Capacity minus allocatable of each node (reserved for the system), by resource type.",
		metricNodePoolsUsage:      "Resources of the nodes of each NodePool (its status.resources), by resource type.",
		metricNodePoolsLimit:      "Limits of each NodePool (spec.limits), by resource type.",
		metricPodsState:           "One series per pod, valued 1, labelled with where it runs and its state.",
		metricClusterStateNodes:   "Nodes the controller's cluster state holds.",
		metricClusterStateSynced:  "1 once the controller's caches have synced, else 0.",
	}
	descFleetCost    = prometheus.NewDesc("nodeplan_fleet_cost_dollars_per_hour", "Price of every launched NodeClaim, USD per hour.", nil, nil)
	descClaimsPhase  = prometheus.NewDesc("nodeplan_nodeclaims", "NodeClaims by nodepool and phase.", []string{"nodepool", "phase"}, nil)
	descPoolCost     = prometheus.NewDesc("nodeplan_nodepool_cost_dollars_per_hour", "Price of each NodePool's launched NodeClaims, USD per hour.", []string{"nodepool"}, nil)
	descFleetVsBound = prometheus.NewDesc("nodeplan_fleet_cost_over_lower_bound_ratio", "Fleet $/h over the last provisioning solve's lower bound for the pods it placed (1 = provably cheapest).", nil, nil)
)

func init() {
	for name, help := range stateHelp {
		descs[name] = prometheus.NewDesc(name, help, KarpenterSeries[name], nil)
	}
}

// NewMetrics returns metrics registered on a fresh registry, with the Go and process
// collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		nodeClaimsCreated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricNodeClaimsCreated,
			Help: "NodeClaims created, by reason (provisioned, or the disruption reason of a replacement) and nodepool."},
			KarpenterSeries[metricNodeClaimsCreated]),
		nodeClaimsTerminated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricNodeClaimsTerminated,
			Help: "NodeClaims whose instance is gone and whose record was removed, by nodepool, capacity type and zone."},
			KarpenterSeries[metricNodeClaimsTerminated]),
		nodeClaimsDisrupted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricNodeClaimsDisrupted,
			Help: "NodeClaims disrupted, by reason (underutilized, empty, drifted, expired, spot_interrupted, scheduled_change, instance_stopped, instance_terminated, insufficient_capacity, launch_timeout, registration_timeout, garbage_collected), nodepool and capacity type."},
			KarpenterSeries[metricNodeClaimsDisrupted]),
		nodesCreated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricNodesCreated,
			Help: "Nodes registered for a NodeClaim, by nodepool and zone."}, KarpenterSeries[metricNodesCreated]),
		nodesTerminated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricNodesTerminated,
			Help: "Nodes removed with their NodeClaim, by nodepool and zone."}, KarpenterSeries[metricNodesTerminated]),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricDecisions,
			Help: "Disruption commands started, by decision (delete, replace), reason and consolidation type."},
			KarpenterSeries[metricDecisions]),
		decisionsByPool: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricDecisionsByPool,
			Help: "Disruption commands started, by nodepool, decision, reason and consolidation type."},
			KarpenterSeries[metricDecisionsByPool]),
		schedulingDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricSchedulingDuration,
			Help: "Time to compute a provisioning decision for a batch of pending pods.", Buckets: durationBuckets},
			KarpenterSeries[metricSchedulingDuration]),
		evaluationDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricEvaluationDuration,
			Help: "Time to evaluate the disruption candidates.", Buckets: durationBuckets},
			KarpenterSeries[metricEvaluationDuration]),
		cloudErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricCloudErrors,
			Help: "Cloud provider calls that failed, by controller, method, provider and error kind."},
			KarpenterSeries[metricCloudErrors]),
		cloudDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricCloudDuration,
			Help: "Duration of cloud provider calls.", Buckets: durationBuckets}, KarpenterSeries[metricCloudDuration]),

		claimsLaunched: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nodeplan_nodeclaims_launched_total",
			Help: "Instances launched for NodeClaims, by nodepool and capacity type."}, []string{"nodepool", "capacity_type"}),
		unplaced: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nodeplan_pods_unplaced",
			Help: "Pending pods the last provisioning solve could not place, by reason code."}, []string{"reason"}),
		lowerBound: prometheus.NewGauge(prometheus.GaugeOpts{Name: "nodeplan_provisioning_lower_bound_dollars_per_hour",
			Help: "The last provisioning solve's lower bound on the $/h of any fleet placing its pods."}),
		plannedCost: prometheus.NewGauge(prometheus.GaugeOpts{Name: "nodeplan_provisioning_cost_dollars_per_hour",
			Help: "$/h of the NodeClaims the last provisioning solve chose."}),
		savings: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nodeplan_disruption_savings_dollars_per_hour_total",
			Help: "Sum of the $/h saved by the disruption commands started (price before minus after), by nodepool and reason."},
			[]string{"nodepool", "reason"}),
		PodsPending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nodeplan_pods_pending", Help: "Provisionable (unschedulable, unbound) pods at the last batch."}),
	}
	m.SolveDuration = m.schedulingDuration.WithLabelValues("provisioner")
	plan := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "nodeplan_plan_duration_seconds", Help: "Time spent in the disruption planner.", Buckets: durationBuckets})
	// The planner evaluates every disruption method in one pass: its time is also Karpenter's
	// evaluation duration, under reason and consolidation_type "all".
	m.PlanDuration = observers{plan, m.evaluationDuration.WithLabelValues("all", "all")}
	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricBuildInfo,
		Help: "Always 1, labelled with the build."}, KarpenterSeries[metricBuildInfo])
	buildInfo.WithLabelValues(buildLabels()...).Set(1)
	m.ops = newOpsMetrics()
	m.collectors = []prometheus.Collector{m.nodeClaimsCreated, m.nodeClaimsTerminated, m.nodeClaimsDisrupted, m.nodesCreated,
		m.nodesTerminated, m.decisions, m.decisionsByPool, m.schedulingDuration, m.evaluationDuration, m.cloudErrors,
		m.cloudDuration, m.claimsLaunched, m.unplaced, m.lowerBound, m.plannedCost, m.savings, m.PodsPending, plan,
		buildInfo, stateCollector{m}}
	m.collectors = append(m.collectors, m.ops.collectors()...)
	m.Registry.MustRegister(m.collectors...)
	m.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// durationBuckets span 0.5 ms to about 2 minutes, ×4.
var durationBuckets = prometheus.ExponentialBuckets(0.0005, 4, 10)

// Handler serves the metrics in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// FleetCost returns the $/h of every launched claim in the table.
func (t *Tracker) FleetCost() float64 {
	var sum float64
	for _, c := range t.List() {
		sum += c.Status.Price
	}
	return sum
}

// updateGauges is called every pass of the main loop: it points the scrape-time collector at
// this controller.
func (c *Controller) updateGauges() {
	if c.Metrics == nil {
		return
	}
	c.Metrics.state.CompareAndSwap(nil, c)
}

// createdReason is karpenter_nodeclaims_created_total's reason: "provisioned" for pending
// pods, the lower-cased disruption reason for a replacement. An interrupted node's
// replacement is "provisioned": Karpenter launches it for the pods the interruption leaves
// pending, not as a disruption command's replacement.
func createdReason(why string) string {
	if why == "provisioning" || strings.HasPrefix(why, string(nodeplan.ReasonInterrupted)+" ") {
		return "provisioned"
	}
	if r, _, ok := strings.Cut(why, " "); ok && r != "replacement" {
		return strings.ToLower(r)
	}
	return "replacement"
}

// replacementWhy is what a replacement is launched "for": its reason, then the nodes replaced.
func replacementWhy(cmd disruption.Command) string {
	return string(cmd.Reason) + " replacement of " + describeNodes(cmd.Nodes)
}

// NodeClaimCreated counts a claim made for pool; why is "provisioning" or replacementWhy's text.
func (m *Metrics) NodeClaimCreated(pool, why string) {
	if m == nil {
		return
	}
	m.nodeClaimsCreated.WithLabelValues(createdReason(why), pool, "false").Inc()
}

// NodeClaimLaunched counts an instance launched for cl.
func (m *Metrics) NodeClaimLaunched(cl *nodeplan.NodeClaim) {
	if m == nil {
		return
	}
	m.claimsLaunched.WithLabelValues(cl.NodePool, string(cl.Status.CapacityType)).Inc()
}

// NodeClaimDisrupted counts cl disrupted for reason (a disruption reason such as Underutilized,
// or insufficient_capacity, launch_timeout, registration_timeout, garbage_collected), which is
// lower-cased as Karpenter's label is.
func (m *Metrics) NodeClaimDisrupted(cl *nodeplan.NodeClaim, reason string) {
	if m == nil {
		return
	}
	m.nodeClaimsDisrupted.WithLabelValues(strings.ToLower(reason), cl.NodePool, string(cl.Status.CapacityType)).Inc()
}

// NodeClaimTerminated counts cl removed for good, and its node with it if it had one.
func (m *Metrics) NodeClaimTerminated(cl *nodeplan.NodeClaim) {
	if m == nil {
		return
	}
	m.nodeClaimsTerminated.WithLabelValues(cl.NodePool, string(cl.Status.CapacityType), cl.Status.Zone).Inc()
	if cl.Status.NodeName != "" {
		m.nodesTerminated.WithLabelValues(cl.NodePool, cl.Status.Zone).Inc()
	}
}

// NodeRegistered counts cl's node registering.
func (m *Metrics) NodeRegistered(cl *nodeplan.NodeClaim) {
	if m == nil {
		return
	}
	m.nodesCreated.WithLabelValues(cl.NodePool, cl.Status.Zone).Inc()
}

// consolidationType is Karpenter's consolidation_type label: empty, single or multi for
// consolidation, "" for the other reasons.
func consolidationType(cmd disruption.Command) string {
	switch cmd.Reason {
	case nodeplan.ReasonEmpty:
		return "empty"
	case nodeplan.ReasonUnderutilized:
		if len(cmd.Nodes) > 1 {
			return "multi"
		}
		return "single"
	}
	return ""
}

// DisruptionDecision counts a command started by decision, reason and consolidation type, in
// total and per nodepool, when it is voluntary (Karpenter counts no interruption or
// expiration there), and adds its savings ($/h, the replacements at their planned offerings)
// to nodeplan's.
func (m *Metrics) DisruptionDecision(cmd disruption.Command, savings float64) {
	if m == nil {
		return
	}
	d, r, t := decision(cmd), strings.ToLower(string(cmd.Reason)), consolidationType(cmd)
	if voluntary(cmd.Reason) {
		m.decisions.WithLabelValues(d, r, t).Inc()
		for _, p := range cmd.NodePools {
			m.decisionsByPool.WithLabelValues(p, d, r, t).Inc()
		}
	}
	if savings > 0 && len(cmd.NodePools) > 0 {
		m.savings.WithLabelValues(strings.Join(cmd.NodePools, ","), r).Add(savings)
	}
}

// ProvisioningSolved records a solve's outcome: its cost, its lower bound and the pods it could
// not place, by reason code.
func (m *Metrics) ProvisioningSolved(cost, lowerBound float64, unplacedByCode map[string]int) {
	if m == nil {
		return
	}
	m.plannedCost.Set(cost)
	m.lowerBound.Set(lowerBound)
	m.lowerBoundBits.Store(math.Float64bits(lowerBound))
	m.unplaced.Reset()
	for code, n := range unplacedByCode {
		m.unplaced.WithLabelValues(code).Set(float64(n))
	}
}

// CloudCall records a call to the cloud provider: its duration, and its error kind when it
// failed (Karpenter's error label: NodeClaimNotFoundError, InsufficientCapacityError,
// NodeClassNotReadyError, or empty for any other error).
func (m *Metrics) CloudCall(method string, seconds float64, err error, errKind string) {
	if m == nil {
		return
	}
	m.cloudDuration.WithLabelValues("nodeplan", method, "aws").Observe(seconds)
	if err != nil {
		m.cloudErrors.WithLabelValues("nodeplan", method, "aws", errKind).Inc()
	}
}

// observers observes into each of several histograms.
type observers []prometheus.Observer

func (o observers) Observe(v float64) {
	for _, h := range o {
		h.Observe(v)
	}
}

// cloudErrorKind is karpenter_cloudprovider_errors_total's error label: the well-known kind of
// a provider error, or "" for any other.
func cloudErrorKind(err error) string {
	switch {
	case cloudprovider.IsInsufficientCapacity(err):
		return "InsufficientCapacityError"
	case cloudprovider.IsNotFound(err):
		return "NodeClaimNotFoundError"
	case cloudprovider.IsNodeClassNotReady(err):
		return "NodeClassNotReadyError"
	}
	return ""
}

// InstrumentProvider returns p with every call timed in karpenter_cloudprovider_duration_seconds
// and every failure counted in karpenter_cloudprovider_errors_total, under Karpenter's method
// names (Create, Delete, Get, List, GetInstanceTypes, IsDrifted), as Karpenter's metrics
// decorator does. The optional interfaces p implements (InterruptionSource, Repairer,
// NodeClassResolver) are kept, and no other.
// On a nil *Metrics it returns p.
func (m *Metrics) InstrumentProvider(p cloudprovider.Provider) cloudprovider.Provider {
	if m == nil || p == nil {
		return p
	}
	if _, done := p.(interface{ isInstrumented() }); done {
		return p
	}
	base := instrumented{p: p, m: m}
	src, interrupts := p.(cloudprovider.InterruptionSource)
	rep, repairs := p.(cloudprovider.Repairer)
	res, resolves := p.(cloudprovider.NodeClassResolver)
	type (
		is  = cloudprovider.InterruptionSource
		rp  = cloudprovider.Repairer
		ncr = cloudprovider.NodeClassResolver
	)
	// One type per combination: a type assertion on the result must succeed exactly when it
	// does on p.
	switch {
	case interrupts && repairs && resolves:
		return struct {
			instrumented
			is
			rp
			ncr
		}{base, src, rep, res}
	case interrupts && repairs:
		return struct {
			instrumented
			is
			rp
		}{base, src, rep}
	case interrupts && resolves:
		return struct {
			instrumented
			is
			ncr
		}{base, src, res}
	case repairs && resolves:
		return struct {
			instrumented
			rp
			ncr
		}{base, rep, res}
	case interrupts:
		return struct {
			instrumented
			is
		}{base, src}
	case repairs:
		return struct {
			instrumented
			rp
		}{base, rep}
	case resolves:
		return struct {
			instrumented
			ncr
		}{base, res}
	}
	return base
}

type instrumented struct {
	p cloudprovider.Provider
	m *Metrics
}

func (instrumented) isInstrumented() {}

func (i instrumented) observe(method string, start time.Time, err error) {
	i.m.CloudCall(method, time.Since(start).Seconds(), err, cloudErrorKind(err))
}

func (i instrumented) Create(ctx context.Context, claim *nodeplan.NodeClaim) (*nodeplan.NodeClaim, error) {
	start := time.Now()
	out, err := i.p.Create(ctx, claim)
	i.observe("Create", start, err)
	return out, err
}

func (i instrumented) Delete(ctx context.Context, providerID string) error {
	start := time.Now()
	err := i.p.Delete(ctx, providerID)
	// NotFound is how Delete says "gone": the success a controller waits for. Karpenter's
	// decorator counts it too, with the error NodeClaimNotFoundError.
	i.observe("Delete", start, err)
	return err
}

func (i instrumented) Get(ctx context.Context, providerID string) (*nodeplan.NodeClaim, error) {
	start := time.Now()
	out, err := i.p.Get(ctx, providerID)
	i.observe("Get", start, err)
	return out, err
}

func (i instrumented) List(ctx context.Context) ([]*nodeplan.NodeClaim, error) {
	start := time.Now()
	out, err := i.p.List(ctx)
	i.observe("List", start, err)
	return out, err
}

func (i instrumented) InstanceTypes(ctx context.Context, pool *nodeplan.NodePool) ([]nodeplan.InstanceType, error) {
	start := time.Now()
	out, err := i.p.InstanceTypes(ctx, pool)
	i.observe("GetInstanceTypes", start, err)
	return out, err
}

func (i instrumented) IsDrifted(ctx context.Context, claim *nodeplan.NodeClaim) (cloudprovider.DriftReason, error) {
	start := time.Now()
	out, err := i.p.IsDrifted(ctx, claim)
	i.observe("IsDrifted", start, err)
	return out, err
}

// stateCollector computes Karpenter's state gauges from the controller's caches at scrape time.
type stateCollector struct{ m *Metrics }

func (s stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
	ch <- descFleetCost
	ch <- descClaimsPhase
	ch <- descPoolCost
	ch <- descFleetVsBound
}

func (s stateCollector) Collect(ch chan<- prometheus.Metric) {
	c := s.m.state.Load()
	synced := 0.0
	if c != nil && c.nodeLister != nil && c.podLister != nil {
		synced = 1
	}
	ch <- prometheus.MustNewConstMetric(descs[metricClusterStateSynced], prometheus.GaugeValue, synced)
	if synced == 0 {
		ch <- prometheus.MustNewConstMetric(descs[metricClusterStateNodes], prometheus.GaugeValue, 0)
		return
	}
	claims := c.tracker.List()
	fleet := 0.0
	poolCost := map[string]float64{}
	phases := map[[2]string]int{}
	for _, cl := range claims {
		fleet += cl.Status.Price
		poolCost[cl.NodePool] += cl.Status.Price
		phases[[2]string{cl.NodePool, cl.Phase.String()}]++
	}
	ch <- prometheus.MustNewConstMetric(descFleetCost, prometheus.GaugeValue, fleet)
	for k, n := range phases {
		ch <- prometheus.MustNewConstMetric(descClaimsPhase, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	for p, v := range poolCost {
		ch <- prometheus.MustNewConstMetric(descPoolCost, prometheus.GaugeValue, v, p)
	}
	if lb := math.Float64frombits(s.m.lowerBoundBits.Load()); lb > 0 {
		ch <- prometheus.MustNewConstMetric(descFleetVsBound, prometheus.GaugeValue, fleet/lb)
	}

	nodes := c.nodes()
	ch <- prometheus.MustNewConstMetric(descs[metricClusterStateNodes], prometheus.GaugeValue, float64(len(nodes)))
	byName := map[string]*corev1.Node{}
	usage := map[string]corev1.ResourceList{} // nodepool → sum of its nodes' capacity
	for _, n := range nodes {
		byName[n.Name] = n
		labels := nodeLabelValues(n)
		podReq, podLim, dsReq, dsLim := c.podTotals(n.Name)
		for name, rl := range map[string]corev1.ResourceList{
			metricNodesAllocatable: n.Status.Allocatable, metricNodesPodRequests: podReq,
			metricNodesPodLimits: podLim, metricNodesDaemonRequests: dsReq, metricNodesDaemonLimits: dsLim,
			metricNodesSystemOverhead: overhead(n),
		} {
			emitResources(ch, descs[name], rl, labels)
		}
		if pool := n.Labels[nodeplan.LabelNodePool]; pool != "" {
			u := usage[pool]
			if u == nil {
				u = corev1.ResourceList{}
				usage[pool] = u
			}
			for r, q := range n.Status.Capacity {
				sum := u[r]
				sum.Add(q)
				u[r] = sum
			}
			nodesQ := u[nodeplan.ResourceNodes]
			nodesQ.Add(*resource.NewQuantity(1, resource.DecimalSI))
			u[nodeplan.ResourceNodes] = nodesQ
		}
	}
	if pools, err := c.NodePools.NodePools(); err == nil {
		for _, p := range pools {
			u := usage[p.Name]
			if u == nil {
				u = corev1.ResourceList{}
			}
			// Karpenter's status.resources always holds these, zero-filled.
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods,
				corev1.ResourceEphemeralStorage, nodeplan.ResourceNodes} {
				if _, ok := u[r]; !ok {
					u[r] = resource.Quantity{}
				}
			}
			emitResources(ch, descs[metricNodePoolsUsage], u, nil, p.Name)
			emitResources(ch, descs[metricNodePoolsLimit], p.Limits, nil, p.Name)
		}
	}
	for _, o := range c.podLister.List() {
		p := o.(*corev1.Pod)
		ch <- prometheus.MustNewConstMetric(descs[metricPodsState], prometheus.GaugeValue, 1, podStateValues(p, byName[p.Spec.NodeName])...)
	}
}

// buildLabels are karpenter_build_info's: version, Go version, architecture, VCS revision.
func buildLabels() []string {
	version, commit := "(devel)", ""
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				commit = s.Value
			}
		}
	}
	return []string{version, runtime.Version(), runtime.GOARCH, commit}
}

// emitResources sends one sample per resource of rl. Node gauges pass their labels before
// resource_type; nodepool gauges pass resource_type first, then the pool (after).
func emitResources(ch chan<- prometheus.Metric, d *prometheus.Desc, rl corev1.ResourceList, before []string, after ...string) {
	names := make([]string, 0, len(rl))
	for r := range rl {
		names = append(names, string(r))
	}
	sort.Strings(names)
	for _, r := range names {
		q := rl[corev1.ResourceName(r)]
		vals := append(append(append([]string{}, before...), resourceType(r)), after...)
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, q.AsApproximateFloat64(), vals...)
	}
}

// resourceType is Karpenter's resource_type label: the resource name lower-cased, "-" as "_".
func resourceType(r string) string {
	return strings.ReplaceAll(strings.ToLower(r), "-", "_")
}

func nodeLabelValues(n *corev1.Node) []string {
	out := make([]string, 0, len(nodeLabelNames)-1)
	for _, k := range wellKnownNodeLabels {
		out = append(out, n.Labels[k])
	}
	_, managed := n.Labels[nodeplan.LabelNodePool]
	return append(out, n.Name, string(n.Status.Phase), boolString(managed))
}

func overhead(n *corev1.Node) corev1.ResourceList {
	out := corev1.ResourceList{}
	for r, c := range n.Status.Capacity {
		if a, ok := n.Status.Allocatable[r]; ok {
			c.Sub(a)
			out[r] = c
		}
	}
	return out
}

// podTotals sums the requests and limits of the pods bound to node that are not terminal,
// DaemonSet pods apart.
func (c *Controller) podTotals(node string) (podReq, podLim, dsReq, dsLim corev1.ResourceList) {
	podReq, podLim, dsReq, dsLim = corev1.ResourceList{}, corev1.ResourceList{}, corev1.ResourceList{}, corev1.ResourceList{}
	objs, _ := c.podLister.ByIndex(podNodeIndex, node)
	for _, o := range objs {
		p := o.(*corev1.Pod)
		if nodeplan.PodTerminal(p) {
			continue
		}
		req, lim := podReq, podLim
		if nodeplan.DaemonSetOf(p) != "" {
			req, lim = dsReq, dsLim
		}
		addInto(req, nodeplan.PodRequests(p))
		addInto(lim, podLimits(p))
	}
	return podReq, podLim, dsReq, dsLim
}

func addInto(dst, src corev1.ResourceList) {
	for r, q := range src {
		sum := dst[r]
		sum.Add(q)
		dst[r] = sum
	}
}

// podLimits sums the containers' limits (init containers taken at their maximum), as the
// kubelet accounts them.
func podLimits(p *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, ctr := range p.Spec.Containers {
		addInto(out, ctr.Resources.Limits)
	}
	for _, ctr := range p.Spec.InitContainers {
		for r, q := range ctr.Resources.Limits {
			if cur, ok := out[r]; !ok || q.Cmp(cur) > 0 {
				out[r] = q
			}
		}
	}
	return out
}

func podStateValues(p *corev1.Pod, n *corev1.Node) []string {
	owner := ""
	if len(p.OwnerReferences) > 0 {
		owner = p.OwnerReferences[0].Kind + "/" + p.OwnerReferences[0].Name
	}
	ready := false
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			ready = cond.Status == corev1.ConditionTrue
		}
	}
	var pool, zone, arch, ct, it string
	managed := false
	if n != nil {
		pool, zone, arch = n.Labels[nodeplan.LabelNodePool], n.Labels[corev1.LabelTopologyZone], n.Labels[corev1.LabelArchStable]
		ct, it = n.Labels[nodeplan.LabelCapacityType], n.Labels[corev1.LabelInstanceTypeStable]
		managed = pool != ""
	}
	return []string{p.Name, p.Namespace, owner, p.Spec.NodeName, boolString(p.Spec.NodeName != ""), pool, zone, arch,
		ct, it, string(p.Status.Phase), boolString(ready), boolString(managed)}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func unplacedByCode(us []scheduling.Unschedulable) map[string]int {
	out := map[string]int{}
	for _, u := range us {
		out[string(u.Code)]++
	}
	return out
}

// Value returns the current value of the counter or gauge sample name{labels} (every label
// given, none missing), and whether there is one. Tests and tools read single figures with it.
func (m *Metrics) Value(name string, labels map[string]string) (float64, bool) {
	mfs, err := m.Registry.Gather()
	if err != nil {
		return 0, false
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	samples:
		for _, s := range mf.GetMetric() {
			if len(s.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range s.GetLabel() {
				if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
					continue samples
				}
			}
			switch {
			case s.GetCounter() != nil:
				return s.GetCounter().GetValue(), true
			case s.GetGauge() != nil:
				return s.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// firstNames is Karpenter's list of names in a log line: the first n, comma-separated, then
// " and N other(s)".
func firstNames(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d other(s)", len(names)-n)
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Names returns the name of every series the controller serves (not the Go and process
// collectors'), sorted: dashboards and docs are checked against it.
func (m *Metrics) Names() []string {
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		for _, c := range m.collectors {
			c.Describe(ch)
		}
		close(ch)
	}()
	var out []string
	for d := range ch {
		if n := fqName.FindStringSubmatch(d.String()); n != nil {
			out = append(out, n[1])
		}
	}
	sort.Strings(out)
	return out
}
