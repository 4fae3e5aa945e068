package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

// sample is one line of the Prometheus text exposition.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// scrape GETs /metrics as Prometheus would and parses the text exposition.
func scrape(t *testing.T, url string) []sample {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: status %d, %v", resp.StatusCode, err)
	}
	var out []sample
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("unparsable exposition line %q", line)
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("exposition line %q: %v", line, err)
		}
		s := sample{name: m[1], labels: map[string]string{}, value: v}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			s.labels[p[1]] = p[2]
		}
		out = append(out, s)
	}
	return out
}

// find returns the samples of name whose labels match every pattern in want (anchored regexps)
// and that have exactly the label names of the series, as Karpenter defines them.
func find(ss []sample, name string, want map[string]string) []sample {
	var out []sample
next:
	for _, s := range ss {
		if s.name != name {
			continue
		}
		for k, pat := range want {
			v, ok := s.labels[k]
			if !ok || !regexp.MustCompile("^(?:"+pat+")$").MatchString(v) {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

// TestInflateMetrics runs the inflate simulation with a metrics endpoint, scrapes it while the
// five pods run and after the run, and finds each Karpenter-named series with Karpenter's labels
// and the values the story implies.
func TestInflateMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	metrics := controller.NewMetrics()
	srv := httptest.NewServer(metrics.Handler())
	defer srv.Close()

	// Scrape while the five pods run: the simulation calls Running there, so the scrape does
	// not race its virtual clock (a 10 ms poll missed the window under -race). The lower-bound
	// gauge is the last solve's — after the launching solve the pods wait only for the node on
	// its way, and a solve then needs nothing new — so it is checked present, not positive.
	var peak []sample
	var out bytes.Buffer
	err := simulate(ctx, &out, simOptions{Scenario: "inflate", Metrics: metrics, Running: func() { peak = scrape(t, srv.URL) }})
	if err != nil {
		t.Fatalf("simulate: %v\n%s", err, out.String())
	}
	final := scrape(t, srv.URL)

	node := `ip-[0-9-]+\.ec2\.internal`
	zone := `us-east-1[a-f]`
	ct := `spot|on-demand`
	it := `[a-z0-9-]+\.[a-z0-9]+`
	nodeLabels := func(rt string) map[string]string {
		return map[string]string{"nodepool": "default", "zone": zone, "region": ".*", "instance_type": it,
			"arch": "amd64", "os": ".*", "capacity_type": ct, "node_name": node, "phase": ".*", "managed": "true",
			"resource_type": rt}
	}

	for _, c := range []struct {
		when   string
		ss     []sample
		name   string
		labels map[string]string
		value  func(float64) bool
		about  string
	}{
		{"after", final, "karpenter_nodeclaims_created_total", map[string]string{"nodepool": "default", "reason": "provisioned", "min_values_relaxed": "false"}, eq(1), "1"},
		{"after", final, "karpenter_nodeclaims_disrupted_total", map[string]string{"nodepool": "default", "reason": "empty", "capacity_type": ct}, eq(1), "1"},
		{"after", final, "karpenter_nodeclaims_terminated_total", map[string]string{"nodepool": "default", "capacity_type": ct, "zone": zone}, eq(1), "1"},
		{"after", final, "karpenter_nodes_created_total", map[string]string{"nodepool": "default", "zone": zone}, eq(1), "1"},
		{"after", final, "karpenter_nodes_terminated_total", map[string]string{"nodepool": "default", "zone": zone}, eq(1), "1"},
		{"after", final, "karpenter_voluntary_disruption_decisions_total", map[string]string{"decision": "delete", "reason": "empty", "consolidation_type": "empty"}, eq(1), "1"},
		{"after", final, "karpenter_voluntary_disruption_decisions_by_nodepool_total", map[string]string{"nodepool": "default", "decision": "delete", "reason": "empty", "consolidation_type": "empty"}, eq(1), "1"},
		{"after", final, "karpenter_scheduler_scheduling_duration_seconds_count", map[string]string{"controller": "provisioner"}, ge(1), ">= 1"},
		{"after", final, "karpenter_voluntary_disruption_decision_evaluation_duration_seconds_count", map[string]string{"reason": "all", "consolidation_type": "all"}, ge(1), ">= 1"},
		{"after", final, "karpenter_cloudprovider_duration_seconds_count", map[string]string{"controller": "nodeplan", "method": "Create", "provider": "aws"}, eq(1), "1 (one launch)"},
		{"after", final, "karpenter_cloudprovider_duration_seconds_count", map[string]string{"controller": "nodeplan", "method": "List", "provider": "aws"}, ge(1), ">= 1"},
		{"after", final, "karpenter_cloudprovider_duration_seconds_count", map[string]string{"controller": "nodeplan", "method": "GetInstanceTypes", "provider": "aws"}, ge(1), ">= 1"},
		// Delete answers NotFound once the instance is gone: the end of every removal.
		{"after", final, "karpenter_cloudprovider_errors_total", map[string]string{"controller": "nodeplan", "method": "Delete", "provider": "aws", "error": "NodeClaimNotFoundError"}, ge(1), ">= 1"},
		{"after", final, "karpenter_nodepools_limit", map[string]string{"nodepool": "default", "resource_type": "cpu"}, eq(100), "100 (spec.limits.cpu)"},
		{"after", final, "karpenter_cluster_state_synced", nil, eq(1), "1"},
		{"after", final, "karpenter_build_info", map[string]string{"goversion": "go.*", "goarch": ".+"}, eq(1), "1"},
		{"after", final, "nodeplan_fleet_cost_dollars_per_hour", nil, eq(0), "0"},
		{"while running", peak, "karpenter_nodes_allocatable", nodeLabels("cpu"), ge(7), ">= 7 (a 2xlarge or larger)"},
		{"while running", peak, "karpenter_nodes_allocatable", nodeLabels("memory"), ge(1 << 30), ">= 1Gi"},
		{"while running", peak, "karpenter_nodes_total_pod_requests", nodeLabels("cpu"), eq(5), "5 (five 1-CPU pods)"},
		{"while running", peak, "karpenter_nodes_system_overhead", nodeLabels("cpu"), ge(0), "present"},
		{"while running", peak, "karpenter_nodepools_usage", map[string]string{"nodepool": "default", "resource_type": "nodes"}, eq(1), "1"},
		{"while running", peak, "karpenter_nodepools_usage", map[string]string{"nodepool": "default", "resource_type": "cpu"}, ge(7), ">= 7"},
		{"while running", peak, "karpenter_cluster_state_node_count", nil, ge(1), ">= 1"},
		{"while running", peak, "nodeplan_fleet_cost_dollars_per_hour", nil, func(v float64) bool { return v > 0 }, "> 0"},
		{"while running", peak, "nodeplan_provisioning_lower_bound_dollars_per_hour", nil, ge(0), "present"},
	} {
		got := find(c.ss, c.name, c.labels)
		if len(got) == 0 {
			t.Errorf("%s the run: no %s%v in /metrics", c.when, c.name, c.labels)
			continue
		}
		for _, s := range got {
			if !c.value(s.value) {
				t.Errorf("%s the run: %s%v = %v, want %s", c.when, c.name, s.labels, s.value, c.about)
			}
			if want := controller.KarpenterSeries[strings.TrimSuffix(c.name, "_count")]; want != nil && len(s.labels) != len(want) {
				t.Errorf("%s: labels %v, want exactly %v", c.name, s.labels, want)
			}
		}
	}
	running := find(peak, "karpenter_pods_state", map[string]string{"namespace": labNamespace, "nodepool": "default",
		"node": node, "scheduled": "true", "zone": zone, "capacity_type": ct, "instance_type": it, "arch": "amd64",
		"owner": "ReplicaSet/inflate-.*", "managed": "true", "phase": "Pending|Running", "ready": "true|false", "name": "inflate-.*"})
	if len(running) != 5 {
		t.Errorf("while running: %d karpenter_pods_state series for the inflate pods on the node, want 5", len(running))
	}
}

func eq(want float64) func(float64) bool { return func(v float64) bool { return v == want } }
func ge(want float64) func(float64) bool { return func(v float64) bool { return v >= want } }

// TestInflateJSONLogs runs the inflate simulation with Karpenter's JSON log layout and finds the
// phrases the seeds' log queries look for, under the key "message", with Karpenter's fields.
func TestInflateJSONLogs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, logs bytes.Buffer
	if err := simulate(ctx, &out, simOptions{Scenario: "inflate", JSONLog: &logs}); err != nil {
		t.Fatalf("simulate: %v\n%s", err, out.String())
	}
	byMessage := map[string][]map[string]any{}
	sc := bufio.NewScanner(&logs)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line is not JSON: %v\n%s", err, sc.Text())
		}
		if _, ok := line["msg"]; ok {
			t.Errorf(`log line has "msg": %s`, sc.Text())
		}
		for _, k := range []string{"level", "time", "logger", "message"} {
			if _, ok := line[k]; !ok {
				t.Errorf("log line lacks %q: %s", k, sc.Text())
			}
		}
		msg, _ := line["message"].(string)
		byMessage[msg] = append(byMessage[msg], line)
	}
	name := func(l map[string]any, kind string) string {
		m, _ := l[kind].(map[string]any)
		s, _ := m["name"].(string)
		return s
	}
	for _, c := range []struct {
		message string
		check   func(map[string]any) string
	}{
		{"found provisionable pod(s)", nil},
		{"computed new nodeclaim(s) to fit pod(s)", nil},
		{"created nodeclaim", func(l map[string]any) string {
			if name(l, "NodePool") != "default" || !strings.HasPrefix(name(l, "NodeClaim"), "default-") {
				return "want NodePool.name default and NodeClaim.name default-…"
			}
			return ""
		}},
		{"launched nodeclaim", func(l map[string]any) string {
			if s, _ := l["provider-id"].(string); !strings.Contains(s, ":///us-east-1") {
				return "want provider-id <cloud>:///<zone>/<instance>"
			}
			return ""
		}},
		{"registered nodeclaim", func(l map[string]any) string {
			if name(l, "Node") == "" {
				return "want Node.name"
			}
			return ""
		}},
		{"initialized nodeclaim", nil},
		{"disrupting node(s)", func(l map[string]any) string {
			if s, _ := l["command"].(string); !strings.HasPrefix(s, "Empty: delete: nodepools=[default]") {
				return `want command "Empty: delete: nodepools=[default]: …"`
			}
			return ""
		}},
		{"tainted node", nil},
		{"deleted node", nil},
		{"deleted nodeclaim", nil},
	} {
		lines := byMessage[c.message]
		if len(lines) == 0 {
			t.Errorf("no log line with message %q", c.message)
			continue
		}
		if lines[0]["level"] != "INFO" {
			t.Errorf("%q: level %v, want INFO", c.message, lines[0]["level"])
		}
		if c.check != nil {
			if why := c.check(lines[0]); why != "" {
				t.Errorf("%q: %s: %v", c.message, why, lines[0])
			}
		}
	}
}
