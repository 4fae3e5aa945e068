package topology

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

// Spread is one topology spread constraint as kube-scheduler reads it, its defaults filled in:
// everything but the selector, which the solver's pod terms hold (a selector reads namespaces
// and the owner's labels, as affinity terms do).
type Spread struct {
	Key string
	// MaxSkew is at least 1.
	MaxSkew int
	// MinDomains is at least 1: kube-scheduler reads an unset minDomains as 1.
	MinDomains int
	// Hard: DoNotSchedule. Soft constraints (ScheduleAnyway) are preferences: kube-scheduler only
	// scores them, and its filter ignores them.
	Hard bool
	// HonorAffinity: nodeAffinityPolicy Honor, the default — only nodes the pod's own node
	// selector and required node affinity admit are counted.
	HonorAffinity bool
	// HonorTaints: nodeTaintsPolicy Honor — only nodes whose taints the pod tolerates are
	// counted. The default is Ignore.
	HonorTaints bool
}

// FromConstraint reads c with kube-scheduler's defaults (podtopologyspread's
// filterTopologySpreadConstraints): minDomains 1, nodeAffinityPolicy Honor, nodeTaintsPolicy
// Ignore; a maxSkew below 1 (invalid, refused by the API server) is read as 1.
func FromConstraint(c corev1.TopologySpreadConstraint) Spread {
	s := Spread{Key: c.TopologyKey, MaxSkew: int(max(c.MaxSkew, 1)), MinDomains: 1,
		Hard: c.WhenUnsatisfiable != corev1.ScheduleAnyway, HonorAffinity: true}
	if c.MinDomains != nil {
		s.MinDomains = int(max(*c.MinDomains, 1))
	}
	if c.NodeAffinityPolicy != nil {
		s.HonorAffinity = *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	}
	if c.NodeTaintsPolicy != nil {
		s.HonorTaints = *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	}
	return s
}

// String identifies the constraint's parameters (not its selector or scope).
func (s Spread) String() string {
	return fmt.Sprintf("%s|%d|%d|%t|%t|%t", s.Key, s.MaxSkew, s.MinDomains, s.Hard, s.HonorAffinity, s.HonorTaints)
}

// Keys are the topology keys of the pod's constraints cs that are hard (DoNotSchedule) or soft
// as hard says, sorted, once each: kube-scheduler counts, for each constraint, only nodes that
// have the keys of all the pod's constraints of its kind (its filter reads the DoNotSchedule
// ones, its scoring the others).
func Keys(cs []corev1.TopologySpreadConstraint, hard bool) []string {
	var keys []string
	for _, c := range cs {
		if (c.WhenUnsatisfiable != corev1.ScheduleAnyway) == hard && !slices.Contains(keys, c.TopologyKey) {
			keys = append(keys, c.TopologyKey)
		}
	}
	slices.Sort(keys)
	return keys
}

// Labelled reports whether every node the solver can launch or knows has key: the hostname
// and the zone always are (a launched node gets both); any other key only where a node's or an
// instance type's labels say so, which the solver must then require.
func Labelled(key string) bool { return key == nodeplan.LabelHostname || key == nodeplan.LabelZone }

// Counted returns the node selection whose nodes the constraint counts for a pod whose own
// node selection is affinity (alternatives, any one of which admits a node) and whose
// DoNotSchedule constraints have keys: affinity under nodeAffinityPolicy Honor, any node
// under Ignore; and, either way, only nodes with every one of keys (kube-scheduler's
// nodeLabelsMatchSpreadConstraints) — the keys every node has aside.
func (s Spread) Counted(affinity []nodeplan.Requirements, keys []string) []nodeplan.Requirements {
	alts := []nodeplan.Requirements{nodeplan.NewRequirements()}
	if s.HonorAffinity {
		alts = affinity
	}
	var need []nodeplan.Requirement
	for _, k := range keys {
		if !Labelled(k) {
			need = append(need, nodeplan.Exists(k))
		}
	}
	if len(need) == 0 {
		return alts
	}
	out := make([]nodeplan.Requirements, len(alts))
	for i, a := range alts {
		for _, r := range need {
			a = a.Add(r)
		}
		out[i] = a
	}
	return out
}

// Scope names what decides the nodes the constraint counts for one pod: the node selection
// Counted returns and, under nodeTaintsPolicy Honor, the pod's tolerations (as text, in the
// caller's canonical form). Carriers of one constraint count the same nodes exactly when their
// scopes are equal; kube-scheduler judges each pod against its own.
func (s Spread) Scope(affinity []nodeplan.Requirements, keys []string, tolerations string) string {
	var b strings.Builder
	for i, a := range s.Counted(affinity, keys) {
		if i > 0 {
			b.WriteString(" || ")
		}
		b.WriteString(a.String())
	}
	if s.HonorTaints {
		b.WriteString(" | tolerates ")
		b.WriteString(tolerations)
	}
	return b.String()
}

// WholeDomains reports whether counted (a node selection Counted returned) admits a node by
// its value of key alone: then every node of a domain the constraint counts is counted, and
// so is every pod placed there, whatever its own node selection.
func WholeDomains(counted []nodeplan.Requirements, key string) bool {
	for _, a := range counted {
		for _, k := range a.Keys() {
			if k != key {
				return false
			}
		}
	}
	return true
}
