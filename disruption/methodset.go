package disruption

import "strings"

// Methods is a set of disruption methods, the steps of a pass. The zero value is every method;
// a planner embedding nodeplan for one purpose asks for a subset (an emptiness-only pass is
// MethodInterruption|MethodEmptiness) instead of writing a second planner with its own budget,
// consolidateAfter and do-not-disrupt rules. A node only a method left out would disrupt stays,
// with [CodeMethodNotRun].
type Methods uint8

// The methods, in the order a pass runs them.
const (
	// MethodInterruption drains nodes with a spot interruption, rebalance or health notice.
	MethodInterruption Methods = 1 << iota
	// MethodExpiration replaces nodes past their pool's expireAfter.
	MethodExpiration
	// MethodEmptiness deletes nodes without reschedulable pods.
	MethodEmptiness
	// MethodDrift replaces nodes whose NodeClaim no longer matches its pool or class.
	MethodDrift
	// MethodConsolidation deletes or replaces nodes whose pods fit elsewhere for less.
	MethodConsolidation

	// AllMethods is every method; what the zero Methods means.
	AllMethods = MethodInterruption | MethodExpiration | MethodEmptiness | MethodDrift | MethodConsolidation
)

var methodNames = []struct {
	m    Methods
	name string
}{
	{MethodInterruption, "interruption"}, {MethodExpiration, "expiration"}, {MethodEmptiness, "emptiness"},
	{MethodDrift, "drift"}, {MethodConsolidation, "consolidation"},
}

// Has reports whether the set runs m; the zero set runs every method.
func (s Methods) Has(m Methods) bool {
	if s == 0 {
		s = AllMethods
	}
	return s&m == m
}

// String lists the set's methods, "interruption+emptiness".
func (s Methods) String() string {
	if s == 0 {
		s = AllMethods
	}
	var names []string
	for _, n := range methodNames {
		if s&n.m != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, "+")
}
