package kubesched

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
	"github.com/nodeplan/nodeplan/scheduling"
)

// seedsEnv sets how many random inputs TestPlansBind runs; the default is a short run that fits
// the default test run's budget.
const seedsEnv = "NODEPLAN_KUBESCHED_SEEDS"

const (
	shortSeeds = 3
	shortPods  = 120
)

// seeds returns the seeds to run and the pods per case (0: drawn per seed).
func seeds(t *testing.T) (n, pods int) {
	if v := os.Getenv(seedsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number of seeds", seedsEnv, v)
		}
		return n, 0
	}
	return shortSeeds, shortPods
}

// tally sums a run's figures for the summary line.
type tally struct {
	seeds, pods, planned, nodes, daemonPods, refused, refusedDaemon, unplaced int
	unpinnedBound, unpinnedTotal                                              int
}

// TestPlansBind is the differential test: random clusters solved by nodeplan, the planned
// nodes registered as Nodes, and every pod the plan places submitted to a real kube-scheduler
// restricted to the pod's planned node. Every one must bind.
func TestPlansBind(t *testing.T) {
	n, pods := seeds(t)
	catalog := sim.Catalog()
	var sum tally
	for seed := range uint64(n) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			c := Generate(seed, catalog, Config{Pods: pods})
			runCase(t, c, &sum)
		})
	}
	t.Logf("kube-scheduler differential: %d seeds, %d pods (%d planned onto %d nodes, %d left unplaced by the plan), %d DaemonSet pods; refused: %d pods, %d DaemonSet pods",
		sum.seeds, sum.pods, sum.planned, sum.nodes, sum.unplaced, sum.daemonPods, sum.refused, sum.refusedDaemon)
	if sum.unpinnedTotal > 0 {
		t.Logf("unpinned pass (information): kube-scheduler bound %d of %d planned pods onto the planned nodes when free to choose", sum.unpinnedBound, sum.unpinnedTotal)
	}
}

// shapePods returns the pods as the API server returns them.
func shapePods(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		out[i] = Shape(p, fmt.Sprintf("uid-%d", i))
	}
	return out
}

func runCase(t *testing.T, c Case, sum *tally) {
	ctx := t.Context()
	in := c.Input
	in.Pods = shapePods(in.Pods)
	res, err := scheduling.Solve(ctx, in)
	if err != nil {
		t.Fatalf("Solve: %v", err)
	}
	nodes, err := NodesFromPlan(res, Catalog(in.InstanceTypes), "node")
	if err != nil {
		t.Fatal(err)
	}
	planned := map[string]string{}
	for _, n := range nodes {
		for _, k := range n.Pods {
			planned[k] = n.Node.Name
		}
	}
	sum.seeds++
	sum.pods += len(in.Pods)
	sum.planned += len(planned)
	sum.nodes += len(nodes)
	sum.unplaced += len(res.Unschedulable)

	out, daemons := bindPlan(t, in, nodes, planned, true)
	sum.daemonPods += daemons.total
	sum.refusedDaemon += len(daemons.refused)
	for _, k := range slices.Sorted(maps.Keys(daemons.refused)) {
		t.Errorf("DaemonSet pod %s refused by kube-scheduler: %s", k, daemons.refused[k])
	}
	refused := 0
	for _, k := range slices.Sorted(maps.Keys(planned)) {
		if got, ok := out.Bound[k]; ok {
			if got != planned[k] {
				t.Errorf("pod %s bound to %s, planned on %s", k, got, planned[k])
			}
			continue
		}
		refused++
		t.Errorf("pod %s planned on %s (%s) refused by kube-scheduler: %s", k, planned[k], describeNode(nodes, planned[k]), out.Unbound[k])
	}
	sum.refused += refused
	if refused > 0 {
		t.Logf("seed %d: %d of %d planned pods refused; plan: %s", c.Seed, refused, len(planned), describePlan(res))
	}
	if os.Getenv("NODEPLAN_KUBESCHED_UNPINNED") == "1" {
		free, _ := bindPlan(t, in, nodes, planned, false)
		sum.unpinnedTotal += len(planned)
		sum.unpinnedBound += len(free.Bound)
	}
}

