package main

import (
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
	"github.com/nodeplan/nodeplan/scheduling"
)

// writeDisruptNodesView prints disrupt's plan (rep, built from res, planned from in) node by
// node: each node of the cluster with its pool, type, zone, capacity type, price, bars of its
// pods' requests against its status.allocatable, its pods, and what the plan does with it —
// deleted or replaced and why, or why it stays; then the replacements to launch, as provision's
// view shows new nodes; then the fleet's $/h now and after the plan.
func writeDisruptNodesView(w io.Writer, rep disruptReport, res disruption.Result, in disruption.Input) error {
	var b strings.Builder
	for _, n := range rep.Notices {
		writeWrapped(&b, "NOTE: ", "      ", n)
	}
	if len(rep.Notices) > 0 {
		b.WriteString("\n")
	}
	fate := map[string]string{}
	for i, c := range rep.Commands {
		saves := "saves " + dollars(c.Savings) + "/h"
		if c.Savings <= -0.00005 {
			saves = "costs " + dollars(-c.Savings) + "/h more"
		}
		what := c.Action
		if len(c.Replacements) > 0 {
			what += fmt.Sprintf(" with %s", plural(len(c.Replacements), "node"))
		}
		for _, n := range res.Commands[i].Nodes {
			var others []string
			for _, o := range c.Nodes {
				if o != n {
					others = append(others, o)
				}
			}
			together := ""
			if len(others) > 0 {
				together = ", together with " + strings.Join(others, ", ")
			}
			fate[n] = fmt.Sprintf("%s (%s%s): %s", what, c.Reason, together, saves)
		}
	}
	for _, bl := range rep.Blocked {
		fate[bl.Node] = fmt.Sprintf("stays (%s): %s", bl.Code, bl.Reason)
	}

	var views []nodeView
	var fates []string
	now := 0.0
	for _, n := range in.Nodes {
		price := ""
		if n.Price > 0 {
			price = dollars(n.Price) + "/h"
			now += n.Price
		}
		v := nodeView{requested: corev1.ResourceList{}, allocatable: n.Node.Status.Allocatable}
		for _, s := range []string{n.Node.Name, n.NodePool, n.InstanceType, n.Zone, string(n.CapacityType), price} {
			if s == "" {
				s = "-"
			}
			v.title = append(v.title, s)
		}
		for _, p := range n.Pods {
			v.requested = nodeplan.AddResources(v.requested, nodeplan.PodRequests(p))
			if nodeplan.DaemonSetOf(p) == "" && !nodeplan.MirrorPod(p) {
				v.pods = append(v.pods, nodeplan.PodKey(p))
			}
		}
		f, ok := fate[n.Node.Name]
		if !ok {
			f = "stays: no NodePool manages it"
		}
		views = append(views, v)
		fates = append(fates, f)
	}
	if len(views) > 0 {
		fmt.Fprintf(&b, "NODES\n")
		writeNodeViewsWith(&b, views, fates)
	}

	var repl []nodeView
	for _, c := range res.Commands {
		for _, r := range c.Replacements {
			repl = append(repl, nodeView{
				title:       []string{r.NodePool, r.InstanceType, r.Offering.Zone, string(r.Offering.CapacityType), dollars(roundPrice(r.Offering.Price)) + "/h"},
				requested:   r.Resources,
				allocatable: allocatableOf(scheduling.Input{InstanceTypes: in.InstanceTypes, PoolInstanceTypes: in.PoolInstanceTypes}, r.NodePool, r.InstanceType),
				pods:        r.Pods,
			})
		}
	}
	if len(repl) > 0 {
		fmt.Fprintf(&b, "REPLACEMENTS\n")
		writeNodeViews(&b, repl)
	}

	saving := 0.0
	for _, c := range rep.Commands {
		saving += c.Savings
	}
	fmt.Fprintf(&b, "FLEET\n")
	writeWrapped(&b, indent, indent, fmt.Sprintf("%s at %s/h (the instances whose price is known); %s %s",
		plural(len(in.Nodes), "node"), dollars(now), plural(len(rep.Commands), "command"), savingPhrase(saving)))
	_, err := io.WriteString(w, b.String())
	return err
}
