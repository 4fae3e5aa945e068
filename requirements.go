package nodeplan

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Requirements is a conjunction of label requirements, at most one per key (requirements on the
// same key are intersected). A key it does not mention is unconstrained.
//
// The same type describes both sides of scheduling: what a pod demands of a node (nodeSelector,
// required node affinity) and what a node may be (NodePool requirements and labels, instance-type
// labels, offerings). [Requirements.Compatible] relates the two.
//
// The zero value is the empty conjunction, which everything satisfies. Requirements is a value
// type: methods return new values and never modify their receiver or arguments.
type Requirements struct {
	reqs []Requirement // sorted by Key, unique keys
}

// NewRequirements returns the conjunction of reqs; requirements on the same key are intersected.
func NewRequirements(reqs ...Requirement) Requirements {
	var rs Requirements
	for _, r := range reqs {
		rs = rs.Add(r)
	}
	return rs
}

// RequirementsFromLabels returns the requirements "key In [value]" for every label: what a node
// with exactly these labels offers, or what a nodeSelector map demands.
func RequirementsFromLabels(labels map[string]string) Requirements {
	// Three allocations whatever the number of labels: the solver builds one per instance type
	// and node, and a slice per value was most of a small solve's garbage.
	l := newLabelReqs(labels)
	reqs := make([]Requirement, len(l.keys))
	for i := range l.keys {
		reqs[i] = l.at(i)
	}
	return Requirements{reqs: reqs}
}

// IntersectLabels returns rs.Intersect(RequirementsFromLabels(labels)), without building the
// labels' requirements apart: for a caller that narrows one set of requirements by many label
// sets (a catalog's instance types), the list it would throw away is most of the garbage.
func (rs Requirements) IntersectLabels(labels map[string]string) Requirements {
	if len(labels) == 0 || len(rs.reqs) == 0 {
		return rs.Intersect(RequirementsFromLabels(labels))
	}
	l := newLabelReqs(labels)
	out := make([]Requirement, 0, len(rs.reqs)+len(l.keys))
	i, j := 0, 0
	for i < len(rs.reqs) && j < len(l.keys) {
		a := rs.reqs[i]
		switch {
		case a.Key < l.keys[j]:
			out = append(out, a)
			i++
		case a.Key > l.keys[j]:
			out = append(out, l.at(j))
			j++
		default:
			out = append(out, a.Intersect(l.at(j)))
			i++
			j++
		}
	}
	out = append(out, rs.reqs[i:]...)
	for ; j < len(l.keys); j++ {
		out = append(out, l.at(j))
	}
	return Requirements{reqs: out}
}

// labelReqs are labels as "key In [value]" requirements in key order: the keys sorted, the
// values in one backing array, each requirement's value slice capped at its own element so an
// append elsewhere copies.
type labelReqs struct {
	keys, values []string
}

func newLabelReqs(labels map[string]string) labelReqs {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	values := make([]string, len(keys))
	for i, k := range keys {
		values[i] = labels[k]
	}
	return labelReqs{keys: keys, values: values}
}

func (l labelReqs) at(i int) Requirement {
	return Requirement{Key: l.keys[i], finite: true, mustExist: true, values: l.values[i : i+1 : i+1]}
}

// RequirementsFromNodeSelector converts node-selector expressions (ANDed, as within one
// NodeSelectorTerm) into Requirements. Every invalid expression is reported, joined.
func RequirementsFromNodeSelector(exprs []corev1.NodeSelectorRequirement) (Requirements, error) {
	var rs Requirements
	var errs []error
	for _, e := range exprs {
		r, err := NewRequirement(e.Key, e.Operator, e.Values...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rs = rs.Add(r)
	}
	return rs, errors.Join(errs...)
}

// Len returns the number of keys constrained.
func (rs Requirements) Len() int { return len(rs.reqs) }

// All returns the requirements sorted by key. The caller must not modify the slice.
func (rs Requirements) All() []Requirement { return rs.reqs }

// Keys returns the constrained keys in sorted order.
func (rs Requirements) Keys() []string {
	keys := make([]string, len(rs.reqs))
	for i, r := range rs.reqs {
		keys[i] = r.Key
	}
	return keys
}

func (rs Requirements) index(key string) (int, bool) {
	if len(rs.reqs) < 8 {
		for i, r := range rs.reqs {
			if r.Key == key {
				return i, true
			}
			if r.Key > key {
				return i, false
			}
		}
		return len(rs.reqs), false
	}
	return slices.BinarySearchFunc(rs.reqs, key, func(r Requirement, k string) int { return strings.Compare(r.Key, k) })
}

// Get returns the requirement on key, if there is one.
func (rs Requirements) Get(key string) (Requirement, bool) {
	if i, ok := rs.index(key); ok {
		return rs.reqs[i], true
	}
	return Requirement{Key: key}, false
}

// Has reports whether key is constrained.
func (rs Requirements) Has(key string) bool {
	_, ok := rs.index(key)
	return ok
}

// Add returns rs with r intersected into it.
func (rs Requirements) Add(r Requirement) Requirements {
	i, ok := rs.index(r.Key)
	out := make([]Requirement, len(rs.reqs), len(rs.reqs)+1)
	copy(out, rs.reqs)
	if ok {
		out[i] = out[i].Intersect(r)
	} else {
		out = slices.Insert(out, i, r)
	}
	return Requirements{reqs: out}
}

// Intersect returns the conjunction of rs and o: the labels that satisfy both.
func (rs Requirements) Intersect(o Requirements) Requirements {
	if len(o.reqs) == 0 {
		return rs
	}
	if len(rs.reqs) == 0 {
		return o
	}
	out := make([]Requirement, 0, len(rs.reqs)+len(o.reqs))
	i, j := 0, 0
	for i < len(rs.reqs) && j < len(o.reqs) {
		a, b := rs.reqs[i], o.reqs[j]
		switch {
		case a.Key < b.Key:
			out = append(out, a)
			i++
		case a.Key > b.Key:
			out = append(out, b)
			j++
		default:
			out = append(out, a.Intersect(b))
			i++
			j++
		}
	}
	out = append(out, rs.reqs[i:]...)
	out = append(out, o.reqs[j:]...)
	return Requirements{reqs: out}
}

// IsEmpty reports whether no label set satisfies rs.
func (rs Requirements) IsEmpty() bool {
	for _, r := range rs.reqs {
		if r.IsEmpty() {
			return true
		}
	}
	return false
}

// Intersects reports whether some label set satisfies both rs and o. It does not allocate in the
// common cases.
func (rs Requirements) Intersects(o Requirements) bool {
	i, j := 0, 0
	for i < len(rs.reqs) || j < len(o.reqs) {
		switch {
		case j == len(o.reqs) || (i < len(rs.reqs) && rs.reqs[i].Key < o.reqs[j].Key):
			if rs.reqs[i].IsEmpty() {
				return false
			}
			i++
		case i == len(rs.reqs) || rs.reqs[i].Key > o.reqs[j].Key:
			if o.reqs[j].IsEmpty() {
				return false
			}
			j++
		default:
			if !rs.reqs[i].Intersects(o.reqs[j]) {
				return false
			}
			i++
			j++
		}
	}
	return true
}

// Matches reports whether a node with exactly these labels satisfies every requirement, with
// Kubernetes' semantics for a missing key: NotIn and DoesNotExist accept it, the others do not.
// It does not allocate.
func (rs Requirements) Matches(labels map[string]string) bool {
	for i := range rs.reqs {
		v, ok := labels[rs.reqs[i].Key]
		if !rs.reqs[i].Accepts(v, ok) {
			return false
		}
	}
	return true
}

// Compatible reports whether a node described by rs can satisfy the demands in pod. Here rs
// describes a node completely: a key rs does not mention is a label the node will not have. So a
// demand on such a key is met only if it accepts a missing label (NotIn, DoesNotExist).
//
// It returns nil when compatible, or an [*IncompatibleError] naming the first key that fails.
func (rs Requirements) Compatible(pod Requirements) error {
	for _, p := range pod.reqs {
		n, ok := rs.Get(p.Key)
		if !ok {
			if p.Accepts("", false) {
				continue
			}
			return &IncompatibleError{Key: p.Key, Want: p, Have: DoesNotExist(p.Key)}
		}
		if !n.Intersects(p) {
			return &IncompatibleError{Key: p.Key, Want: p, Have: n}
		}
	}
	return nil
}

// IncompatibleError says which label key keeps a pod off a node and what each side allows.
type IncompatibleError struct {
	Key  string
	Want Requirement // what the pod demands
	Have Requirement // what the node may be
}

func (e *IncompatibleError) Error() string {
	if e.Have.finite && !e.Have.mustExist && len(e.Have.values) == 0 {
		return fmt.Sprintf("requires %s, but the node has no label %s", e.Want, e.Key)
	}
	return fmt.Sprintf("requires %s, but the node offers %s", e.Want, e.Have)
}

// Labels returns the labels a node described by rs is sure to get: every key pinned to a single
// value.
func (rs Requirements) Labels() map[string]string {
	out := map[string]string{}
	for _, r := range rs.reqs {
		if v, ok := r.Single(); ok {
			out[r.Key] = v
		}
	}
	return out
}

// NodeSelectorRequirements returns expressions, to be ANDed, equivalent to rs; MinValues are
// dropped (see [Requirement.MinValues]).
func (rs Requirements) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	var out []corev1.NodeSelectorRequirement
	for _, r := range rs.reqs {
		out = append(out, r.NodeSelectorRequirements()...)
	}
	return out
}

// String formats rs for messages, one requirement after another, joined by ", ".
func (rs Requirements) String() string {
	parts := make([]string, len(rs.reqs))
	for i, r := range rs.reqs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ", ")
}

// Equal reports whether rs and o hold the same requirements.
func (rs Requirements) Equal(o Requirements) bool {
	return slices.EqualFunc(rs.reqs, o.reqs, Requirement.Equal)
}
