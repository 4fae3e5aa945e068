package controller

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the controller's Prometheus metrics, on a registry of their own. The names follow
// Karpenter's (karpenter_nodeclaims_created_total → nodeplan_nodeclaims_created_total), so
// dashboards port by a prefix.
type Metrics struct {
	Registry *prometheus.Registry

	// ClaimsCreated counts claims made, by nodepool and reason (provisioning, replacement…).
	ClaimsCreated *prometheus.CounterVec
	// ClaimsLaunched counts instances launched, by nodepool and capacity type.
	ClaimsLaunched *prometheus.CounterVec
	// ClaimsTerminated counts claims ended, by nodepool and reason (Empty, Drifted,
	// Interrupted, registration_timeout, insufficient_capacity…).
	ClaimsTerminated *prometheus.CounterVec
	// ClaimsDisrupted counts nodes disrupted, by nodepool and disruption reason.
	ClaimsDisrupted *prometheus.CounterVec
	// PodsPending is the number of provisionable pods at the last batch.
	PodsPending prometheus.Gauge
	// SolveDuration and PlanDuration time the solver and the planner.
	SolveDuration, PlanDuration prometheus.Histogram
	// FleetCost is the $/h of every launched claim.
	FleetCost prometheus.Gauge
	// Nodes counts claims by nodepool and phase.
	Nodes *prometheus.GaugeVec
}

// NewMetrics returns metrics registered on a fresh registry, with the Go and process
// collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		ClaimsCreated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodeplan_nodeclaims_created_total", Help: "NodeClaims created, by nodepool and reason."},
			[]string{"nodepool", "reason"}),
		ClaimsLaunched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodeplan_nodeclaims_launched_total", Help: "Instances launched for NodeClaims, by nodepool and capacity type."},
			[]string{"nodepool", "capacity_type"}),
		ClaimsTerminated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodeplan_nodeclaims_terminated_total", Help: "NodeClaims terminated, by nodepool and reason."},
			[]string{"nodepool", "reason"}),
		ClaimsDisrupted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "nodeplan_nodeclaims_disrupted_total", Help: "Nodes disrupted, by nodepool and disruption reason."},
			[]string{"nodepool", "reason"}),
		PodsPending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nodeplan_pods_pending", Help: "Provisionable (unschedulable, unbound) pods at the last batch."}),
		SolveDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "nodeplan_solve_duration_seconds", Help: "Time spent in the provisioning solver.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}),
		PlanDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "nodeplan_plan_duration_seconds", Help: "Time spent in the disruption planner.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}),
		FleetCost: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "nodeplan_fleet_cost_dollars_per_hour", Help: "Price of every launched NodeClaim, USD per hour."}),
		Nodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "nodeplan_nodeclaims", Help: "NodeClaims by nodepool and phase."}, []string{"nodepool", "phase"}),
	}
	m.Registry.MustRegister(m.ClaimsCreated, m.ClaimsLaunched, m.ClaimsTerminated, m.ClaimsDisrupted,
		m.PodsPending, m.SolveDuration, m.PlanDuration, m.FleetCost, m.Nodes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

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

func (c *Controller) updateGauges() {
	if c.Metrics == nil {
		return
	}
	c.Metrics.FleetCost.Set(c.tracker.FleetCost())
	c.Metrics.Nodes.Reset()
	for _, cl := range c.tracker.List() {
		c.Metrics.Nodes.WithLabelValues(cl.NodePool, cl.Phase.String()).Inc()
	}
}
