package controller

import (
	"github.com/nodeplan/nodeplan/disruption"
	"github.com/nodeplan/nodeplan/scheduling"
)

// commandCost is what a disruption command does to the fleet's $/h, as the logs, events and
// metrics report it.
//
// The planner judges a replacement at the worst price any of its options could launch at
// (Command.ReplacementPrice), so a saving it decides on holds whatever the cloud picks. That
// is the right bar for deciding, and the wrong figure to report: a drifted c6a.2xlarge spot
// node replaced by the same type would read as a cost increase of the type's on-demand price
// less its spot price. Operators compare the figure with what the new node costs, which is
// the offering the solver chose and costed the replacement at. So Savings counts that;
// WorstCase keeps the planner's bar beside it.
type commandCost struct {
	// Savings is Command.Price less Planned: negative when the replacements are dearer.
	Savings float64
	// Planned is the replacements' $/h at their chosen offerings (NewNodeClaim.Offering.Price),
	// each with its pool's node cost, as Command.Price counts it for the nodes removed.
	Planned float64
	// WorstCase is Command.ReplacementPrice: the replacements at the dearest offering any of
	// their options could launch at.
	WorstCase float64
}

// costOf prices cmd's replacements at their planned offerings. nodeCost must be the one the
// planner was given (disruption.Options.Scheduling.NodeCost), so both sides of Savings carry
// the same per-node costs.
func costOf(cmd disruption.Command, nodeCost scheduling.NodeCost) commandCost {
	planned := cmd.PlannedReplacementPrice(nodeCost)
	return commandCost{Savings: cmd.Price - planned, Planned: planned, WorstCase: cmd.ReplacementPrice}
}

// worstCaseDiffers reports whether the worst case is dearer than the planned price by as
// much as the log shows ($0.0001/h), so it is worth a field of its own.
func (cc commandCost) worstCaseDiffers() bool { return cc.WorstCase-cc.Planned >= 0.00005 }
