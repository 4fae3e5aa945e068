package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	fakecr "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/fake"
	kprov "sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/events"
	"sigs.k8s.io/karpenter/pkg/operator/injection"
	"sigs.k8s.io/karpenter/pkg/operator/options"
	kscheduling "sigs.k8s.io/karpenter/pkg/scheduling"

	"github.com/nodeplan/nodeplan/benchmarks/internal/measure"
	"github.com/nodeplan/nodeplan/benchmarks/suite"
)

// karpenterContext carries what Karpenter's scheduler reads from its context: the controller
// name and the operator options, set as Karpenter's provisioner runs by default (preferences
// respected, minValues strict, DRA requests ignored, reserved capacity on).
func karpenterContext(ctx context.Context) context.Context {
	return options.ToContext(injection.WithControllerName(ctx, "provisioner"), &options.Options{
		CPURequests:       1000,
		BatchMaxDuration:  10 * time.Second,
		BatchIdleDuration: time.Second,
		PreferencePolicy:  options.PreferencePolicyRespect,
		MinValuesPolicy:   options.MinValuesPolicyStrict,
		IgnoreDRARequests: true,
		FeatureGates:      options.FeatureGates{ReservedCapacity: true},
	})
}

// solve runs one scheduling simulation the way Karpenter's provisioner does, against a fake
// API server with no nodes: build the cluster state and the topology, make a scheduler over
// the pools, and Solve the pods. It counts every step, as every provisioning loop pays for it.
func (p *problem) solve(ctx context.Context, concurrency int) (kprov.Results, error) {
	kube := fakecr.NewFakeClient()
	clk := clock.RealClock{}
	cluster := state.NewCluster(clk, kube, fake.NewCloudProvider())
	pods := slices.Clone(p.pods) // Solve sorts its argument in place
	topo, err := kprov.NewTopology(ctx, kube, cluster, nil, p.pools, p.types, pods)
	if err != nil {
		return kprov.Results{}, fmt.Errorf("karpenter: NewTopology: %w", err)
	}
	s := kprov.NewScheduler(ctx, kube, p.pools, cluster, nil, topo, p.types, p.daemons,
		events.NewRecorder(&record.FakeRecorder{}), clk, nil, nil, kprov.NumConcurrentReconciles(concurrency))
	res, err := s.Solve(ctx, pods)
	if err != nil {
		return res, fmt.Errorf("karpenter: Solve: %w", err)
	}
	return res, nil
}

// claimPrice is what Karpenter's AWS provider would pay for a claim: it launches the cheapest
// available offering, compatible with the claim's requirements (zone, capacity type), among
// the claim's instance-type options (CreateFleet with lowest-price allocation; for spot, the
// cheapest offering stands in for price-capacity-optimized). ok is false for a claim with no
// such offering.
func claimPrice(nc *kprov.NodeClaim) (price float64, typ string, ok bool) {
	price = math.Inf(1)
	for _, it := range nc.InstanceTypeOptions {
		for _, o := range it.Offerings {
			if !o.Available || !nc.Requirements.IsCompatible(o.Requirements, kscheduling.AllowUndefinedWellKnownLabels) {
				continue
			}
			if o.Price < price || (o.Price == price && it.Name < typ) {
				price, typ, ok = o.Price, it.Name, true
			}
		}
	}
	return price, typ, ok
}

// runKarpenter measures Karpenter on sc. lowerBound is nodeplan's bound for the scenario, the
// yardstick both solvers are held to. A run that reaches timeout is reported with the pods it
// had not placed by then, and is not repeated.
func runKarpenter(ctx context.Context, sc suite.Scenario, p *problem, o measure.Options, timeout time.Duration, concurrency int, lowerBound float64) (measure.Result, error) {
	var res kprov.Results
	timedOut := false
	t, err := measure.Repeat(ctx, o, func(ctx context.Context) error {
		if timedOut {
			return nil
		}
		ctx, cancel := context.WithTimeout(karpenterContext(ctx), timeout)
		defer cancel()
		var err error
		res, err = p.solve(ctx, concurrency)
		if ctx.Err() != nil {
			timedOut = true
			if errors.Is(err, context.DeadlineExceeded) {
				err = nil
			}
		}
		return err
	})
	if err != nil {
		return measure.Result{}, fmt.Errorf("karpenter on %s: %w", sc.Name, err)
	}
	if timedOut {
		t.Runs = 1 // later calls returned at once and do not count
	}
	r := measure.Result{
		Scenario: sc.Name, Family: sc.Family, Pods: len(sc.Input.Pods), Solver: "karpenter",
		LowerBound: lowerBound, Nodes: len(res.NewNodeClaims), Timing: t,
	}
	placed := 0
	unpriced := 0
	for _, nc := range res.NewNodeClaims {
		placed += len(nc.Pods)
		price, _, ok := claimPrice(nc)
		if !ok {
			unpriced++
			continue
		}
		r.Cost += price
	}
	r.Unplaced = len(sc.Input.Pods) - placed
	switch {
	case timedOut:
		r.CutOff = true
		r.Note = fmt.Sprintf("stopped at the %v limit with %d pods not yet placed", timeout, r.Unplaced)
	case len(res.PodErrors) > 0:
		for pod, err := range res.PodErrors {
			r.Note = fmt.Sprintf("%d pods failed, e.g. %s/%s: %v", len(res.PodErrors), pod.Namespace, pod.Name, err)
			break
		}
	}
	if unpriced > 0 {
		r.Note += fmt.Sprintf("; %d claims had no compatible offering", unpriced)
	}
	return r, nil
}
