package controller

import (
	"crypto/rand"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/disruption"
)

// The series Karpenter operators' alerts and dashboards are written on beyond the counters of
// metrics.go: pod start-up and termination times, the interruption queue, the disruption
// candidates, the scheduler's queue and the offerings' prices.
const (
	metricPodsStartupDuration        = "karpenter_pods_startup_duration_seconds"
	metricNodesTerminationDuration   = "karpenter_nodes_termination_duration_seconds"
	metricClaimsTerminationDuration  = "karpenter_nodeclaims_termination_duration_seconds"
	metricInterruptionReceived       = "karpenter_interruption_received_messages_total"
	metricInterruptionDeleted        = "karpenter_interruption_deleted_messages_total"
	metricInterruptionQueueDuration  = "karpenter_interruption_message_queue_duration_seconds"
	metricEligibleNodes              = "karpenter_voluntary_disruption_eligible_nodes"
	metricSchedulerQueueDepth        = "karpenter_scheduler_queue_depth"
	metricOfferingPriceEstimate      = "karpenter_cloudprovider_instance_type_offering_price_estimate"
	metricOfferingAvailable          = "karpenter_cloudprovider_instance_type_offering_available"
	summaryEpsilon                   = 0.01
	interruptionMessageTypeLabelName = "message_type"
)

// The offering gauges' descriptors (offeringCollector's, not stateCollector's).
var descOfferingPrice, descOfferingAvailable *prometheus.Desc

func init() {
	for name, labels := range map[string][]string{
		metricPodsStartupDuration:       nil,
		metricNodesTerminationDuration:  {"nodepool"},
		metricClaimsTerminationDuration: {"nodepool"},
		metricInterruptionReceived:      {interruptionMessageTypeLabelName},
		metricInterruptionDeleted:       nil,
		metricInterruptionQueueDuration: nil,
		metricEligibleNodes:             {"reason"},
		metricSchedulerQueueDepth:       {"controller", "scheduling_id"},
		metricOfferingPriceEstimate:     {"instance_type", "capacity_type", "zone"},
		metricOfferingAvailable:         {"instance_type", "capacity_type", "zone"},
	} {
		KarpenterSeries[name] = labels
	}
	descOfferingPrice = prometheus.NewDesc(metricOfferingPriceEstimate,
		"Estimated $/h of each offering (instance type, capacity type, zone), as the plans price it.",
		KarpenterSeries[metricOfferingPriceEstimate], nil)
	descOfferingAvailable = prometheus.NewDesc(metricOfferingAvailable,
		"1 when the offering (instance type, capacity type, zone) can be launched, else 0.",
		KarpenterSeries[metricOfferingAvailable], nil)
}

// summaryObjectives are Karpenter's summary quantiles: 0, 0.5, 0.9, 0.99 and 1, each ±0.01.
func summaryObjectives() map[float64]float64 {
	out := map[float64]float64{}
	for _, q := range []float64{0, 0.5, 0.9, 0.99, 1} {
		out[q] = summaryEpsilon
	}
	return out
}

// opsMetrics are the series of this file.
type opsMetrics struct {
	podStartup          prometheus.Summary
	nodeTermination     *prometheus.SummaryVec
	claimTermination    *prometheus.HistogramVec
	interruptReceived   *prometheus.CounterVec
	interruptDeleted    prometheus.Counter
	interruptQueueDelay prometheus.Histogram
	eligible            *prometheus.GaugeVec
	queueDepth          *prometheus.GaugeVec

	mu        sync.Mutex
	offerings map[offeringKey]offeringValue // the last instance types read, per offering
}

type offeringKey struct{ instanceType, capacityType, zone string }

type offeringValue struct {
	price     float64
	available bool
}

