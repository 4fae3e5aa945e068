package kubesched

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
)

// TestDisruptionMovesBind is the differential test for the disruption planner: a random
// cluster provisioned by nodeplan and bound by kube-scheduler, scaled down by about half, then
// one disruption.Plan pass; its commands carried out (replacements registered as modelled,
// candidates tainted, their pods evicted and recreated). Every moved pod must bind on the
// destination the plan gave it.
func TestDisruptionMovesBind(t *testing.T) {
	first, n, pods := seeds(t)
	catalog := sim.Catalog()
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	var seedsRun, commands, moved, refused, replacements, waiting int
	known := map[string]int{}
	for seed := first; seed < first+n; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			ctx := t.Context()
			c := Generate(seed, catalog, Config{Pods: pods})
			rep, err := Plan(ctx, c.Input)
			if err != nil {
				t.Fatal(err)
			}
			cl, err := StartCluster(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Stop()
			if err := cl.Provision(ctx, &rep, Options{}); err != nil {
				t.Fatal(err)
			}
			// Pods the provisioning pass could not bind are TestPlansBind's business; here
			// they are removed so the cluster is one kube-scheduler built.
			if _, err := cl.ScaleDown(ctx, slices.Collect(maps.Keys(rep.Refused)), func(string) bool { return true }); err != nil {
				t.Fatal(err)
			}
			gone, err := cl.ScaleDown(ctx, slices.Collect(maps.Keys(rep.Bound)), func(k string) bool { return hash(seed, k)%2 == 0 })
			if err != nil {
				t.Fatal(err)
			}
			state, err := cl.ClusterState(ctx, c.Input.NodePools, Catalog(rep.Input.InstanceTypes), now)
			if err != nil {
				t.Fatal(err)
			}
			din := disruptionInput(state, rep.Input, now)
			plan, err := disruption.Plan(ctx, din)
			if err != nil {
				t.Fatalf("disruption.Plan: %v", err)
			}
			byKey := map[string]*corev1.Pod{}
			for _, p := range rep.Input.Pods {
				byKey[nodeplan.PodKey(p)] = p
			}
			d, err := cl.ApplyDisruption(ctx, plan, byKey, din)
			if err != nil {
				t.Fatal(err)
			}
			seedsRun++
			commands += len(plan.Commands)
			moved += len(d.Moved)
			refused += len(d.Refused)
			replacements += d.Replacements
			for _, b := range plan.Blocked {
				if b.Code == disruption.CodeDependsOnPass {
					waiting++
				}
			}
			for _, k := range slices.Sorted(maps.Keys(d.DaemonRefused)) {
				t.Errorf("DaemonSet pod %s on a replacement refused by kube-scheduler: %s", k, d.DaemonRefused[k])
			}
			bound := maps.Clone(d.Bound)
			for _, n := range state {
				for _, p := range n.Pods {
					if _, moved := d.Moved[nodeplan.PodKey(p)]; !moved {
						bound[nodeplan.PodKey(p)] = n.Name()
					}
				}
			}
			for _, k := range slices.Sorted(maps.Keys(d.Refused)) {
				report := t.Errorf
				class := classify(rep.Input.Pods, d.Moved, bound, k, d.Refused[k])
				if knownOpen[class] {
					report = t.Logf
					known[class]++
				}
				t.Log(domainCounts(state, plan, d.Moved, byKey, k))
				report("moved pod %s planned on %s refused by kube-scheduler [%s]: %s", k, d.Moved[k], cmp.Or(class, "new"), d.Refused[k])
			}
			for k, node := range d.Bound {
				if node != d.Moved[k] {
					t.Errorf("moved pod %s bound to %s, planned on %s", k, node, d.Moved[k])
				}
			}
			if len(d.Refused) > 0 {
				for _, cmd := range plan.Commands {
					t.Logf("command %s %s nodes %v → %d replacements, moves %v", cmd.Action, cmd.Reason, cmd.Nodes, len(cmd.Replacements), cmd.Moves)
				}
			}
			t.Logf("%d pods scaled down; %d commands moving %d pods (%d replacements)", len(gone), len(plan.Commands), len(d.Moved), d.Replacements)
		})
	}
	t.Logf("disruption differential: %d seeds, %d commands, %d pods moved (%d replacement nodes), %d nodes waiting on the pass's own moves (DependsOnPass); refused: %d",
		seedsRun, commands, moved, replacements, waiting, refused)
	if len(known) > 0 {
		t.Logf("of the refusals, known open differences (FINDINGS.md): %v", known)
	}
}

