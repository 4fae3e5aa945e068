package main

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// The figure a user takes to a budget meeting: what the nodes NodePools manage cost now, and
// what the same pods would cost on nodes planned from scratch, next to the lower bound no plan
// can beat. Nodes no NodePool manages (a managed node group, the control plane) stay as they
// are in both, with their pods: they are not the autoscaler's to replace.

// comparisonReport is provision's "now versus re-planned" figure.
type comparisonReport struct {
	// CurrentNodes and CurrentCost are the managed nodes and their $/h (per-node cost included).
	CurrentNodes int     `json:"currentNodes"`
	CurrentCost  float64 `json:"currentCost"`
	// Unpriced lists managed nodes whose offering the catalog lacks; CurrentCost leaves them out.
	Unpriced []string `json:"unpriced"`
	// WithPlanNodes and WithPlanCost add the nodes this plan launches for the pending pods: what
	// the cluster costs once it is carried out.
	WithPlanNodes int     `json:"withPlanNodes"`
	WithPlanCost  float64 `json:"withPlanCost"`
	// ReplannedNodes and ReplannedCost are the nodes a plan from scratch launches for every pod
	// now on a managed node and every pending pod; LowerBound is a $/h no such plan beats.
	ReplannedNodes int     `json:"replannedNodes"`
	ReplannedCost  float64 `json:"replannedCost"`
	LowerBound     float64 `json:"lowerBound"`
	// Unplaced counts pods the plan from scratch could not place.
	Unplaced int `json:"unplaced"`
}

// compare plans the managed part of the cluster from scratch. It returns nil when no node is
// managed: there is nothing to compare.
func compare(ctx context.Context, snap *snapshot, opts scheduling.Options, plan scheduling.Result) (*comparisonReport, error) {
	rep := &comparisonReport{Unpriced: []string{}}
	in := scheduling.Input{
		Pods:              append([]*corev1.Pod(nil), snap.pending...),
		NodePools:         snap.pools,
		InstanceTypes:     snap.catalog,
		PoolInstanceTypes: snap.poolCatalog,
		DaemonSets:        snap.daemonSets,
		Options:           opts,
	}
	for _, n := range snap.nodes {
		if n.pool == "" {
			in.Nodes = append(in.Nodes, scheduling.Node{Node: n.node, Pods: n.pods})
			continue
		}
		rep.CurrentNodes++
		if price := catalogPrice(snap.catalog, n.instanceType, n.zone, n.capacityType); price > 0 {
			rep.CurrentCost += price + opts.NodeCost.For(n.pool)
		} else {
			rep.Unpriced = append(rep.Unpriced, n.node.Name)
		}
		for _, p := range n.pods {
			if nodeplan.DaemonSetOf(p) == "" {
				in.Pods = append(in.Pods, p)
			}
		}
	}
	if rep.CurrentNodes == 0 {
		return nil, nil
	}
	res, err := scheduling.Solve(ctx, in)
	if err != nil {
		return nil, err
	}
	rep.ReplannedNodes = len(res.NodeClaims)
	rep.ReplannedCost = roundPrice(res.Cost)
	rep.LowerBound = roundPrice(res.LowerBound)
	rep.WithPlanNodes = rep.CurrentNodes + len(plan.NodeClaims)
	rep.WithPlanCost = roundPrice(rep.CurrentCost + plan.Cost)
	rep.CurrentCost = roundPrice(rep.CurrentCost)
	rep.Unplaced = len(res.Unschedulable)
	return rep, nil
}

// writeText prints the comparison as a sentence or two.
func (c *comparisonReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "COMPARISON\nyour %d managed nodes cost %s/h", c.CurrentNodes, dollars(c.CurrentCost))
	if len(c.Unpriced) > 0 {
		fmt.Fprintf(w, " (%d not in the catalog, not counted: %s)", len(c.Unpriced), abbreviate(c.Unpriced, 3))
	}
	fmt.Fprintf(w, ", %s/h with the nodes this plan adds (%d nodes);\nplanned from scratch, the same pods fit on %d nodes costing %s/h; lower bound %s/h", dollars(c.WithPlanCost), c.WithPlanNodes, c.ReplannedNodes, dollars(c.ReplannedCost), dollars(c.LowerBound))
	if c.Unplaced > 0 {
		fmt.Fprintf(w, " (%d pods could not be placed in that plan)", c.Unplaced)
	}
	fmt.Fprintf(w, "\n\n")
}

// writeNoticesText prints the assumptions behind the inputs before a text report.
func writeNoticesText(w io.Writer, notices []string) {
	for _, n := range notices {
		fmt.Fprintf(w, "NOTE: %s\n", n)
	}
	if len(notices) > 0 {
		fmt.Fprintln(w)
	}
}