type daemonOutcome struct {
	total   int
	refused map[string]string
}

// bindPlan registers the planned nodes in a fresh cluster with a real kube-scheduler, lets the
// DaemonSet pods bind first (as they do when a node joins), then submits the planned pods —
// pinned to their planned nodes, or free when pin is false — and waits for them.
func bindPlan(t *testing.T, in scheduling.Input, nodes []PlannedNode, planned map[string]string, pin bool) (Outcome, daemonOutcome) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cl, err := StartCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Stop()
	var daemonKeys []string
	for _, n := range nodes {
		if err := cl.AddNodes(ctx, n.Node); err != nil {
			t.Fatal(err)
		}
		for _, p := range DaemonPods(n.Node, in.DaemonSets) {
			p = Shape(p, "ds-"+p.Name)
			daemonKeys = append(daemonKeys, nodeplan.PodKey(p))
			if err := cl.AddPods(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	dout, err := cl.Wait(ctx, daemonKeys, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range in.Pods {
		k := nodeplan.PodKey(p)
		node, ok := planned[k]
		if !ok {
			continue
		}
		keys = append(keys, k)
		if err := cl.AddPods(ctx, submitted(p, node, pin)); err != nil {
			t.Fatal(err)
		}
	}
	out, err := cl.Wait(ctx, keys, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Unbound) > 0 {
		// The scheduler tried these pods in some order while the others bound. Submit them
		// afresh now that every other pod is in place, so a refusal is the final state's and
		// not an artefact of the order the scheduler happened to take them in.
		out, err = retry(ctx, cl, in.Pods, out, planned, pin)
		if err != nil {
			t.Fatal(err)
		}
	}
	return out, daemonOutcome{total: len(daemonKeys), refused: dout.Unbound}
}

func describeNode(nodes []PlannedNode, name string) string {
	for _, n := range nodes {
		if n.Node.Name != name {
			continue
		}
		l := n.Node.Labels
		return fmt.Sprintf("%s %s %s pool %s, allocatable cpu %s memory %s pods %s, taints %v",
			l[nodeplan.LabelInstanceType], l[nodeplan.LabelZone], l[nodeplan.LabelCapacityType], l[nodeplan.LabelNodePool],
			n.Node.Status.Allocatable.Cpu(), n.Node.Status.Allocatable.Memory(), n.Node.Status.Allocatable.Pods(), n.Node.Spec.Taints)
	}
	return "unknown node"
}

func describePlan(res scheduling.Result) string {
	var b strings.Builder
	for i, c := range res.NodeClaims {
		fmt.Fprintf(&b, "\n  node-%d %s %s %s: %s", i, c.InstanceType, c.Offering.Zone, c.Offering.CapacityType, strings.Join(c.Pods, " "))
	}
	return b.String()
}

// submitted is the pod as the test creates it: pinned to its planned node when pin is set.
func submitted(p *corev1.Pod, node string, pin bool) *corev1.Pod {
	p = p.DeepCopy()
	p.ResourceVersion = ""
	if pin {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[AnnotationPlannedNode] = node
	}
	return p
}

// retry deletes the unbound pods of out and creates them again, and waits for them.
func retry(ctx context.Context, cl *Cluster, pods []*corev1.Pod, out Outcome, planned map[string]string, pin bool) (Outcome, error) {
	keys := slices.Sorted(maps.Keys(out.Unbound))
	if err := cl.Evict(ctx, keys...); err != nil {
		return out, err
	}
	for _, p := range pods {
		k := nodeplan.PodKey(p)
		if _, ok := out.Unbound[k]; ok {
			if err := cl.AddPods(ctx, submitted(p, planned[k], pin)); err != nil {
				return out, err
			}
		}
	}
	again, err := cl.Wait(ctx, keys, 3*time.Second)
	if err != nil {
		return out, err
	}
	maps.Copy(out.Bound, again.Bound)
	out.Unbound = again.Unbound
	return out, nil
}