func newOpsMetrics() *opsMetrics {
	return &opsMetrics{
		podStartup: prometheus.NewSummary(prometheus.SummaryOpts{Name: metricPodsStartupDuration,
			Help: "Time from a pod's creation until it is running and ready, for pods seen pending.", Objectives: summaryObjectives()}),
		nodeTermination: prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: metricNodesTerminationDuration,
			Help: "Time from the start of a node's termination until its Node object is gone, by nodepool.", Objectives: summaryObjectives()},
			KarpenterSeries[metricNodesTerminationDuration]),
		claimTermination: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricClaimsTerminationDuration,
			Help: "Time from the start of a NodeClaim's termination until it is removed, by nodepool.", Buckets: prometheus.ExponentialBuckets(1, 2, 12)},
			KarpenterSeries[metricClaimsTerminationDuration]),
		interruptReceived: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricInterruptionReceived,
			Help: "Interruption messages received from the provider's queue, by message type (spot_interrupted, scheduled_change, instance_stopped, instance_terminated, rebalance_recommendation)."},
			KarpenterSeries[metricInterruptionReceived]),
		interruptDeleted: prometheus.NewCounter(prometheus.CounterOpts{Name: metricInterruptionDeleted,
			Help: "Interruption messages handled and removed from the queue (the provider deletes each message it hands over)."}),
		interruptQueueDelay: prometheus.NewHistogram(prometheus.HistogramOpts{Name: metricInterruptionQueueDuration,
			Help: "Time from an interruption event's emission until the controller handled it.", Buckets: karpenterDurationBuckets}),
		eligible: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricEligibleNodes,
			Help: "Nodes eligible for voluntary disruption at the last planning pass, by reason (drifted, empty, underutilized)."},
			KarpenterSeries[metricEligibleNodes]),
		queueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricSchedulerQueueDepth,
			Help: "Pods waiting in the last provisioning solve: all of them while it runs, those it could not place once done."},
			KarpenterSeries[metricSchedulerQueueDepth]),
		offerings: map[offeringKey]offeringValue{},
	}
}

// karpenterDurationBuckets are Karpenter's DurationBuckets (controller-runtime's, extended to
// 10 minutes).
var karpenterDurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6,
	0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60, 120,
	150, 300, 450, 600}

func (o *opsMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{o.podStartup, o.nodeTermination, o.claimTermination, o.interruptReceived,
		o.interruptDeleted, o.interruptQueueDelay, o.eligible, o.queueDepth, offeringCollector{o}}
}

// interruptionReason is Karpenter's name for an interruption kind: the message_type of
// karpenter_interruption_received_messages_total and the reason of
// karpenter_nodeclaims_disrupted_total.
func interruptionReason(ev cloudprovider.Interruption) string {
	switch ev.Kind {
	case cloudprovider.InterruptionSpot:
		return "spot_interrupted"
	case cloudprovider.InterruptionRebalance:
		return "rebalance_recommendation"
	case cloudprovider.InterruptionScheduledChange:
		return "scheduled_change"
	case cloudprovider.InterruptionStateChange:
		if ev.State == "stopping" || ev.State == "stopped" {
			return "instance_stopped"
		}
		return "instance_terminated"
	}
	return strings.ToLower(string(ev.Kind))
}

// InterruptionReceived counts an interruption message handed over by the provider, and the
// time it waited since the cloud emitted it (Karpenter observes it once the message is
// handled; the provider has deleted it by then).
func (m *Metrics) InterruptionReceived(ev cloudprovider.Interruption, seconds float64) {
	if m == nil {
		return
	}
	m.ops.interruptReceived.WithLabelValues(interruptionReason(ev)).Inc()
	if !ev.Time.IsZero() {
		m.ops.interruptQueueDelay.Observe(max(seconds, 0))
	}
	m.ops.interruptDeleted.Inc()
}

// PodStarted observes a pod's start-up time: creation until Ready.
func (m *Metrics) PodStarted(seconds float64) {
	if m == nil {
		return
	}
	m.ops.podStartup.Observe(max(seconds, 0))
}

// NodeTerminated observes the time a node of pool took to go, from the start of its
// termination until its Node object was deleted.
func (m *Metrics) NodeTerminated(pool string, seconds float64) {
	if m == nil {
		return
	}
	m.ops.nodeTermination.WithLabelValues(pool).Observe(max(seconds, 0))
}

// NodeClaimTerminationDuration observes the time a claim of pool took to go, from the start
// of its termination until it was removed.
func (m *Metrics) NodeClaimTerminationDuration(pool string, seconds float64) {
	if m == nil {
		return
	}
	m.ops.claimTermination.WithLabelValues(pool).Observe(max(seconds, 0))
}

// SchedulingStarted sets the queue depth of a new provisioning solve and forgets earlier ones,
// as Karpenter does at each Solve; it returns the solve's id for SchedulingDone.
func (m *Metrics) SchedulingStarted(pods int) string {
	if m == nil {
		return ""
	}
	id := newUUID()
	m.ops.queueDepth.DeletePartialMatch(prometheus.Labels{"controller": "provisioner"})
	m.ops.queueDepth.WithLabelValues("provisioner", id).Set(float64(pods))
	return id
}

// newUUID returns a random (version 4) UUID, the form of Karpenter's scheduling_id.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// SchedulingDone sets the queue depth of the solve id to the pods it left unplaced; the series
// stays until the next solve, as Karpenter's does.
func (m *Metrics) SchedulingDone(id string, unplaced int) {
	if m == nil || id == "" {
		return
	}
	m.ops.queueDepth.WithLabelValues("provisioner", id).Set(float64(unplaced))
}

