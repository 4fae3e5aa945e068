package disruption_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.golden from the current plans")

// render prints a Result the way a person reads it; golden files hold it.
func render(r disruption.Result) string {
	var b strings.Builder
	for _, c := range r.Commands {
		fmt.Fprintf(&b, "%s %s %s pools=%s pods=%d price=%.4f replacement=%.4f savings=%.4f forceful=%v\n",
			c.Action, c.Reason, strings.Join(c.Nodes, ","), strings.Join(c.NodePools, ","), len(c.Pods),
			c.Price, c.ReplacementPrice, c.Savings, c.Forceful())
		for _, rc := range c.Replacements {
			fmt.Fprintf(&b, "  launch %s pool=%s as %s (%s %s $%.4f) options=%s pods=%d\n", rc.Name, rc.NodePool,
				rc.InstanceType, rc.Offering.Zone, rc.Offering.CapacityType, rc.Offering.Price,
				strings.Join(rc.InstanceTypeOptions, ","), len(rc.Pods))
		}
		for _, m := range c.Moves {
			fmt.Fprintf(&b, "  move %d pods to %s\n", len(m.Pods), m.Name)
		}
		if len(c.Unplaced) > 0 {
			fmt.Fprintf(&b, "  unplaced %s\n", strings.Join(c.Unplaced, ","))
		}
		if len(c.OneAtATime) > 0 {
			fmt.Fprintf(&b, "  evict one at a time under PDB %s\n", strings.Join(c.OneAtATime, ","))
		}
	}
	for _, bl := range r.Blocked {
		fmt.Fprintf(&b, "keep %s (%s) %s [%s]: %s\n", bl.Node, bl.NodePool, bl.Code, bl.Object, bl.Message)
	}
	fmt.Fprintf(&b, "savings %.4f $/h\n", r.Savings)
	return b.String()
}

type scenario struct {
	name  string
	input func(t *testing.T) disruption.Input
	check func(t *testing.T, r disruption.Result)
}

