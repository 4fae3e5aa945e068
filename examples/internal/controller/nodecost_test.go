package controller_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodeplan/nodeplan/disruption"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
	"github.com/nodeplan/nodeplan/pricing"
	"github.com/nodeplan/nodeplan/scheduling"
)

// setRootVolume gives the lab's EC2NodeClass one EBS root volume, as `kubectl edit
// ec2nodeclass` would.
func (h *harness) setRootVolume(size, typ string, iops int64) {
	h.t.Helper()
	ctx := context.Background()
	if err := sim.Apply(ctx, h.w.Dynamic, sim.NodePoolsYAML()); err != nil {
		h.t.Fatal(err)
	}
	res := h.w.Dynamic.Resource(controller.EC2NodeClassGVR)
	u, err := res.Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	ebs := map[string]any{"volumeSize": size, "volumeType": typ, "iops": iops}
	if err := unstructured.SetNestedSlice(u.Object, []any{map[string]any{"deviceName": "/dev/xvda", "rootVolume": true, "ebs": ebs}},
		"spec", "blockDeviceMappings"); err != nil {
		h.t.Fatal(err)
	}
	if _, err := res.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// nodeCostSeen records the NodeCost each solve and each disruption plan was given.
type nodeCostSeen struct {
	mu           sync.Mutex
	solve, plan  []scheduling.NodeCost
	solveResults []scheduling.Result
}

// startSeeingNodeCost starts controller "a" on the cluster's objects, configured by mutate,
// with the node classes wired for volume pricing, and records what its solves and plans get.
func (h *harness) startSeeingNodeCost(mutate func(*controller.Controller)) *nodeCostSeen {
	seen := &nodeCostSeen{}
	var classes controller.NodeClasses
	h.startOnCluster("a", func(c *controller.Controller) {
		mutate(c)
		seen.wire(c, &classes)
	})
	return seen
}

func (s *nodeCostSeen) wire(c *controller.Controller, classes *controller.NodeClasses) {
	c.NodePools.(*controller.ClusterNodePools).OnClasses = classes.Set
	c.NodeClass = classes.Get
	c.Solve = func(ctx context.Context, in scheduling.Input) (scheduling.Result, error) {
		res, err := scheduling.Solve(ctx, in)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.solve = append(s.solve, in.Options.NodeCost)
		s.solveResults = append(s.solveResults, res)
		return res, err
	}
	c.Planner = controller.PlanFunc(func(ctx context.Context, in disruption.Input) (disruption.Result, error) {
		s.mu.Lock()
		s.plan = append(s.plan, in.Options.Scheduling.NodeCost)
		s.mu.Unlock()
		return disruption.Plan(ctx, in)
	})
}

func (s *nodeCostSeen) last() (solve, plan *scheduling.NodeCost, res scheduling.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.solve); n > 0 {
		solve, res = &s.solve[n-1], s.solveResults[n-1]
	}
	if n := len(s.plan); n > 0 {
		plan = &s.plan[n-1]
	}
	return solve, plan, res
}

// TestNodeCostReachesSolveAndPlan: the controller's per-node cost, and the price of the EBS
// volume its pool's EC2NodeClass attaches to every node (100Gi gp3 with 6,000 IOPS: $8 of
// storage and $15 of IOPS a month), reach both the solver and the disruption planner, and
// the solve's log line reports the nodes' part of the cost beside the node count.
func TestNodeCostReachesSolveAndPlan(t *testing.T) {
	h := newHarness(t)
	h.setRootVolume("100Gi", "gp3", 6000)
	seen := h.startSeeingNodeCost(func(c *controller.Controller) { c.NodeCost = scheduling.NodeCost{PerNode: 0.004} })
	h.deploy("web", 3, 0)
	want := scheduling.NodeCost{PerNode: 0.004, Pools: map[string]float64{"default": (8.0 + 15.0) / pricing.HoursPerMonth}}
	h.until(2*time.Minute, "a solve and a disruption plan", func() bool {
		solve, plan, res := seen.last()
		return solve != nil && plan != nil && len(res.NodeClaims) > 0
	})
	solve, plan, res := seen.last()
	approx := cmpopts.EquateApprox(0, 1e-12)
	if diff := cmp.Diff(want, *solve, approx); diff != "" {
		t.Errorf("Solve's Options.NodeCost (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, *plan, approx); diff != "" {
		t.Errorf("Plan's Options.Scheduling.NodeCost (-want +got):\n%s", diff)
	}
	perNode := want.For("default")
	if got, n := res.NodeCost, float64(len(res.NodeClaims)); got < n*perNode-1e-9 || got > n*perNode+1e-9 {
		t.Errorf("the solve's NodeCost = %v for %v claims, want %v each", got, n, perNode)
	}
	line := fmt.Sprintf("nodeclaims=%d cost=%v node-cost=%v", len(res.NodeClaims), res.Cost, res.NodeCost)
	if logs := h.logs.String(); !strings.Contains(logs, `msg="found provisionable pod(s)" replica=a pods=3 `+line) {
		t.Errorf("no solve line with %s:\n%s", line, logs)
	}
}

// TestUnpriceableVolumeLaunchesNothing: a node class whose volume type the EBS prices do not
// price is an error naming the class and the mapping, and its pool launches nothing — its
// nodes are never taken as free of that cost.
func TestUnpriceableVolumeLaunchesNothing(t *testing.T) {
	h := newHarness(t)
	h.setRootVolume("100Gi", "io2", 3000)
	seen := h.startSeeingNodeCost(func(c *controller.Controller) {
		c.EBSPrices = pricing.EBSPrices{PerGiBMonth: map[string]float64{"gp3": 0.08}}
	})
	h.deploy("web", 1, 0)
	const want = `could not price the node class's volumes" replica=a nodepool=default err="ec2: EC2NodeClass default blockDeviceMappings[0] (/dev/xvda): pricing: no EBS price for volume type \"io2\""`
	h.until(time.Minute, "the pricing error", func() bool { return strings.Contains(h.logs.String(), want) })
	_, _, res := seen.last()
	if len(res.NodeClaims) != 0 || len(h.instances()) != 0 {
		t.Errorf("launched for a pool whose volumes are unpriced: claims %v, instances %d", res.NodeClaims, len(h.instances()))
	}
}
