package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

// TestSpotInterruptionMetrics runs the spot-interruption simulation, scrapes /metrics after it
// and checks Karpenter's label values for an interruption — the node disrupted as
// spot_interrupted, the message counted by type, no voluntary decision counted — and that the
// series operators' alerts are written on are served: pod start-up, node and NodeClaim
// termination times, the interruption queue, eligible nodes, the scheduler's queue depth and
// the offerings' price and availability.
func TestSpotInterruptionMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	metrics := controller.NewMetrics()
	srv := httptest.NewServer(metrics.Handler())
	defer srv.Close()
	var out bytes.Buffer
	if err := simulate(ctx, &out, simOptions{Scenario: "spot-interruption", Metrics: metrics}); err != nil {
		t.Fatalf("simulate: %v\n%s", err, out.String())
	}
	ss := scrape(t, srv.URL)
	ct := `spot|on-demand`
	for _, c := range []struct {
		name   string
		labels map[string]string
		value  func(float64) bool
		about  string
	}{
		{"karpenter_nodeclaims_disrupted_total", map[string]string{"nodepool": "default", "reason": "spot_interrupted", "capacity_type": "spot"}, eq(1), "1"},
		{"karpenter_interruption_received_messages_total", map[string]string{"message_type": "spot_interrupted"}, eq(1), "1"},
		{"karpenter_interruption_deleted_messages_total", nil, eq(1), "1"},
		{"karpenter_interruption_message_queue_duration_seconds_count", nil, eq(1), "1"},
		{"karpenter_pods_startup_duration_seconds_count", nil, ge(5), ">= 5 (the five inflate pods at least)"},
		{"karpenter_pods_startup_duration_seconds", map[string]string{"quantile": "0.5"}, func(v float64) bool { return v > 0 }, "> 0"},
		{"karpenter_nodes_termination_duration_seconds_count", map[string]string{"nodepool": "default"}, eq(1), "1"},
		{"karpenter_nodeclaims_termination_duration_seconds_count", map[string]string{"nodepool": "default"}, eq(1), "1"},
		{"karpenter_voluntary_disruption_eligible_nodes", map[string]string{"reason": "drifted|empty|underutilized"}, ge(0), "present"},
		{"karpenter_scheduler_queue_depth", map[string]string{"controller": "provisioner", "scheduling_id": "[0-9a-f-]{36}"}, eq(0), "0 (every pod placed)"},
		{"karpenter_cloudprovider_instance_type_offering_price_estimate", map[string]string{"instance_type": "c6a.2xlarge", "capacity_type": ct, "zone": "us-east-1[a-f]"}, func(v float64) bool { return v > 0 }, "> 0"},
		{"karpenter_cloudprovider_instance_type_offering_available", map[string]string{"instance_type": "c6a.2xlarge", "capacity_type": ct, "zone": "us-east-1[a-f]"}, func(v float64) bool { return v == 0 || v == 1 }, "0 or 1"},
	} {
		got := find(ss, c.name, c.labels)
		if len(got) == 0 {
			t.Errorf("no %s%v in /metrics", c.name, c.labels)
			continue
		}
		for _, s := range got {
			if !c.value(s.value) {
				t.Errorf("%s%v = %v, want %s", c.name, s.labels, s.value, c.about)
			}
		}
	}
	if n := len(find(ss, "karpenter_voluntary_disruption_eligible_nodes", nil)); n != 3 {
		t.Errorf("karpenter_voluntary_disruption_eligible_nodes: %d series, want 3 (drifted, empty, underutilized)", n)
	}
	// Karpenter's words only: no "interrupted" reason, and the interruption is no voluntary
	// decision.
	for _, name := range []string{"karpenter_nodeclaims_disrupted_total", "karpenter_nodeclaims_created_total"} {
		for _, s := range find(ss, name, map[string]string{"reason": "interrupted"}) {
			t.Errorf(`%s%v: reason "interrupted" is not Karpenter's (spot_interrupted; a replacement is provisioned)`, name, s.labels)
		}
	}
	for _, name := range []string{"karpenter_voluntary_disruption_decisions_total", "karpenter_voluntary_disruption_decisions_by_nodepool_total"} {
		for _, s := range find(ss, name, nil) {
			t.Errorf("%s%v = %v: an interruption is not a voluntary disruption decision", name, s.labels, s.value)
		}
	}
}