func TestGolden(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			in := sc.input(t)
			r, err := disruption.Plan(context.Background(), in)
			if err != nil {
				t.Fatalf("Plan() error = %v", err)
			}
			checkInvariants(t, in, r)
			if sc.check != nil {
				sc.check(t, r)
			}
			got := render(r)
			path := filepath.Join("testdata", "golden", sc.name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("Plan() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func wantBlocked(t *testing.T, r disruption.Result, node string, code disruption.Code, object string) disruption.Blocked {
	t.Helper()
	b, ok := blockedOf(r, node)
	if !ok {
		c, _ := commandFor(r, node)
		t.Fatalf("node %s is not blocked; it is in command %+v", node, c)
	}
	if b.Code != code || (object != "" && b.Object != object) {
		t.Fatalf("node %s blocked with %s [%s] %q, want %s [%s]", node, b.Code, b.Object, b.Message, code, object)
	}
	return b
}

func wantCommand(t *testing.T, r disruption.Result, node string, reason nodeplan.DisruptionReason) disruption.Command {
	t.Helper()
	c, ok := commandFor(r, node)
	if !ok {
		b, _ := blockedOf(r, node)
		t.Fatalf("node %s is in no command; blocked %s: %s", node, b.Code, b.Message)
	}
	if c.Reason != reason {
		t.Fatalf("node %s disrupted for %s, want %s", node, c.Reason, reason)
	}
	return c
}

func scheduledZeroBudget(t *testing.T) nodeplan.Budget {
	s, err := nodeplan.ParseSchedule("0 9-18 * * 1-5")
	if err != nil {
		t.Fatal(err)
	}
	return nodeplan.Budget{Nodes: nodeplan.NodeCount{Value: 0}, Schedule: s, Duration: time.Hour}
}

func scenarios() []scenario {
	tenAt20 := func(t *testing.T) disruption.Input {
		var nodes []disruption.Node
		for i := range 10 {
			// 4 × 200m of an m5.xlarge's 3.92 cores: about 20%.
			nodes = append(nodes, newNode(t, fmt.Sprintf("n%02d", i), "m5.xlarge", "default",
				withPods(pods(fmt.Sprintf("web%02d", i), 4, "200m", "700Mi")...)))
		}
		return disruption.Input{Nodes: nodes, NodePools: []nodeplan.NodePool{pool("default", budget("100%"))},
			InstanceTypes: testCatalog(t), Now: t0}
	}
	budgetWindow := func(now time.Time) func(t *testing.T) disruption.Input {
		return func(t *testing.T) disruption.Input {
			in := tenAt20(t)
			in.Nodes = in.Nodes[:3]
			in.NodePools = []nodeplan.NodePool{pool("default", scheduledZeroBudget(t))}
			in.Now = now
			for i := range in.Nodes {
				in.Nodes[i].Pods = nil // empty: only the budget can hold them
			}
			return in
		}
	}
	return []scenario{
		{
			name:  "ten-nodes-at-20pct",
			input: tenAt20,
			check: func(t *testing.T, r disruption.Result) {
				gone := 0
				for _, c := range r.Commands {
					gone += len(c.Nodes) - len(c.Replacements)
				}
				if gone < 7 {
					t.Errorf("ten nodes at 20%%: %d fewer nodes after the pass, want at least 7", gone)
				}
			},
		},
		{
			name: "pdb-min-available-equals-replicas",
			input: func(t *testing.T) disruption.Input {
				in := tenAt20(t)
				in.Nodes = in.Nodes[:3]
				for i := range in.Nodes {
					in.Nodes[i].Pods = append(in.Nodes[i].Pods, newPod(fmt.Sprintf("db-%d", i), "100m", "128Mi", app("db")))
				}
				in.PDBs = append(in.PDBs, pdbMinAvailable("db", "db", 3))
				return in
			},
			check: func(t *testing.T, r disruption.Result) {
				for _, n := range []string{"n00", "n01", "n02"} {
					b := wantBlocked(t, r, n, disruption.CodePDB, "default/db")
					if !strings.Contains(b.Message, "PDB default/db allows 0") {
						t.Errorf("message %q does not name the PDB and its allowance", b.Message)
					}
				}
			},
		},
		{
			name:  "budget-zero-in-business-hours-monday-1000",
			input: budgetWindow(t0),
			check: func(t *testing.T, r disruption.Result) {
				if len(r.Commands) != 0 {
					t.Errorf("Monday 10:00: %d commands, want none", len(r.Commands))
				}
				b := wantBlocked(t, r, "n00", disruption.CodeBudget, "default/budgets[0]")
				if !strings.Contains(b.Message, `"0 9-18 * * 1-5"`) {
					t.Errorf("message %q does not name the schedule", b.Message)
				}
			},
		},
		{
			name:  "budget-zero-in-business-hours-monday-2000",
			input: budgetWindow(t0.Add(10 * time.Hour)),
			check: func(t *testing.T, r disruption.Result) {
				for _, n := range []string{"n00", "n01", "n02"} {
					wantCommand(t, r, n, nodeplan.ReasonEmpty)
				}
			},
		},
		{
			name: "do-not-disrupt-pod-and-node",
			input: func(t *testing.T) disruption.Input {
				in := tenAt20(t)
				in.Nodes = in.Nodes[:4]
				in.Nodes[0].Pods[0].Annotations[nodeplan.AnnotationDoNotDisrupt] = "true"
				in.Nodes[1].Node.Annotations[nodeplan.AnnotationDoNotDisrupt] = "true"
				// A duration counts from the pod's start (two days ago): 1h has run out, 72h has not.
				in.Nodes[2].Pods[0].Annotations[nodeplan.AnnotationDoNotDisrupt] = "72h"
				in.Nodes[3].Pods[0].Annotations[nodeplan.AnnotationDoNotDisrupt] = "1h"
				return in
			},
			check: func(t *testing.T, r disruption.Result) {
				wantBlocked(t, r, "n00", disruption.CodeDoNotDisruptPod, "default/web00-0")
				wantBlocked(t, r, "n01", disruption.CodeDoNotDisruptNode, "")
				wantBlocked(t, r, "n02", disruption.CodeDoNotDisruptPod, "default/web02-0")
				if _, ok := commandFor(r, "n03"); !ok {
					b, _ := blockedOf(r, "n03")
					t.Errorf("n03's pod protection ran out, yet it is blocked: %s %s", b.Code, b.Message)
				}
			},
		},
		{
			name: "like-for-like-refused",
			input: func(t *testing.T) disruption.Input {
				// The node was bought at an old, higher price; the same type is cheaper now.
				// Replacing it with another m5.large would be churn.
				np := pool("default", budget("100%"))
				np.Template.Requirements = np.Template.Requirements.Add(nodeplan.In(nodeplan.LabelInstanceType, "m5.large"))
				n := newNode(t, "n00", "m5.large", "default", withPrice(0.2), withPods(pods("web", 3, "500m", "1Gi")...))
				return disruption.Input{Nodes: []disruption.Node{n}, NodePools: []nodeplan.NodePool{np},
					InstanceTypes: testCatalog(t), Now: t0}
			},
			check: func(t *testing.T, r disruption.Result) {
				wantBlocked(t, r, "n00", disruption.CodeLikeForLike, "m5.large")
			},
		},
		{
			name: "drift-rollout-100-nodes-10pct",
			input: func(t *testing.T) disruption.Input {
				var nodes []disruption.Node
				for i := range 100 {
					nodes = append(nodes, newNode(t, fmt.Sprintf("n%03d", i), "m5.large", "default", drifted,
						withPods(newPod(fmt.Sprintf("web-%03d", i), "1", "2Gi"))))
				}
				return disruption.Input{Nodes: nodes, NodePools: []nodeplan.NodePool{pool("default", budget("10%"))},
					InstanceTypes: testCatalog(t), Now: t0}
			},
			check: func(t *testing.T, r disruption.Result) {
				replaced := 0
				for _, c := range r.Commands {
					if c.Reason != nodeplan.ReasonDrifted {
						t.Errorf("command for %s, want only Drifted", c.Reason)
					}
					replaced += len(c.Nodes)
				}
				if replaced != 10 {
					t.Errorf("drift rollout: %d nodes replaced in one pass, want 10", replaced)
				}
				budgetBlocked := 0
				for _, b := range r.Blocked {
					if b.Code == disruption.CodeBudget {
						budgetBlocked++
					}
				}
				if budgetBlocked != 90 {
					t.Errorf("%d nodes blocked by the budget, want 90", budgetBlocked)
				}
			},
		},
		{
			name: "eligibility",
			input: func(t *testing.T) disruption.Input {
				in := tenAt20(t)
				in.Nodes = in.Nodes[:6]
				in.Nodes[0].Initialized = time.Time{}
				in.Nodes[1].Nominated = true
				in.Nodes[2].LastPodEvent = t0.Add(-2 * time.Minute)
				in.Nodes[3].Pods[1].OwnerReferences = nil
				in.NodePools[0].Disruption.ConsolidateAfter = 5 * time.Minute
				in.Nodes[4].Disrupting = true
				return in
			},
			check: func(t *testing.T, r disruption.Result) {
				wantBlocked(t, r, "n00", disruption.CodeNotInitialized, "")
				wantBlocked(t, r, "n01", disruption.CodeNominated, "")
				wantBlocked(t, r, "n02", disruption.CodeConsolidateAfter, "default")
				wantBlocked(t, r, "n03", disruption.CodeUnreschedulable, "default/web03-1")
				wantBlocked(t, r, "n04", disruption.CodeDisrupting, "")
			},
		},
		{
			name: "three-nodes-a-third-used",
			input: func(t *testing.T) disruption.Input {
				// Three m5.2xlarge each a third used: one holds it all.
				var nodes []disruption.Node
				for i := range 3 {
					nodes = append(nodes, newNode(t, fmt.Sprintf("n%d", i), "m5.2xlarge", "default",
						withPods(pods(fmt.Sprintf("web%d", i), 2, "1200m", "4Gi")...)))
				}
				return disruption.Input{Nodes: nodes, NodePools: []nodeplan.NodePool{pool("default", budget("100%"))},
					InstanceTypes: testCatalog(t), Now: t0}
			},
			check: func(t *testing.T, r disruption.Result) {
				if r.Savings <= 0 {
					t.Errorf("savings %v, want positive", r.Savings)
				}
			},
		},
		{
			name: "replace-many-with-several",
			input: func(t *testing.T) disruption.Input {
				// Four r5.2xlarge (8 cpu, 64GiB) run two 3-cpu pods each: cheaper
				// compute nodes hold them, but no single node holds them all (M→N).
				var nodes []disruption.Node
				for i := range 4 {
					nodes = append(nodes, newNode(t, fmt.Sprintf("n%d", i), "r5.2xlarge", "default",
						withPods(pods(fmt.Sprintf("job%d", i), 2, "3", "2Gi")...)))
				}
				np := pool("default", budget("100%"))
				np.Template.Requirements = np.Template.Requirements.Add(nodeplan.In(nodeplan.LabelInstanceType,
					"c5.xlarge", "c5.2xlarge", "r5.2xlarge"))
				return disruption.Input{Nodes: nodes, NodePools: []nodeplan.NodePool{np}, InstanceTypes: testCatalog(t), Now: t0}
			},
			check: func(t *testing.T, r disruption.Result) {
				mton := false
				for _, c := range r.Commands {
					mton = mton || (len(c.Nodes) > 1 && len(c.Replacements) > 1)
				}
				if !mton {
					t.Errorf("no command replaces several nodes by several:\n%s", render(r))
				}
			},
		},
		{
			name: "spot-to-spot-needs-flexibility",
			input: func(t *testing.T) disruption.Input {
				np := pool("default", budget("100%"))
				np.Template.Requirements = nodeplan.NewRequirements(
					nodeplan.In(nodeplan.LabelCapacityType, "spot"),
					nodeplan.In(nodeplan.LabelInstanceType, "m5.large", "m5.xlarge", "m5.2xlarge", "c5.large", "c5.xlarge"))
				n := newNode(t, "n0", "m5.2xlarge", "default", spot, withPods(pods("web", 2, "500m", "1Gi")...))
				return disruption.Input{Nodes: []disruption.Node{n}, NodePools: []nodeplan.NodePool{np},
					InstanceTypes: testCatalog(t), Now: t0}
			},
			check: func(t *testing.T, r disruption.Result) {
				wantBlocked(t, r, "n0", disruption.CodeSpotFlexibility, "")
			},
		},
		{
			name: "interruption-and-expiry",
			input: func(t *testing.T) disruption.Input {
				in := tenAt20(t)
				in.Nodes = in.Nodes[:4]
				in.NodePools[0] = pool("default", budget("0"))
				in.NodePools[0].Template.ExpireAfter = 720 * time.Hour
				in.Nodes[0].Interruption = &disruption.Interruption{Kind: "SpotInterruption", Deadline: t0.Add(2 * time.Minute)}
				in.Nodes[1].Created = t0.Add(-721 * time.Hour)
				in.Nodes[1].Pods[0].Annotations[nodeplan.AnnotationDoNotDisrupt] = "true"
				return in
			},
			check: func(t *testing.T, r disruption.Result) {
				if c := wantCommand(t, r, "n00", nodeplan.ReasonInterrupted); c.Mode != disruption.ModeImmediate {
					t.Errorf("interruption command's mode is %q, want %q", c.Mode, disruption.ModeImmediate)
				}
				if c := wantCommand(t, r, "n01", nodeplan.ReasonExpired); c.Mode != disruption.ModeForceful {
					t.Errorf("expiration command's mode is %q, want %q", c.Mode, disruption.ModeForceful)
				}
				wantBlocked(t, r, "n02", disruption.CodeBudget, "default/budgets[0]")
			},
		},
		{
			name: "expiry-within-budget",
			input: func(t *testing.T) disruption.Input {
				in := tenAt20(t)
				in.Nodes = in.Nodes[:4]
				in.NodePools[0] = pool("default", budget("1"))
				in.NodePools[0].Template.ExpireAfter = 720 * time.Hour
				for i := range in.Nodes {
					in.Nodes[i].Created = t0.Add(-800 * time.Hour)
				}
				in.Options.ExpirationHonorsBudgets = true
				return in
			},
			check: func(t *testing.T, r disruption.Result) {
				if len(r.Commands) != 1 || len(r.Commands[0].Nodes) != 1 {
					t.Fatalf("expiry within a budget of 1: %d commands, want 1 of 1 node", len(r.Commands))
				}
				wantBlocked(t, r, "n01", disruption.CodeBudget, "default/budgets[0]")
			},
		},
	}
}
