package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nodeplan/nodeplan/scheduling"
)

// provisionReport is what provision -o json prints. Every slice is present (empty rather than
// null) and in the solver's stable order.
type provisionReport struct {
	typeMeta
	NodeClaims    []claimReport     `json:"nodeClaims"`
	ExistingNodes []placementReport `json:"existingNodes"`
	// InFlightNodeClaims are pending pods placed on NodeClaims launched but not registered.
	InFlightNodeClaims []inFlightReport      `json:"inFlightNodeClaims"`
	Unschedulable      []unschedulableReport `json:"unschedulable"`
	// TotalPrice is the $/h of the new nodes; LowerBound a $/h no plan can beat.
	TotalPrice float64 `json:"totalPrice"`
	// NodeCost is the part of TotalPrice the nodes cost beyond their instances: --node-cost
	// and their EC2NodeClasses' volumes, per node.
	NodeCost   float64 `json:"nodeCost"`
	LowerBound float64 `json:"lowerBound"`
	// SolveSeconds is the time spent inside scheduling.Solve.
	SolveSeconds float64 `json:"solveSeconds"`
	// Comparison, when NodePools manage some of the nodes, is what they cost now against the
	// same pods planned from scratch.
	Comparison *comparisonReport `json:"comparison,omitempty"`
	// Notices are assumptions made to build the inputs (a catalog built offline, another
	// region's prices); people must see them before trusting the figures.
	Notices []string `json:"notices"`
}

// claimReport is one node to launch, costed at its cheapest option.
type claimReport struct {
	NodePool            string   `json:"nodePool"`
	InstanceType        string   `json:"instanceType"`
	Zone                string   `json:"zone"`
	CapacityType        string   `json:"capacityType"`
	Price               float64  `json:"price"`
	InstanceTypeOptions []string `json:"instanceTypeOptions"`
	// Labels are what the node is labelled with (the pool's labels and every requirement
	// pinned to one value); Requirements what any of its options must satisfy, the values
	// still open included.
	Labels       map[string]string   `json:"labels"`
	Requirements []requirementReport `json:"requirements"`
	Pods         []string            `json:"pods"`
}

// placementReport is pending pods placed on an existing node.
type placementReport struct {
	Node string   `json:"node"`
	Pods []string `json:"pods"`
}

// inFlightReport is pending pods placed on a NodeClaim whose node has not registered.
type inFlightReport struct {
	NodeClaim string   `json:"nodeClaim"`
	Pods      []string `json:"pods"`
}

