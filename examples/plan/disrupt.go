package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
	"github.com/nodeplan/nodeplan/scheduling"
)

const disruptSynopsis = "(--kubeconfig FILE | --current-context | --pods FILE --nodes FILE --nodepools FILE) [--catalog FILE] [--daemonsets FILE] [--pdbs FILE] [--now RFC3339] [--node-cost $/h] [-o text|json|yaml|nodes]"

// disrupt runs the disruption planner on the snapshot and writes its plan to out.
func disrupt(ctx context.Context, args []string, out, stderr io.Writer) error {
	f := newFlags("disrupt", disruptSynopsis, stderr)
	var files inputFiles
	format := outputFormat("text")
	var nowFlag string
	f.StringVar(&files.pods, "pods", "", "`FILE` of Pods, as kubectl get pods -A -o yaml prints them")
	f.StringVar(&files.nodes, "nodes", "", "`FILE` of the cluster's Nodes; those with a karpenter.sh/nodepool label are managed")
	f.StringVar(&files.nodePools, "nodepools", "", "`FILE` of Karpenter v1 NodePools (YAML or JSON)")
	f.StringVar(&files.nodeClasses, "ec2nodeclasses", "", "`FILE` of Karpenter v1 EC2NodeClasses, whose kubelet and volume settings shape a built catalog (optional)")
	f.StringVar(&files.catalog, "catalog", "", "`FILE` of the instance catalog (JSON): node prices and replacement types (default: built for the region, see plan catalog)")
	f.StringVar(&files.daemonSets, "daemonsets", "", "`FILE` of apps/v1 DaemonSets, overhead on replacement nodes (optional)")
	f.StringVar(&files.pdbs, "pdbs", "", "`FILE` of policy/v1 PodDisruptionBudgets (optional)")
	f.StringVar(&nowFlag, "now", "", "the `TIME` budgets and ages are judged at, RFC 3339 (default: the current time)")
	nodeCost := nodeCostFlag(f)
	f.Var(&format, "o", "output `FORMAT`: text, json, yaml (the same document as json) or nodes (each node with its utilisation and its fate, for people)")
	var src sourceFlags
	src.register(f, &files)
	if err := f.parse(args); err != nil {
		return err
	}
	now := time.Now().UTC()
	if nowFlag != "" {
		t, err := time.Parse(time.RFC3339, nowFlag)
		if err != nil {
			return usageErrorf("disrupt: --now %q is not an RFC 3339 time such as 2026-11-22T10:00:00Z", nowFlag)
		}
		now = t
	}
	snap, err := src.snapshot(ctx, f, &files, stderr, "pods", "nodes", "nodepools")
	if err != nil {
		return err
	}
	in := disruptionInput(snap, now, *nodeCost)

	start := time.Now()
	res, err := disruption.Plan(ctx, in)
	elapsed := time.Since(start)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return badInput{fmt.Errorf("the planner rejected the input: %w", err)}
	}
	rep := newDisruptReport(res, in.Options.Scheduling.NodeCost)
	rep.Notices = append(rep.Notices, snap.notices...)
	if format == "json" || format == "yaml" {
		return writeDocument(out, format, rep)
	}
	if format == "nodes" {
		return writeDisruptNodesView(out, rep, res, in)
	}
	writeNoticesText(out, rep.Notices)
	return rep.writeText(out, elapsed)
}

// disruptionInput is the planner's input for the snapshot at now.
func disruptionInput(snap *snapshot, now time.Time, nodeCost float64) disruption.Input {
	in := disruption.Input{
		Pending:           snap.pending,
		NodePools:         snap.pools,
		InstanceTypes:     snap.catalog,
		PoolInstanceTypes: snap.poolCatalog,
		DaemonSets:        snap.daemonSets,
		PDBs:              snap.pdbs,
		Now:               now,
		Options:           disruption.Options{Scheduling: scheduling.Options{NodeCost: snap.nodeCost(nodeCost)}},
	}
	for _, n := range snap.nodes {
		in.Nodes = append(in.Nodes, disruptionNode(n, snap.catalog))
	}
	return in
}