// Offerings records the offerings of the instance types the controller last read, for the
// price and availability gauges. An offering listed by several pools is available when it is
// for any of them.
func (m *Metrics) Offerings(byPool map[string][]nodeplan.InstanceType) {
	if m == nil {
		return
	}
	next := map[offeringKey]offeringValue{}
	for _, its := range byPool {
		for _, it := range its {
			for _, o := range it.Offerings {
				k := offeringKey{it.Name, string(o.CapacityType), o.Zone}
				v := next[k]
				v.price = o.Price
				v.available = v.available || o.Available
				next[k] = v
			}
		}
	}
	m.ops.mu.Lock()
	m.ops.offerings = next
	m.ops.mu.Unlock()
}

type offeringCollector struct{ o *opsMetrics }

func (c offeringCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descOfferingPrice
	ch <- descOfferingAvailable
}

func (c offeringCollector) Collect(ch chan<- prometheus.Metric) {
	c.o.mu.Lock()
	defer c.o.mu.Unlock()
	keys := make([]offeringKey, 0, len(c.o.offerings))
	for k := range c.o.offerings {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.instanceType != b.instanceType {
			return a.instanceType < b.instanceType
		}
		if a.capacityType != b.capacityType {
			return a.capacityType < b.capacityType
		}
		return a.zone < b.zone
	})
	for _, k := range keys {
		v := c.o.offerings[k]
		ch <- prometheus.MustNewConstMetric(descOfferingPrice, prometheus.GaugeValue, v.price, k.instanceType, k.capacityType, k.zone)
		ch <- prometheus.MustNewConstMetric(descOfferingAvailable, prometheus.GaugeValue, float64(boolInt(v.available)), k.instanceType, k.capacityType, k.zone)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// EligibleNodes sets karpenter_voluntary_disruption_eligible_nodes for each voluntary reason.
func (m *Metrics) EligibleNodes(byReason map[string]int) {
	if m == nil {
		return
	}
	for _, r := range []string{"drifted", "empty", "underutilized"} {
		m.ops.eligible.WithLabelValues(r).Set(float64(byReason[r]))
	}
}

// eligibleNodes counts, per voluntary reason, the nodes Karpenter's disruption methods would
// take as candidates: managed nodes of a known pool, initialized, not being disrupted or
// interrupted, not nominated, neither the node nor its pods opting out (do-not-disrupt, a PDB
// that blocks the drain); then drifted for drift, consolidatable (consolidateAfter passed
// since the last pod event) and empty for emptiness, consolidatable under
// WhenEmptyOrUnderutilized for consolidation. A node may count under several reasons, as it
// is a candidate of several methods.
func eligibleNodes(in disruption.Input, res disruption.Result) map[string]int {
	podBlocked := map[string]bool{}
	for _, b := range res.Blocked {
		if b.Code == disruption.CodeDoNotDisruptPod || b.Code == disruption.CodePDB {
			podBlocked[b.Node] = true
		}
	}
	pools := map[string]nodeplan.NodePool{}
	for _, p := range in.NodePools {
		pools[p.Name] = p
	}
	out := map[string]int{}
	for _, n := range in.Nodes {
		pool, ok := pools[n.NodePool]
		if n.NodePool == "" || !ok || n.Disrupting || n.Interruption != nil || n.Initialized.IsZero() || n.Nominated ||
			n.Node == nil || nodeplan.NodeDoNotDisrupt(n.Node.Annotations) || podBlocked[n.Node.Name] {
			continue
		}
		if n.Drift != "" {
			out["drifted"]++
		}
		after := pool.Disruption.ConsolidateAfter
		since := n.Initialized
		if n.LastPodEvent.After(since) {
			since = n.LastPodEvent
		}
		if after == nodeplan.Never || in.Now.Before(since.Add(after)) {
			continue
		}
		if !hasMovablePods(n.Pods) {
			out["empty"]++
		}
		if pool.Disruption.Policy() == nodeplan.ConsolidateWhenEmptyOrUnderutilized {
			out["underutilized"]++
		}
	}
	return out
}

// hasMovablePods reports whether any pod would have to move: active and not the node's own
// (DaemonSet or mirror).
func hasMovablePods(pods []*corev1.Pod) bool {
	for _, p := range pods {
		if !nodeplan.PodTerminal(p) && p.DeletionTimestamp == nil && !nodeplan.PodBelongsToNode(p) {
			return true
		}
	}
	return false
}

// voluntary reports whether reason is one of Karpenter's voluntary disruption methods, counted
// in karpenter_voluntary_disruption_decisions_total: interruption and expiration are not.
func voluntary(r nodeplan.DisruptionReason) bool {
	return r != nodeplan.ReasonInterrupted && r != nodeplan.ReasonExpired
}
