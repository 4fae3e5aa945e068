package disruption

import "strings"

// Methods is a set of disruption methods, the steps of a pass. The zero value is every method;
// a planner embedding nodeplan for one purpose asks for a subset (an emptiness-only pass is
// MethodInterruption|MethodEmptiness) instead of writing a second planner with its own budget,
// consolidateAfter and do-not-disrupt rules. A node only a method left out would disrupt stays,
// with [CodeMethodNotRun].
type Methods uint8

// AllMethods is every method, those a later version adds included; what the zero Methods
// means. Each method declares its own bit, beside its code (interruption.go, expiration.go,
// emptiness.go, drift.go, consolidation.go).
const AllMethods Methods = 1<<8 - 1

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
	for _, m := range registered() {
		if s&m.kind() != 0 {
			names = append(names, m.name())
		}
	}
	return strings.Join(names, "+")
}