// disruptionNode describes a node to the planner from its labels, its pods and the catalog. The
// snapshot has no NodeClaims, so the node's own timestamps stand in for theirs.
func disruptionNode(n clusterNode, catalog []nodeplan.InstanceType) disruption.Node {
	dn := disruption.Node{
		Node:         n.node,
		Pods:         n.pods,
		NodePool:     n.pool,
		InstanceType: n.instanceType,
		Zone:         n.zone,
		CapacityType: n.capacityType,
		Price:        catalogPrice(catalog, n.instanceType, n.zone, n.capacityType),
		Created:      n.node.CreationTimestamp.Time,
		Disrupting:   n.node.DeletionTimestamp != nil || hasTaint(n.node, nodeplan.TaintDisrupted),
	}
	// Karpenter marks a node initialized once its startup taints are gone; unmanaged nodes have
	// no such label and count as initialized when Ready.
	if n.node.Labels[nodeplan.LabelInitialized] == "true" || (n.pool == "" && ready(n.node)) {
		dn.Initialized = readySince(n.node)
	}
	for _, p := range n.pods {
		if nodeplan.DaemonSetOf(p) != "" {
			continue
		}
		if t := nodeplan.PodStart(p); t.After(dn.LastPodEvent) {
			dn.LastPodEvent = t
		}
	}
	return dn
}

