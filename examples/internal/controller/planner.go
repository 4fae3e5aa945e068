package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
)

// Planner decides which nodes to remove or replace. disruption.Plan is the default; it must be
// pure in the way that function is: decide from the input alone, at in.Now.
type Planner interface {
	Plan(ctx context.Context, in disruption.Input) (disruption.Result, error)
}

// PlanFunc adapts a function to [Planner].
type PlanFunc func(context.Context, disruption.Input) (disruption.Result, error)

// Plan implements [Planner].
func (f PlanFunc) Plan(ctx context.Context, in disruption.Input) (disruption.Result, error) {
	return f(ctx, in)
}

// Emptiness is a minimal planner: it deletes initialized nodes without (non-DaemonSet,
// non-mirror) pods once their pool's consolidateAfter has passed, within the pools' Empty
// budgets, and deletes interrupted nodes at once without replacements (their pods go pending
// and are provisioned). It never moves pods. Use it to keep consolidation out of the picture.
type Emptiness struct{}

// Plan implements [Planner].
func (Emptiness) Plan(ctx context.Context, in disruption.Input) (disruption.Result, error) {
	var res disruption.Result
	pools := map[string]nodeplan.NodePool{}
	for _, p := range in.NodePools {
		pools[p.Name] = p
	}
	total, busy, used := map[string]int{}, map[string]int{}, map[string]int{}
	for _, n := range in.Nodes {
		if n.NodePool == "" || n.Initialized.IsZero() {
			continue
		}
		total[n.NodePool]++
		if n.Disrupting {
			busy[n.NodePool]++
		}
	}
	block := func(n *disruption.Node, code disruption.Code, format string, args ...any) {
		res.Blocked = append(res.Blocked, disruption.Blocked{Node: n.Name(), NodePool: n.NodePool, Code: code,
			Message: fmt.Sprintf(format, args...)})
	}
	empty := map[string]*disruption.Command{}
	for i := range in.Nodes {
		if err := ctx.Err(); err != nil {
			return disruption.Result{}, err
		}
		n := &in.Nodes[i]
		if n.NodePool == "" || n.Disrupting {
			continue
		}
		pods := drainable(n.Pods)
		if n.Interruption != nil {
			res.Commands = append(res.Commands, disruption.Command{Action: disruption.ActionDelete,
				Reason: nodeplan.ReasonInterrupted, Nodes: []string{n.Name()}, NodePools: []string{n.NodePool},
				Pods: podKeys(pods), Price: n.Price, Savings: n.Price, Forceful: true, Unplaced: podKeys(pods)})
			continue
		}
		pool, ok := pools[n.NodePool]
		switch {
		case !ok:
			block(n, disruption.CodeNoNodePool, "NodePool %q does not exist", n.NodePool)
			continue
		case n.Initialized.IsZero():
			continue
		case n.Nominated:
			block(n, disruption.CodeNominated, "Node is nominated for a pending pod")
			continue
		case nodeplan.NodeDoNotDisrupt(n.Node.Annotations):
			block(n, disruption.CodeDoNotDisruptNode, "Node has the %s annotation", nodeplan.AnnotationDoNotDisrupt)
			continue
		case pool.Disruption.ConsolidateAfter == nodeplan.Never:
			block(n, disruption.CodeConsolidationDisabled, "NodePool %s has consolidateAfter: Never", pool.Name)
			continue
		case len(pods) > 0:
			continue
		}
		since := n.LastPodEvent
		if n.Initialized.After(since) {
			since = n.Initialized
		}
		if in.Now.Sub(since) < pool.Disruption.ConsolidateAfter {
			continue
		}
		if pool.Disruption.AllowedDisruptions(nodeplan.ReasonEmpty, total[n.NodePool], in.Now)-busy[n.NodePool]-used[n.NodePool] <= 0 {
			block(n, disruption.CodeBudget, "No allowed disruptions for disruption reason Empty due to blocking budget")
			continue
		}
		used[n.NodePool]++
		cmd := empty[n.NodePool]
		if cmd == nil {
			cmd = &disruption.Command{Action: disruption.ActionDelete, Reason: nodeplan.ReasonEmpty, NodePools: []string{n.NodePool}}
			empty[n.NodePool] = cmd
		}
		cmd.Nodes = append(cmd.Nodes, n.Name())
		cmd.Price += n.Price
		cmd.Savings += n.Price
	}
	for _, name := range sortedKeys(empty) {
		res.Commands = append(res.Commands, *empty[name])
	}
	for _, cmd := range res.Commands {
		res.Savings += cmd.Savings
	}
	return res, nil
}

func podKeys[T interface{ GetName() string }](pods []T) []string {
	var out []string
	for _, p := range pods {
		if pod, ok := any(p).(interface{ GetNamespace() string }); ok {
			out = append(out, pod.GetNamespace()+"/"+p.GetName())
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// decision returns "delete" or "replace", as the log line says it.
func decision(cmd disruption.Command) string {
	if len(cmd.Replacements) > 0 {
		return "replace"
	}
	return "delete"
}

// commandString is the one-line summary of a command operators grep for, in Karpenter's
// shape: "Empty: delete: nodepools=[default]: [node-a] (savings: $0.0700/h)".
func commandString(cmd disruption.Command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s: nodepools=%v: %v", cmd.Reason, decision(cmd), cmd.NodePools, cmd.Nodes)
	if n := len(cmd.Replacements); n > 0 {
		types := make([]string, n)
		for i, r := range cmd.Replacements {
			types[i] = r.InstanceType
		}
		fmt.Fprintf(&b, " -> %d replacement(s) %v", n, types)
	}
	change, amount := PriceChange(cmd.Savings)
	fmt.Fprintf(&b, " (%s: %s)", change, amount)
	return b.String()
}
