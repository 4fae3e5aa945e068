package main

import (
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// The nodes view (-o nodes) is the plan for a person at a terminal, one node at a time as
// eks-node-viewer shows a cluster: each new node with its pool, type, zone, capacity type and
// price, bars of the cpu and memory its pods (and DaemonSets) request against what it
// allocates, and its pods; then each existing node that receives pods, the same way; then the
// fleet of new nodes together, against the lower bound. Every line fits in viewWidth columns.
const (
	viewWidth = 100
	barWidth  = 30
	indent    = "    "
)

// nodeView is one node of the view.
type nodeView struct {
	// title is the first line's columns: an existing node's name, pool, type, zone, capacity
	// type, price.
	title []string
	// requested and allocatable give the bars.
	requested, allocatable corev1.ResourceList
	// pods are the pods the plan puts on the node; running counts those already there.
	pods    []string
	running int
}

// writeNodesView prints rep (built from res, solved from in) as the nodes view.
func writeNodesView(w io.Writer, rep provisionReport, res scheduling.Result, in scheduling.Input) error {
	var b strings.Builder
	for _, n := range rep.Notices {
		writeWrapped(&b, "NOTE: ", "      ", n)
	}
	if len(rep.Notices) > 0 {
		b.WriteString("\n")
	}

	var views []nodeView
	fleetReq, fleetAlloc := corev1.ResourceList{}, corev1.ResourceList{}
	for i, c := range res.NodeClaims {
		alloc := allocatableOf(in, c.NodePool, c.InstanceType)
		views = append(views, nodeView{
			title: []string{c.NodePool, c.InstanceType, c.Offering.Zone, string(c.Offering.CapacityType),
				dollars(rep.NodeClaims[i].Price) + "/h"},
			requested:   c.Resources,
			allocatable: alloc,
			pods:        c.Pods,
		})
		fleetReq = nodeplan.AddResources(fleetReq, c.Resources)
		fleetAlloc = nodeplan.AddResources(fleetAlloc, alloc)
	}
	existing := existingViews(in, res)
	if len(views) > 0 {
		fmt.Fprintf(&b, "NEW NODES\n")
		writeNodeViews(&b, views)
	}
	if len(existing) > 0 {
		fmt.Fprintf(&b, "EXISTING NODES RECEIVING PODS\n")
		writeNodeViews(&b, existing)
	}
	for _, p := range res.InFlight {
		writeWrapped(&b, fmt.Sprintf("in-flight NodeClaim %s receives ", p.Name), indent, strings.Join(p.Pods, ", "))
	}
	if len(res.InFlight) > 0 {
		b.WriteString("\n")
	}

	fmt.Fprintf(&b, "FLEET\n")
	nodes := plural(len(rep.NodeClaims), "new node")
	ratio := "-"
	if rep.LowerBound > 0 {
		ratio = fmt.Sprintf("%.2f", rep.TotalPrice/rep.LowerBound)
	}
	total := dollars(rep.TotalPrice) + "/h"
	if rep.NodeCost != 0 {
		// The nodes' lines give their instances' prices; the total counts their node cost too.
		total += fmt.Sprintf(" (%s/h of it node cost)", dollars(rep.NodeCost))
	}
	writeWrapped(&b, indent, indent, fmt.Sprintf("%s, %s; lower bound %s/h (cost/LB %s)",
		nodes, total, dollars(rep.LowerBound), ratio))
	if len(views) > 0 {
		writeBars(&b, fleetReq, fleetAlloc)
	}
	if n := len(res.Unschedulable); n > 0 {
		writeWrapped(&b, indent, indent, fmt.Sprintf("%s unschedulable (-o text says why): %s", plural(n, "pod"), unschedulableKeys(res.Unschedulable)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// existingViews are the existing nodes the plan places pending pods on, with their pods.
func existingViews(in scheduling.Input, res scheduling.Result) []nodeView {
	pending := map[string]*corev1.Pod{}
	for _, p := range in.Pods {
		pending[nodeplan.PodKey(p)] = p
	}
	nodes := map[string]scheduling.Node{}
	for _, n := range in.Nodes {
		nodes[n.Node.Name] = n
	}
	var out []nodeView
	for _, pl := range res.Existing {
		n, ok := nodes[pl.Name]
		if !ok {
			continue
		}
		pool, it := n.Node.Labels[nodeplan.LabelNodePool], n.Node.Labels[corev1.LabelInstanceTypeStable]
		zone, ct := n.Node.Labels[corev1.LabelTopologyZone], n.Node.Labels[nodeplan.LabelCapacityType]
		price := ""
		if p := catalogPrice(catalogOf(in, pool), it, zone, nodeplan.CapacityType(ct)); p > 0 {
			price = dollars(p) + "/h"
		}
		v := nodeView{
			title:       []string{n.Node.Name, pool, it, zone, ct, price},
			requested:   corev1.ResourceList{},
			allocatable: n.Node.Status.Allocatable,
		}
		for _, p := range n.Pods {
			v.requested = nodeplan.AddResources(v.requested, nodeplan.PodRequests(p))
			v.running++
		}
		for _, key := range pl.Pods {
			if p := pending[key]; p != nil {
				v.requested = nodeplan.AddResources(v.requested, nodeplan.PodRequests(p))
			}
			v.pods = append(v.pods, key)
		}
		for i, s := range v.title {
			if s == "" {
				v.title[i] = "-"
			}
		}
		out = append(out, v)
	}
	return out
}

// allocatableOf is what a node of the instance type allocates in the pool's catalog.
func allocatableOf(in scheduling.Input, pool, instanceType string) corev1.ResourceList {
	catalog := catalogOf(in, pool)
	for i := range catalog {
		if catalog[i].Name == instanceType {
			return catalog[i].Allocatable()
		}
	}
	return corev1.ResourceList{}
}

// catalogOf is the instance types a pool's nodes are built from.
func catalogOf(in scheduling.Input, pool string) []nodeplan.InstanceType {
	if c, ok := in.PoolInstanceTypes[pool]; ok {
		return c
	}
	return in.InstanceTypes
}

// writeNodeViews prints each node: its title with the columns aligned across nodes, its bars,
// its pods; a blank line after the last.
func writeNodeViews(b *strings.Builder, views []nodeView) { writeNodeViewsWith(b, views, nil) }

// writeNodeViewsWith is writeNodeViews with, when fates is not nil, a last line per node
// saying what the plan does with it.
func writeNodeViewsWith(b *strings.Builder, views []nodeView, fates []string) {
	widths := make([]int, len(views[0].title))
	for _, v := range views {
		for i, s := range v.title {
			widths[i] = max(widths[i], len(s))
		}
	}
	for i, v := range views {
		cols := make([]string, len(v.title))
		for j, s := range v.title {
			cols[j] = s + strings.Repeat(" ", widths[j]-len(s))
		}
		pods := plural(len(v.pods), "pod")
		if v.running > 0 {
			pods = fmt.Sprintf("%d pods, %d placed", v.running+len(v.pods), len(v.pods))
		}
		// The title is written whole: wrapping would lose the padding that aligns it.
		fmt.Fprintf(b, "%s  %s\n", strings.TrimRight(strings.Join(cols, "  "), " "), pods)
		writeBars(b, v.requested, v.allocatable)
		label := "pods    "
		if v.running > 0 {
			label = "placed  " // an existing node's pods already there are only counted
		}
		if len(v.pods) > 0 {
			writeWrapped(b, indent+label, indent+"        ", strings.Join(v.pods, " "))
		}
		if fates != nil {
			writeWrapped(b, indent+"plan    ", indent+"        ", fates[i])
		}
	}
	b.WriteString("\n")
}

// writeBars prints the cpu and memory bars: requested against allocatable.
func writeBars(b *strings.Builder, requested, allocatable corev1.ResourceList) {
	for _, r := range []struct {
		name   string
		res    corev1.ResourceName
		format func(resource.Quantity) string
	}{
		{"cpu", corev1.ResourceCPU, formatCPU},
		{"memory", corev1.ResourceMemory, formatMemory},
	} {
		req, alloc := requested[r.res], allocatable[r.res]
		fmt.Fprintf(b, "%s%-7s %s  %s of %s\n", indent, r.name, bar(nodeplan.MilliValue(req), nodeplan.MilliValue(alloc)),
			r.format(req), r.format(alloc))
	}
}

// bar is "[████░░░░]  42%": used of total, barWidth cells, clamped to full; "[        ]   -" when
// the total is unknown.
func bar(used, total int64) string {
	if total <= 0 {
		return "[" + strings.Repeat(" ", barWidth) + "]     -"
	}
	frac := float64(used) / float64(total)
	cells := int(frac*barWidth + 0.5)
	cells = min(max(cells, 0), barWidth)
	if used > 0 && cells == 0 {
		cells = 1 // a node with something on it never looks empty
	}
	return fmt.Sprintf("[%s%s] %4.0f%%", strings.Repeat("█", cells), strings.Repeat("░", barWidth-cells), frac*100)
}

func formatCPU(q resource.Quantity) string {
	m := nodeplan.MilliValue(q)
	if m%1000 == 0 {
		return fmt.Sprintf("%d", m/1000)
	}
	return fmt.Sprintf("%dm", m)
}

func formatMemory(q resource.Quantity) string {
	return fmt.Sprintf("%.1fGi", float64(nodeplan.Value(q))/(1<<30))
}

// plural is "1 pod", "2 pods".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func unschedulableKeys(us []scheduling.Unschedulable) string {
	keys := make([]string, len(us))
	for i, u := range us {
		keys[i] = u.Pod
	}
	return strings.Join(keys, ", ")
}

// writeWrapped writes first+text, broken at spaces so no line passes viewWidth columns; lines
// after the first start with rest. A word longer than a line stays whole.
func writeWrapped(b *strings.Builder, first, rest, text string) {
	line := first
	lineLen := len([]rune(first))
	empty := true
	for _, word := range strings.Fields(text) {
		n := len([]rune(word))
		if !empty && lineLen+1+n > viewWidth {
			b.WriteString(line + "\n")
			line, lineLen, empty = rest, len([]rune(rest)), true
		}
		if !empty {
			line += " "
			lineLen++
		}
		line += word
		lineLen += n
		empty = false
	}
	b.WriteString(line + "\n")
}