// catalogPrice is the price of the offering a node runs on; 0 (unknown) when the catalog lacks it.
func catalogPrice(catalog []nodeplan.InstanceType, instanceType, zone string, ct nodeplan.CapacityType) float64 {
	for _, it := range catalog {
		if it.Name != instanceType {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == ct {
				return o.Price
			}
		}
	}
	return 0
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readySince is when the node last became Ready, or its creation time when that is unknown.
func readySince(n *corev1.Node) time.Time {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	return n.CreationTimestamp.Time
}

// disruptReport is what disrupt -o json prints. Every slice is present and in the planner's
// stable order.
type disruptReport struct {
	typeMeta
	Commands []commandReport `json:"commands"`
	Blocked  []blockedReport `json:"blocked"`
	// Notices are assumptions made to build the inputs, as in provision's report.
	Notices []string `json:"notices"`
}

// commandReport is one disruption: nodes to remove, replacements to launch first, pods evicted.
type commandReport struct {
	Action       string              `json:"action"` // delete or replace
	Reason       string              `json:"reason"` // Empty, Underutilized, Drifted, Expired…
	Nodes        []string            `json:"nodes"`
	Replacements []replacementReport `json:"replacements"`
	Pods         []string            `json:"pods"`
	// OneAtATime are the PDBs with several of a node's pods: the drain evicts them one at a
	// time, each when the PDB allows it again.
	OneAtATime []string `json:"oneAtATime"`
	// Price is the $/h of Nodes; ReplacementPrice the replacements' at the offerings planned
	// (node costs included on both sides); Savings the difference, negative when the
	// replacements are dearer. ReplacementWorstCase is the replacements at the dearest
	// offering any of their options could launch at: the price the planner judged the command
	// by, so a saving holds whatever the cloud picks.
	Price                float64 `json:"price"`
	ReplacementPrice     float64 `json:"replacementPrice"`
	ReplacementWorstCase float64 `json:"replacementWorstCase"`
	Savings              float64 `json:"savings"`
}

// replacementReport is a node launched in place of removed ones, costed at its cheapest option.
type replacementReport struct {
	InstanceType string  `json:"instanceType"`
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
	// Labels and Requirements are the NodeClaim's, as in provision's nodeClaims.
	Labels       map[string]string   `json:"labels"`
	Requirements []requirementReport `json:"requirements"`
}

// blockedReport is a managed node left alone, and why.
type blockedReport struct {
	Node   string `json:"node"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// newDisruptReport reports res, whose planner was given nodeCost.
func newDisruptReport(res disruption.Result, nodeCost scheduling.NodeCost) disruptReport {
	rep := disruptReport{typeMeta: planType(kindDisruptionPlan), Commands: []commandReport{}, Blocked: []blockedReport{}, Notices: []string{}}
	for _, c := range res.Commands {
		cost := costOf(c, nodeCost)
		cr := commandReport{
			Action:               strings.ToLower(string(c.Action)),
			Reason:               string(c.Reason),
			Nodes:                nonNil(c.Nodes),
			Replacements:         []replacementReport{},
			Pods:                 nonNil(c.Pods),
			OneAtATime:           nonNil(c.OneAtATime),
			Price:                roundPrice(cost.Price),
			ReplacementPrice:     roundPrice(cost.Planned),
			ReplacementWorstCase: roundPrice(cost.WorstCase),
			Savings:              roundPrice(cost.Savings),
		}
		for _, r := range c.Replacements {
			cr.Replacements = append(cr.Replacements, replacementReport{
				InstanceType: r.InstanceType,
				Zone:         r.Offering.Zone,
				CapacityType: string(r.Offering.CapacityType),
				Price:        roundPrice(r.Offering.Price),
				Labels:       nonNilMap(r.Labels),
				Requirements: requirementsReport(r.Requirements),
			})
		}
		rep.Commands = append(rep.Commands, cr)
	}
	for _, b := range res.Blocked {
		rep.Blocked = append(rep.Blocked, blockedReport{Node: b.Node, Code: string(b.Code), Reason: b.Message})
	}
	return rep
}

func (rep disruptReport) writeText(w io.Writer, elapsed time.Duration) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	var savings float64
	if len(rep.Commands) > 0 {
		fmt.Fprintf(tw, "COMMANDS\n")
		fmt.Fprintf(tw, "ACTION\tREASON\tNODES\tREPLACEMENTS\tPODS\tSAVES $/h\n")
		for _, c := range rep.Commands {
			var repl []string
			for _, r := range c.Replacements {
				repl = append(repl, fmt.Sprintf("%s %s %s %s", r.InstanceType, r.Zone, r.CapacityType, dollars(r.Price)))
			}
			replText := "-"
			if len(repl) > 0 {
				replText = strings.Join(repl, ", ")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", c.Action, c.Reason, strings.Join(c.Nodes, ", "), replText, len(c.Pods), dollars(c.Savings))
			savings += c.Savings
		}
		for _, c := range rep.Commands {
			if c.ReplacementWorstCase-c.ReplacementPrice >= 0.00005 {
				fmt.Fprintf(tw, "%s: replacements %s/h as planned, %s/h at the dearest offering their options could launch at (the price the plan was judged by)\n",
					strings.Join(c.Nodes, ", "), dollars(c.ReplacementPrice), dollars(c.ReplacementWorstCase))
			}
		}
		for _, c := range rep.Commands {
			for _, pdb := range c.OneAtATime {
				fmt.Fprintf(tw, "%s: evicts the pods of PDB %s one at a time, each once the PDB allows it again (the previous pod's replacement Ready)\n",
					strings.Join(c.Nodes, ", "), pdb)
			}
		}
		fmt.Fprintln(tw)
	}
	if len(rep.Blocked) > 0 {
		fmt.Fprintf(tw, "STAYING\n")
		fmt.Fprintf(tw, "NODE\tCODE\tREASON\n")
		for _, b := range rep.Blocked {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", b.Node, b.Code, b.Reason)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	cmds := fmt.Sprintf("%d commands", len(rep.Commands))
	if len(rep.Commands) == 1 {
		cmds = "1 command"
	}
	_, err := fmt.Fprintf(w, "%s %s, %d managed nodes staying, planned in %s\n", cmds, savingPhrase(savings), len(rep.Blocked), roundDuration(elapsed))
	return err
}
