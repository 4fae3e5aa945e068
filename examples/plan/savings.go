package main

import (
	"github.com/nodeplan/nodeplan/disruption"
	"github.com/nodeplan/nodeplan/scheduling"
)

// commandCost is what a disruption command does to the fleet's $/h, as plan reports it: the
// figure the controller logs and counts for the same command.
//
// The planner judges each replacement at the dearest offering any of its options could launch
// at (Command.ReplacementPrice), so a saving it decides on holds whatever the cloud picks;
// Command.Savings is that bar. What the new node costs is the offering the solver chose, so
// the reported saving counts that, and the worst case is kept beside it.
type commandCost struct {
	// Price is the $/h of the nodes removed (Command.Price, node costs included).
	Price float64
	// Planned is the replacements at their chosen offerings (NewNodeClaim.Offering.Price),
	// each with its pool's node cost, as Price counts it for the nodes removed.
	Planned float64
	// WorstCase is Command.ReplacementPrice.
	WorstCase float64
	// Savings is Price less Planned: negative when the replacements are dearer.
	Savings float64
}

// costOf prices cmd's replacements at their planned offerings. nodeCost must be the one the
// planner was given (disruption.Options.Scheduling.NodeCost).
func costOf(cmd disruption.Command, nodeCost scheduling.NodeCost) commandCost {
	planned := cmd.PlannedReplacementPrice(nodeCost)
	return commandCost{Price: cmd.Price, Planned: planned, WorstCase: cmd.ReplacementPrice, Savings: cmd.Price - planned}
}

// totalSavings is what the commands of res save together, each as costOf reports it.
func totalSavings(res disruption.Result, nodeCost scheduling.NodeCost) float64 {
	total := 0.0
	for _, c := range res.Commands {
		total += costOf(c, nodeCost).Savings
	}
	return total
}

// savingPhrase says a saving in words: "saving $0.1920/h", or for a negative one (drift or
// expiry replacing nodes with dearer ones) "costing $0.0044/h more", as the controller's
// cost-increase does. A change below the $0.0001/h shown is a saving of $0.0000/h.
func savingPhrase(savings float64) string {
	if savings <= -0.00005 {
		return "costing " + dollars(-savings) + "/h more"
	}
	return "saving " + dollars(max(savings, 0)) + "/h"
}
