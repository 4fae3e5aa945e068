package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

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

// Emptiness is disruption.Plan asked for interruption and emptiness only
// (disruption.Options.Methods): it deletes initialized nodes without reschedulable pods once
// their pool's consolidateAfter has passed, within the pools' Empty budgets, and drains
// interrupted nodes at once with replacements for their pods. It never moves pods to save
// money; every other node stays with disruption.CodeMethodNotRun. Use it to keep consolidation
// and drift out of the picture.
type Emptiness struct{}

// Plan implements [Planner].
func (Emptiness) Plan(ctx context.Context, in disruption.Input) (disruption.Result, error) {
	in.Options.Methods = disruption.MethodInterruption | disruption.MethodEmptiness
	return disruption.Plan(ctx, in)
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
// shape: "Empty: delete: nodepools=[default]: [node-a] (savings: $0.0700/h)", with savings
// the command's (commandCost.Savings).
func commandString(cmd disruption.Command, savings float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s: nodepools=%v: %v", cmd.Reason, decision(cmd), cmd.NodePools, cmd.Nodes)
	if n := len(cmd.Replacements); n > 0 {
		types := make([]string, n)
		for i, r := range cmd.Replacements {
			types[i] = r.InstanceType
		}
		fmt.Fprintf(&b, " -> %d replacement(s) %v", n, types)
	}
	change, amount := PriceChange(savings)
	fmt.Fprintf(&b, " (%s: %s)", change, amount)
	return b.String()
}
