package main

import (
	"encoding/json"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// replaceSnapshot is an underutilized on-demand m5.2xlarge ($0.384/h) whose pool also allows
// spot: consolidation replaces it with a t3.medium spot node at $0.0139/h, which the planner
// judged at $0.0161/h, the dearest zone the replacement's options leave open.
var replaceSnapshot = []string{"--pods", "testdata/replace/pods.yaml", "--nodes", "testdata/replace/nodes.yaml",
	"--nodepools", "testdata/replace/nodepools.yaml", "--catalog", "testdata/catalog.json", "--now", "2026-11-22T10:00:00Z"}

// TestDisruptReportsThePlannedReplacementPrice: a command's saving prices its replacements at
// the offerings planned, as the controller reports it, with the planner's worst case beside it.
func TestDisruptReportsThePlannedReplacementPrice(t *testing.T) {
	code, stdout, stderr := runPlan(t, args([]string{"disrupt"}, replaceSnapshot, []string{"-o", "json"}))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep disruptReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Commands) != 1 || len(rep.Commands[0].Replacements) != 1 {
		t.Fatalf("want one command with one replacement:\n%s", stdout)
	}
	c := rep.Commands[0]
	want := commandReport{Price: 0.384, ReplacementPrice: c.Replacements[0].Price, ReplacementWorstCase: 0.0161, Savings: 0.384 - c.Replacements[0].Price}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	if c.Replacements[0].Price != 0.0139 || !near(c.Price, want.Price) || !near(c.ReplacementPrice, want.ReplacementPrice) ||
		!near(c.ReplacementWorstCase, want.ReplacementWorstCase) || !near(c.Savings, want.Savings) {
		t.Errorf("price %v, replacement %v (%v planned), worst case %v, savings %v; want 0.384, 0.0139, 0.0161, 0.3701",
			c.Price, c.ReplacementPrice, c.Replacements[0].Price, c.ReplacementWorstCase, c.Savings)
	}

	code, stdout, stderr = runPlan(t, args([]string{"disrupt"}, replaceSnapshot))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{"$0.3701\n", "1 command saving $0.3701/h",
		"replacements $0.0139/h as planned, $0.0161/h at the dearest offering their options could launch at"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("text lacks %q:\n%s", w, stdout)
		}
	}
}

// TestWatchReportsThePlannedReplacementPrice: shadow mode's "saving" and its would-save gauge
// are the same figure as disrupt's.
func TestWatchReportsThePlannedReplacementPrice(t *testing.T) {
	reg := prometheus.NewRegistry()
	var out, logs strings.Builder
	m := newShadowMetrics(reg)
	cfg := watchConfig{
		passes: 1,
		files: inputFiles{pods: "testdata/replace/pods.yaml", nodes: "testdata/replace/nodes.yaml",
			nodePools: "testdata/replace/nodepools.yaml", catalog: "testdata/catalog.json"},
		log:     slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		metrics: m,
		now:     func() time.Time { return time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC) },
	}
	fakeCluster(t) // its DaemonSets and PDBs; the files replace its pods, nodes and NodePools
	kube, dyn, _, _ := connectCluster(nil)
	cfg.read = clusterReader{kube: kube, dynamic: dyn}.read
	if err := runWatch(t.Context(), cfg, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "remove or replace 1, saving $0.3701/h") {
		t.Errorf("watch output lacks the planned saving $0.3701/h:\n%s", out.String())
	}
	if got := testutil.ToFloat64(m.wouldSave); math.Abs(got-0.3701) > 1e-6 {
		t.Errorf("would-save gauge = %v, want 0.3701", got)
	}
}

// TestDisruptTextCostIncrease: a plan whose replacements are dearer (drift, expiry) says what
// it costs rather than printing a negative saving.
func TestDisruptTextCostIncrease(t *testing.T) {
	rep := disruptReport{Commands: []commandReport{{Action: "replace", Reason: "Drifted", Nodes: []string{"n1"},
		Price: 0.0929, ReplacementPrice: 0.0973, ReplacementWorstCase: 0.0973, Savings: 0.0929 - 0.0973}}}
	var out strings.Builder
	if err := rep.writeText(&out, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "1 command costing $0.0044/h more,") || strings.Contains(out.String(), "saving $-") {
		t.Errorf("want the summary to say the command costs $0.0044/h more:\n%s", out.String())
	}
}

func TestSavingPhrase(t *testing.T) {
	for _, tc := range []struct {
		savings float64
		want    string
	}{
		{0.192, "saving $0.1920/h"},
		{0, "saving $0.0000/h"},
		{-0.00001, "saving $0.0000/h"}, // below what is shown: no increase
		{-0.0044, "costing $0.0044/h more"},
	} {
		if got := savingPhrase(tc.savings); got != tc.want {
			t.Errorf("savingPhrase(%v) = %q, want %q", tc.savings, got, tc.want)
		}
	}
}
