package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDefaultRun runs what a newcomer runs first — `go run ./examples/controller` — and checks
// the story it tells: one node launched for the five pods, with its price, and removed as
// empty after the scale-down, with the savings.
func TestDefaultRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errs bytes.Buffer
	if err := run(ctx, nil, &out, &errs); err != nil {
		t.Fatalf("run() = %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errs.String())
	}
	for _, want := range []string{
		`(?m)^00:00:01 scaled deployment inflate to 5$`,
		`(?m)^\d\d:\d\d:\d\d launched nodeclaim default-[a-z0-9]{5} nodepool=default instance-type=\S+ zone=us-east-1[abc] capacity-type=(spot|on-demand) price=\$0\.\d{4}/h allocatable=cpu:\d+m,.*pods=5$`,
		`(?m)^\d\d:\d\d:\d\d 5/5 inflate pods running nodes=\[ip-[^ ]+\]$`,
		`(?m)^\d\d:\d\d:\d\d scaled deployment inflate to 0$`,
		`(?m)^\d\d:\d\d:\d\d disrupting node\(s\) reason=Empty savings=\$0\.\d{4}/h`,
		`(?m)^\d\d:\d\d:\d\d deleted nodeclaim default-[a-z0-9]{5} .*reason=Empty$`,
		`(?m)^  nodes launched: 1$`,
		`(?m)^    Empty: 1 node\(s\), savings \$0\.\d{4}/h$`,
		`(?m)^  fleet: peak \$0\.\d{4}/h, now \$0\.0000/h`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("output lacks a line matching %s\noutput:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "ERROR") {
		t.Errorf("output has errors:\n%s", out.String())
	}
}

// TestScenarios runs the other simulated scenarios; each checks its own outcome.
func TestScenarios(t *testing.T) {
	for _, sc := range scenarios[1:] {
		t.Run(sc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var out bytes.Buffer
			if err := run(ctx, []string{"--scenario", sc.name}, &out, &out); err != nil {
				t.Fatalf("run(--scenario %s) = %v\noutput:\n%s", sc.name, err, out.String())
			}
		})
	}
}

func TestUnknownScenario(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"--scenario", "nope"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "inflate") {
		t.Errorf(`run(--scenario nope) = %v, want an error listing the scenarios`, err)
	}
}

// TestPrintCRDs: --print-crds writes Karpenter's own CRDs, with the NodeClaim printer columns
// `kubectl get nodeclaims -o wide` shows.
func TestPrintCRDs(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--print-crds"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"name: nodeclaims.karpenter.sh", "name: nodepools.karpenter.sh", "name: ec2nodeclasses.karpenter.k8s.aws",
		`jsonPath: .metadata.labels.node\.kubernetes\.io/instance-type`, `jsonPath: .status.conditions[?(@.type=="Ready")].status`,
		`jsonPath: .status.conditions[?(@.type=="Drifted")].status`, "jsonPath: .status.providerID",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--print-crds output lacks %q", want)
		}
	}
}

// TestNodeCostFlag: --node-cost is a non-negative $/h; anything else is refused before the
// controller starts.
func TestNodeCostFlag(t *testing.T) {
	var out bytes.Buffer
	o, err := parseFlags([]string{"--node-cost", "0.005"}, &out)
	if err != nil || o.nodeCost != 0.005 {
		t.Errorf("parseFlags(--node-cost 0.005) = %v, %v; want 0.005", o.nodeCost, err)
	}
	for _, bad := range []string{"-1", "NaN", "+Inf"} {
		if _, err := parseFlags([]string{"--node-cost", bad}, &out); err == nil || !strings.Contains(err.Error(), "--node-cost") {
			t.Errorf("parseFlags(--node-cost %s) = %v, want an error naming --node-cost", bad, err)
		}
	}
}

// TestScale runs `controller -scale 300`: every pod runs, the latencies are printed, and the
// scale-down leaves no node.
func TestScale(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, []string{"-scale", "300"}, &out, &out); err != nil {
		t.Fatalf("run(-scale 300) = %v\noutput:\n%s", err, out.String())
	}
	for _, want := range []string{
		`(?m)^\d\d:\d\d:\d\d 300/300 pods running on \d+ nodes `,
		`(?m)^  pending → nodeclaim created: p50 \S+  p99 \S+  max \S+  \(\d+ pods; \d+ placed on capacity already there\)$`,
		`(?m)^  pending → running: +p50 \S+  p99 \S+  max \S+$`,
		`(?m)^\d\d:\d\d:\d\d no nodes left `,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("output lacks a line matching %s\noutput:\n%s", want, out.String())
		}
	}
}

// TestReplacementCostFigures: a replacement is reported at the offering it was planned at. A
// like-for-like drift replacement (c6a.2xlarge spot for the same) costs nothing more, and the
// spot replacement of an interrupted node costs the difference of the two spot prices; both
// read cost-increase=$0.2151/h when replacements were priced at their on-demand worst case.
func TestReplacementCostFigures(t *testing.T) {
	for _, tc := range []struct{ scenario, want, summary string }{
		{"drift", `disrupting node(s) reason=Drifted savings=$0.0000/h `, `Drifted: 1 node(s), savings $0.0000/h`},
		{"spot-interruption", `disrupting node(s) reason=Interrupted cost-increase=$0.0044/h `, `Interrupted: 1 node(s), cost-increase $0.0044/h`},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var out bytes.Buffer
			if err := run(ctx, []string{"--scenario", tc.scenario}, &out, &out); err != nil {
				t.Fatalf("run(--scenario %s) = %v\noutput:\n%s", tc.scenario, err, out.String())
			}
			for _, want := range []string{tc.want, tc.summary} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("run(--scenario %s) lacks %q\noutput:\n%s", tc.scenario, want, out.String())
				}
			}
		})
	}
}

// TestICELaunchShowsPlanned: when the cheapest offering has no capacity the launch falls back,
// and its line says what was planned, as the README promises for `--scenario ice`.
func TestICELaunchShowsPlanned(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, []string{"--scenario", "ice"}, &out, &out); err != nil {
		t.Fatalf("run(--scenario ice) = %v\noutput:\n%s", err, out.String())
	}
	// The ICE'd offering is spot c6a.2xlarge in us-east-1a (scenario ice); the launch is another.
	want := `(?m)^\d\d:\d\d:\d\d launched nodeclaim \S+ nodepool=default instance-type=(\S+) zone=(\S+) capacity-type=(\S+) .* planned=c6a\.2xlarge/us-east-1a/spot$`
	m := regexp.MustCompile(want).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("output lacks a launch line matching %s\noutput:\n%s", want, out.String())
	}
	if m[1]+"/"+m[2]+"/"+m[3] == "c6a.2xlarge/us-east-1a/spot" {
		t.Errorf("launched the offering that had no capacity: %s", m[0])
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "`--scenario ice`") || !strings.Contains(string(readme), "`planned=`") {
		t.Error("README.md no longer describes --scenario ice's planned= (update this test with it)")
	}
}
