package topology

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Kind says how a constraint counts a group's pods: not at all (its selector does not match
// them), surely (every node they may land on is a counted node), or maybe (some may not be:
// their node selection differs from the carriers', and the domain's nodes are not all alike).
type Kind uint8

const (
	None Kind = iota
	Sure
	Maybe
)

// Family is one constraint as its carriers of one scope count it: its domains — the key's
// values on the nodes the scope counts, running or launchable — and the matching pods per
// domain. Base holds the running pods; Lo and Hi the pods counted as a split or a packing goes
// (Lo surely counted ones, Hi those and the ones that may be); Held marks the domains holding
// a carrier.
type Family struct {
	Spread
	Domains []string // sorted
	Base    map[string]int
	Lo, Hi  map[string]int
	Held    map[string]bool
}

// NewFamily is the family of s whose domains are base's keys, base their running matching pods.
func NewFamily(s Spread, base map[string]int) *Family {
	return &Family{Spread: s, Domains: slices.Sorted(maps.Keys(base)), Base: base}
}

// Reset starts a split: Lo and Hi from Base, no domain held.
func (f *Family) Reset() {
	f.Lo, f.Hi, f.Held = make(map[string]int, len(f.Base)), make(map[string]int, len(f.Base)), map[string]bool{}
	for v, n := range f.Base {
		f.Lo[v], f.Hi[v] = n, n
	}
}

// Counts reports whether v is one of the family's domains.
func (f *Family) Counts(v string) bool {
	_, ok := slices.BinarySearch(f.Domains, v)
	return ok
}

// Minimum is kube-scheduler's global minimum over the family's domains with counts lo: the
// least count, or 0 with fewer domains than minDomains.
func (f *Family) Minimum(lo map[string]int) int {
	if len(f.Domains) < f.MinDomains || len(f.Domains) == 0 {
		return 0
	}
	m := math.MaxInt
	for _, v := range f.Domains {
		m = min(m, lo[v])
	}
	return m
}

// Add counts n more pods of kind k in domain v.
func (f *Family) Add(v string, n int, k Kind) {
	switch k {
	case Sure:
		f.Lo[v] += n
		f.Hi[v] += n
	case Maybe:
		f.Hi[v] += n
	}
}

// Admits reports whether a carrier may go to domain v with add more matching pods there (add
// is 0 for a carrier its selector does not match): v is a domain, and its count stays within
// maxSkew of the minimum. The minimum counts only pods surely counted, the domain those that
// may be, so the answer holds whichever nodes the pods land on.
func (f *Family) Admits(v string, add int) bool {
	return f.Counts(v) && !f.Over(v, add)
}

// Over reports whether add more matching pods in v would take v more than maxSkew above the
// minimum: what a carrier already in v, wherever its own domains are, would see.
func (f *Family) Over(v string, add int) bool {
	return f.Hi[v]+add-f.Minimum(f.Lo) > f.MaxSkew
}

// Uncertain reports whether some of f's counts may not be: Lo and Hi differ somewhere.
func (f *Family) Uncertain() bool {
	for _, v := range f.Domains {
		if f.Lo[v] != f.Hi[v] {
			return true
		}
	}
	return false
}

// Room is how many more matching pods domain v may take with every carrier there still within
// maxSkew (0 when v is not a domain, or is over already).
func (f *Family) Room(v string) int {
	if !f.Counts(v) {
		return 0
	}
	return max(f.MaxSkew+f.Minimum(f.Lo)-f.Hi[v], 0)
}

// Blocked is why pods cannot go anywhere: the constraint and the counts of every domain (or
// that it has none). what names the pods ("pods", "pods its selector matches").
func (f *Family) Blocked(counts map[string]int, what string) string {
	msg := fmt.Sprintf("topology spread on %s (maxSkew %d", f.Key, f.MaxSkew)
	if f.MinDomains > 1 {
		msg += fmt.Sprintf(", minDomains %d", f.MinDomains)
	}
	msg += fmt.Sprintf(") cannot take more %s: %s", what, FormatCounts(counts, f.Domains))
	if f.MinDomains > 1 && len(f.Domains) < f.MinDomains {
		msg += fmt.Sprintf("; only %d domains, fewer than minDomains", len(f.Domains))
	}
	return msg
}

// NoKey is why a carrier of a family without domains, over a key not every node has
// (Labelled), is never bound: no node it may go to has the key.
func (f *Family) NoKey() string {
	return fmt.Sprintf("topology spread on %s: no node the pod may go to, existing or launchable, has the label %s, and kube-scheduler binds a pod with a DoNotSchedule spread only to nodes with its key",
		f.Key, f.Key)
}

// FormatCounts lists counts in order as "v=n, …", or "no domain".
func FormatCounts(counts map[string]int, order []string) string {
	if len(order) == 0 {
		return "no domain"
	}
	parts := make([]string, len(order))
	for i, v := range order {
		parts[i] = fmt.Sprintf("%s=%d", v, counts[v])
	}
	return strings.Join(parts, ", ")
}