// unschedulableReport is a pod that cannot be placed: a stable code and a sentence per NodePool.
type unschedulableReport struct {
	Pod    string `json:"pod"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

func newProvisionReport(res scheduling.Result, elapsed time.Duration) provisionReport {
	rep := provisionReport{
		typeMeta:           planType(kindProvisionPlan),
		NodeClaims:         []claimReport{},
		ExistingNodes:      []placementReport{},
		InFlightNodeClaims: []inFlightReport{},
		Unschedulable:      []unschedulableReport{},
		TotalPrice:         roundPrice(res.Cost),
		NodeCost:           roundPrice(res.NodeCost),
		LowerBound:         roundPrice(res.LowerBound),
		SolveSeconds:       elapsed.Seconds(),
		Notices:            []string{},
	}
	for _, c := range res.NodeClaims {
		rep.NodeClaims = append(rep.NodeClaims, claimReport{
			NodePool:            c.NodePool,
			InstanceType:        c.InstanceType,
			Zone:                c.Offering.Zone,
			CapacityType:        string(c.Offering.CapacityType),
			Price:               roundPrice(c.Offering.Price),
			InstanceTypeOptions: nonNil(c.InstanceTypeOptions),
			Labels:              nonNilMap(c.Labels),
			Requirements:        requirementsReport(c.Requirements),
			Pods:                nonNil(c.Pods),
		})
	}
	for _, p := range res.Existing {
		rep.ExistingNodes = append(rep.ExistingNodes, placementReport{Node: p.Name, Pods: nonNil(p.Pods)})
	}
	for _, p := range res.InFlight {
		rep.InFlightNodeClaims = append(rep.InFlightNodeClaims, inFlightReport{NodeClaim: p.Name, Pods: nonNil(p.Pods)})
	}
	for _, u := range res.Unschedulable {
		rep.Unschedulable = append(rep.Unschedulable, unschedulableReport{Pod: u.Pod, Code: string(u.Code), Reason: u.Message})
	}
	return rep
}

// roundPrice drops float noise from sums of prices ($/h to a millionth of a cent is plenty).
func roundPrice(p float64) float64 { return math.Round(p*1e8) / 1e8 }

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// writeText prints the plan as tables for a person. res gives the per-pool reasons that the
// JSON's one-line reason joins.
func (rep provisionReport) writeText(w io.Writer, res scheduling.Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(rep.NodeClaims) > 0 {
		fmt.Fprintf(tw, "NEW NODES\n")
		fmt.Fprintf(tw, "NODEPOOL\tINSTANCE TYPE\tZONE\tCAPACITY\t$/h\tPODS\tOTHER OPTIONS\n")
		for _, c := range rep.NodeClaims {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", c.NodePool, c.InstanceType, c.Zone, c.CapacityType,
				dollars(c.Price), len(c.Pods), otherOptions(c.InstanceType, c.InstanceTypeOptions))
		}
		fmt.Fprintln(tw)
	}
	if len(rep.ExistingNodes) > 0 {
		fmt.Fprintf(tw, "ON EXISTING NODES\n")
		fmt.Fprintf(tw, "NODE\tPLACED\tPODS\n")
		for _, p := range rep.ExistingNodes {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", p.Node, len(p.Pods), abbreviate(p.Pods, 3))
		}
		fmt.Fprintln(tw)
	}
	if len(rep.InFlightNodeClaims) > 0 {
		fmt.Fprintf(tw, "ON IN-FLIGHT NODECLAIMS\n")
		fmt.Fprintf(tw, "NODECLAIM\tPLACED\tPODS\n")
		for _, p := range rep.InFlightNodeClaims {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", p.NodeClaim, len(p.Pods), abbreviate(p.Pods, 3))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(res.Unschedulable) > 0 {
		// One line per pod, then the reason each NodePool gave, most useful first.
		fmt.Fprintf(w, "UNSCHEDULABLE\n")
		for _, u := range res.Unschedulable {
			fmt.Fprintf(w, "%s: %s\n", u.Pod, u.Code)
			if len(u.Pools) == 0 {
				fmt.Fprintf(w, "    %s\n", u.Message)
			}
			for _, pr := range u.Pools {
				fmt.Fprintf(w, "    %s\n", pr.Message)
			}
		}
		fmt.Fprintln(w)
	}
	if rep.Comparison != nil {
		rep.Comparison.writeText(w)
	}
	_, err := fmt.Fprintln(w, rep.summary())
	return err
}

// summary is the last line: "total $0.4480/h, lower bound $0.4123/h (cost/LB 1.09), 3 nodes,
// solved in 12ms"; with a node cost, "total $0.4546/h ($0.0066/h of it node cost), ...".
func (rep provisionReport) summary() string {
	ratio := "-"
	if rep.LowerBound > 0 {
		ratio = fmt.Sprintf("%.2f", rep.TotalPrice/rep.LowerBound)
	}
	nodes := fmt.Sprintf("%d nodes", len(rep.NodeClaims))
	if len(rep.NodeClaims) == 1 {
		nodes = "1 node"
	}
	total := dollars(rep.TotalPrice) + "/h"
	if rep.NodeCost != 0 {
		total += fmt.Sprintf(" (%s/h of it node cost)", dollars(rep.NodeCost))
	}
	s := fmt.Sprintf("total %s, lower bound %s/h (cost/LB %s), %s, solved in %s",
		total, dollars(rep.LowerBound), ratio, nodes, roundDuration(time.Duration(rep.SolveSeconds*float64(time.Second))))
	if n := len(rep.Unschedulable); n > 0 {
		s += fmt.Sprintf("; %d pods unschedulable", n)
		if n == 1 {
			s = strings.TrimSuffix(s, "pods unschedulable") + "pod unschedulable"
		}
	}
	return s
}

func dollars(p float64) string { return fmt.Sprintf("$%.4f", p) }

// otherOptions lists the fallback instance types of a claim, briefly.
func otherOptions(chosen string, options []string) string {
	var others []string
	for _, o := range options {
		if o != chosen {
			others = append(others, o)
		}
	}
	if len(others) == 0 {
		return "-"
	}
	return abbreviate(others, 3)
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}