func hash(seed uint64, k string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", seed, k)
	return h.Sum64()
}

// domainCounts explains a refused moved pod: for each of its spread constraints and required
// affinity terms, the pods the selector matches per domain before the plan and once every
// command is carried out (a moved pod tagged with its command, source and destination), and
// which nodes each zone holds ("gone": a command removes it).
func domainCounts(state []disruption.Node, plan disruption.Result, moved map[string]string, byKey map[string]*corev1.Pod, key string) string {
	var b strings.Builder
	p := byKey[key]
	zoneOf := map[string]string{}
	gone := map[string]bool{}
	cmdOf := map[string]int{}
	for ci, c := range plan.Commands {
		for _, n := range c.Nodes {
			gone[n] = true
		}
		for _, k := range c.Pods {
			cmdOf[k] = ci
		}
	}
	before := map[string]string{}
	for _, n := range state {
		zoneOf[n.Name()] = n.Zone
		for _, q := range n.Pods {
			before[nodeplan.PodKey(q)] = n.Name()
		}
	}
	for ci, c := range plan.Commands {
		for ri, rc := range c.Replacements {
			zoneOf[fmt.Sprintf("replacement-%d-%d", ci, ri)] = rc.Offering.Zone
		}
	}
	after := map[string]string{}
	for k, n := range before {
		if _, ok := cmdOf[k]; !ok {
			after[k] = n
		}
	}
	for k, n := range moved {
		after[k] = n
	}
	fmt.Fprintf(&b, "pod %s labels %v from %s (cmd %d) to %s (zone %s)\n", key, p.Labels, before[key], cmdOf[key], moved[key], zoneOf[moved[key]])
	show := func(sel labels.Selector, ns, tk string) {
		for _, phase := range []struct {
			name string
			at   map[string]string
		}{{"before", before}, {"after", after}} {
			counts := map[string][]string{}
			for k, n := range phase.at {
				q := byKey[k]
				if q == nil || q.Namespace != ns || !sel.Matches(labels.Set(q.Labels)) {
					continue
				}
				d := n
				if tk == nodeplan.LabelZone {
					d = zoneOf[n]
				}
				tag := k
				if ci, ok := cmdOf[k]; ok {
					tag += fmt.Sprintf("(cmd%d %s→%s)", ci, before[k], moved[k])
				}
				counts[d] = append(counts[d], tag)
			}
			fmt.Fprintf(&b, "  %s:\n", phase.name)
			for _, d := range slices.Sorted(maps.Keys(counts)) {
				slices.Sort(counts[d])
				fmt.Fprintf(&b, "    %s %d %v\n", d, len(counts[d]), counts[d])
			}
		}
	}
	for _, c := range p.Spec.TopologySpreadConstraints {
		sel, _ := metav1.LabelSelectorAsSelector(c.LabelSelector)
		fmt.Fprintf(&b, " spread %s %s maxSkew %d\n", c.TopologyKey, sel, c.MaxSkew)
		show(sel, p.Namespace, c.TopologyKey)
	}
	for _, t := range requiredAffinity(p) {
		sel, _ := metav1.LabelSelectorAsSelector(t.LabelSelector)
		fmt.Fprintf(&b, " affinity %s %s\n", t.TopologyKey, sel)
		show(sel, p.Namespace, t.TopologyKey)
	}
	zones := map[string][]string{}
	for n, z := range zoneOf {
		tag := n
		if gone[n] {
			tag += "(gone)"
		}
		zones[z] = append(zones[z], tag)
	}
	for _, z := range slices.Sorted(maps.Keys(zones)) {
		slices.Sort(zones[z])
		fmt.Fprintf(&b, " zone %s: %v\n", z, zones[z])
	}
	return b.String()
}
