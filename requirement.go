package nodeplan

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Requirement constrains one node label. It is the set of label values a node may have for Key,
// together with whether the node may lack the label altogether — the two things Kubernetes'
// node-selector operators talk about:
//
//	In v...      present, one of v
//	NotIn v...   absent, or present and none of v
//	Exists       present, any value
//	DoesNotExist absent
//	Gt n         present, an integer greater than n
//	Lt n         present, an integer less than n
//	Gte n        present, an integer at least n (Karpenter v1.14; NodePools only)
//	Lte n        present, an integer at most n (Karpenter v1.14; NodePools only)
//
// Requirements built from several operators on the same key are intersected exactly, so "Exists
// and NotIn [a]" stays "present and not a" rather than losing the Exists.
//
// The zero value (with a Key) accepts everything: present with any value, or absent. Requirement
// is a value type; its methods never modify it.
type Requirement struct {
	// Key is the label key.
	Key string
	// MinValues, when positive, asks for at least this many distinct values of Key among the
	// instance types a NodeClaim may launch as (Karpenter's minValues): flexibility for the
	// provider, e.g. at least 5 instance families so a spot launch can pick the deepest pool.
	MinValues int

	// finite: values lists every allowed present value. Otherwise values lists the excluded ones.
	finite bool
	// mustExist: an absent label does not satisfy the requirement.
	mustExist bool
	// values is sorted and has no duplicates.
	values []string
	// Inclusive integer bounds on present values; only when !finite (a finite set is filtered instead).
	hasMin, hasMax bool
	min, max       int64
}

// Karpenter v1.14's inclusive integer operators. Kubernetes' node affinity has no such
// operators: a requirement built from them turns into Gt/Lt in [Requirement.NodeSelectorRequirements].
const (
	// NodeSelectorOpGte accepts an integer label value at least the requirement's value.
	NodeSelectorOpGte corev1.NodeSelectorOperator = "Gte"
	// NodeSelectorOpLte accepts an integer label value at most the requirement's value.
	NodeSelectorOpLte corev1.NodeSelectorOperator = "Lte"
)

// NewRequirement builds a requirement from a Kubernetes node-selector operator, on the stable key
// a deprecated beta key means ([NormalizedLabel]). In and NotIn take
// one or more values; Exists and DoesNotExist none; Gt and Lt exactly one integer; Gte and Lte
// exactly one non-negative integer (Karpenter's NodePool validation), Lte below 2^63-1.
func NewRequirement(key string, op corev1.NodeSelectorOperator, values ...string) (Requirement, error) {
	key = NormalizedLabel(key)
	r := Requirement{Key: key}
	if key == "" {
		return r, fmt.Errorf("nodeplan: requirement with operator %s has an empty key", op)
	}
	switch op {
	case corev1.NodeSelectorOpIn:
		if len(values) == 0 {
			return r, fmt.Errorf("nodeplan: requirement %s In needs at least one value", key)
		}
		r.finite, r.mustExist, r.values = true, true, sortedUnique(values)
	case corev1.NodeSelectorOpNotIn:
		if len(values) == 0 {
			return r, fmt.Errorf("nodeplan: requirement %s NotIn needs at least one value", key)
		}
		r.values = sortedUnique(values)
	case corev1.NodeSelectorOpExists:
		if len(values) != 0 {
			return r, fmt.Errorf("nodeplan: requirement %s Exists takes no values, got %q", key, values)
		}
		r.mustExist = true
	case corev1.NodeSelectorOpDoesNotExist:
		if len(values) != 0 {
			return r, fmt.Errorf("nodeplan: requirement %s DoesNotExist takes no values, got %q", key, values)
		}
		r.finite = true
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(values) != 1 {
			return r, fmt.Errorf("nodeplan: requirement %s %s needs exactly one integer value, got %q", key, op, values)
		}
		n, err := strconv.ParseInt(values[0], 10, 64)
		if err != nil {
			return r, fmt.Errorf("nodeplan: requirement %s %s needs an integer value, got %q", key, op, values[0])
		}
		r.mustExist = true
		if op == corev1.NodeSelectorOpGt {
			if n == math.MaxInt64 {
				return r.Intersect(Requirement{Key: key, finite: true, mustExist: true}), nil
			}
			r.hasMin, r.min = true, n+1
		} else {
			if n == math.MinInt64 {
				return r.Intersect(Requirement{Key: key, finite: true, mustExist: true}), nil
			}
			r.hasMax, r.max = true, n-1
		}
	case NodeSelectorOpGte, NodeSelectorOpLte:
		if len(values) != 1 {
			return r, fmt.Errorf("nodeplan: requirement %s %s needs exactly one integer value, got %q", key, op, values)
		}
		n, err := strconv.ParseInt(values[0], 10, 64)
		if err != nil || n < 0 {
			return r, fmt.Errorf("nodeplan: requirement %s %s needs a non-negative integer value, got %q", key, op, values[0])
		}
		r.mustExist = true
		if op == NodeSelectorOpGte {
			r.hasMin, r.min = true, n
		} else {
			if n == math.MaxInt64 {
				// Lt cannot express it; no label value of 2^63-1 is worth the inexactness.
				return r, fmt.Errorf("nodeplan: requirement %s Lte needs a value below %d, got %q", key, int64(math.MaxInt64), values[0])
			}
			r.hasMax, r.max = true, n
		}
	default:
		return r, fmt.Errorf("nodeplan: requirement %s has unknown operator %q (want In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte)", key, op)
	}
	return r, nil
}

// In returns the requirement "key is one of values". It is the common case and cannot fail.
func In(key string, values ...string) Requirement {
	return Requirement{Key: key, finite: true, mustExist: true, values: sortedUnique(values)}
}

// NotIn returns the requirement "key is absent or none of values".
func NotIn(key string, values ...string) Requirement {
	return Requirement{Key: key, values: sortedUnique(values)}
}

// Exists returns the requirement "key is present".
func Exists(key string) Requirement { return Requirement{Key: key, mustExist: true} }

// DoesNotExist returns the requirement "key is absent".
func DoesNotExist(key string) Requirement { return Requirement{Key: key, finite: true} }

func sortedUnique(values []string) []string {
	if len(values) == 0 {
		return nil
	}
	out := slices.Clone(values)
	slices.Sort(out)
	return slices.Compact(out)
}

// Accepts reports whether a node whose label Key has value (present) or is missing (!present)
// satisfies r. It does not allocate.
func (r Requirement) Accepts(value string, present bool) bool {
	if !present {
		return !r.mustExist
	}
	return r.acceptsValue(value)
}

func (r Requirement) acceptsValue(v string) bool {
	if r.hasMin || r.hasMax {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || (r.hasMin && n < r.min) || (r.hasMax && n > r.max) {
			return false
		}
	}
	return r.contains(v) == r.finite
}

func (r Requirement) contains(v string) bool {
	if len(r.values) < 8 {
		for _, x := range r.values {
			if x == v {
				return true
			}
		}
		return false
	}
	_, ok := slices.BinarySearch(r.values, v)
	return ok
}

// Intersect returns the requirement met exactly by the labels that meet both r and o. The result
// keeps r's Key and the larger MinValues.
func (r Requirement) Intersect(o Requirement) Requirement {
	out := Requirement{Key: r.Key, MinValues: max(r.MinValues, o.MinValues), mustExist: r.mustExist || o.mustExist}
	switch {
	case r.finite && o.finite:
		out.finite = true
		out.values = intersectSorted(r.values, o.values)
	case r.finite || o.finite:
		f, c := r, o
		if !f.finite {
			f, c = o, r
		}
		out.finite = true
		for _, v := range f.values {
			if c.acceptsValue(v) {
				out.values = append(out.values, v)
			}
		}
	default:
		out.values = mergeSorted(r.values, o.values)
		out.hasMin, out.min = r.hasMin || o.hasMin, boundMax(r.hasMin, r.min, o.hasMin, o.min)
		out.hasMax, out.max = r.hasMax || o.hasMax, boundMin(r.hasMax, r.max, o.hasMax, o.max)
		out = out.normalizeBounds()
	}
	return out
}

// normalizeBounds turns a small or empty integer range into the finite set it stands for, so
// that emptiness and equality are easy to decide.
func (r Requirement) normalizeBounds() Requirement {
	if !r.hasMin || !r.hasMax {
		return r
	}
	if r.min > r.max || uint64(r.max-r.min) <= uint64(len(r.values)) {
		var vals []string
		for n := r.min; n <= r.max && r.min <= r.max; n++ {
			s := strconv.FormatInt(n, 10)
			if !r.contains(s) {
				vals = append(vals, s)
			}
			if n == math.MaxInt64 {
				break
			}
		}
		return Requirement{Key: r.Key, MinValues: r.MinValues, finite: true, mustExist: r.mustExist, values: vals}
	}
	return r
}

func boundMax(ha bool, a int64, hb bool, b int64) int64 {
	switch {
	case ha && hb:
		return max(a, b)
	case ha:
		return a
	}
	return b
}

func boundMin(ha bool, a int64, hb bool, b int64) int64 {
	switch {
	case ha && hb:
		return min(a, b)
	case ha:
		return a
	}
	return b
}

// intersectSorted returns the values in both sorted lists, in one allocation (none when empty).
func intersectSorted(a, b []string) []string {
	var out []string
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			if out == nil {
				out = make([]string, 0, min(len(a)-i, len(b)-j))
			}
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

func mergeSorted(a, b []string) []string {
	if len(a) == 0 {
		return b
	}
	if len(b) == 0 {
		return a
	}
	out := make([]string, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case a[i] > b[j]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// IsEmpty reports whether no node at all satisfies r: it demands the label and allows no value.
func (r Requirement) IsEmpty() bool {
	return r.mustExist && !r.hasPresentValue()
}

func (r Requirement) hasPresentValue() bool {
	if r.finite {
		return len(r.values) > 0
	}
	// A co-finite set of strings is infinite; with bounds, normalizeBounds keeps only ranges larger
	// than the excluded list, so some integer in range is allowed.
	return !(r.hasMin && r.hasMax && r.min > r.max)
}

// Intersects reports whether some label value (or absence) satisfies both r and o. It is
// [Requirement.Intersect] followed by ![Requirement.IsEmpty], without allocating in the common cases.
func (r Requirement) Intersects(o Requirement) bool {
	if !r.mustExist && !o.mustExist {
		return true
	}
	switch {
	case r.finite && o.finite:
		for _, v := range r.values {
			if o.contains(v) {
				return true
			}
		}
		return false
	case r.finite:
		for _, v := range r.values {
			if o.acceptsValue(v) {
				return true
			}
		}
		return false
	case o.finite:
		for _, v := range o.values {
			if r.acceptsValue(v) {
				return true
			}
		}
		return false
	}
	if (r.hasMin || o.hasMin) && (r.hasMax || o.hasMax) {
		return r.Intersect(o).hasPresentValue()
	}
	return true
}

// Len returns the number of allowed present values, or math.MaxInt when they are not a finite set.
func (r Requirement) Len() int {
	if r.finite {
		return len(r.values)
	}
	return math.MaxInt
}

// Values returns the allowed present values when they are a finite set (In), or the excluded
// values otherwise (NotIn). The caller must not modify the slice.
func (r Requirement) Values() []string { return r.values }

// Single returns the only allowed value, when the requirement pins the label to exactly one value.
func (r Requirement) Single() (string, bool) {
	if r.finite && r.mustExist && len(r.values) == 1 {
		return r.values[0], true
	}
	return "", false
}

// Operator names the single Kubernetes operator that best describes r: In for a finite set,
// DoesNotExist for "absent only", NotIn for an exclusion list, Exists for "any value", Gt or Lt
// for an integer bound. [Requirement.NodeSelectorRequirements] gives the exact form.
func (r Requirement) Operator() corev1.NodeSelectorOperator {
	switch {
	case r.finite && r.mustExist:
		return corev1.NodeSelectorOpIn
	case r.finite:
		if len(r.values) == 0 {
			return corev1.NodeSelectorOpDoesNotExist
		}
		return corev1.NodeSelectorOpIn
	case r.hasMin:
		return corev1.NodeSelectorOpGt
	case r.hasMax:
		return corev1.NodeSelectorOpLt
	case !r.mustExist:
		return corev1.NodeSelectorOpNotIn
	}
	return corev1.NodeSelectorOpExists
}

// NodeSelectorRequirements returns node-selector expressions, to be ANDed, that accept exactly
// what r accepts. The zero Requirement (anything goes) gives none.
func (r Requirement) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	var out []corev1.NodeSelectorRequirement
	add := func(op corev1.NodeSelectorOperator, vals ...string) {
		out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: op, Values: vals})
	}
	if r.finite {
		switch {
		case r.mustExist:
			add(corev1.NodeSelectorOpIn, slices.Clone(r.values)...)
		case len(r.values) == 0:
			add(corev1.NodeSelectorOpDoesNotExist)
		default:
			// "absent or one of v" has no node-selector form. No constructor or intersection
			// produces it (every finite, non-empty set comes from In, which demands presence).
			add(corev1.NodeSelectorOpIn, slices.Clone(r.values)...)
		}
		return out
	}
	if r.hasMin {
		add(corev1.NodeSelectorOpGt, strconv.FormatInt(r.min-1, 10))
	}
	if r.hasMax {
		add(corev1.NodeSelectorOpLt, strconv.FormatInt(r.max+1, 10))
	}
	if len(r.values) > 0 {
		add(corev1.NodeSelectorOpNotIn, slices.Clone(r.values)...)
	}
	if r.mustExist && !r.hasMin && !r.hasMax {
		add(corev1.NodeSelectorOpExists)
	}
	return out
}

// String formats r for messages, e.g. `topology.kubernetes.io/zone In [us-east-1a us-east-1b]`.
func (r Requirement) String() string {
	var parts []string
	for _, e := range r.NodeSelectorRequirements() {
		switch e.Operator {
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			parts = append(parts, fmt.Sprintf("%s %s", e.Key, e.Operator))
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			parts = append(parts, fmt.Sprintf("%s %s %s", e.Key, e.Operator, e.Values[0]))
		default:
			parts = append(parts, fmt.Sprintf("%s %s [%s]", e.Key, e.Operator, strings.Join(e.Values, " ")))
		}
	}
	if len(parts) == 0 {
		return r.Key + " (any)"
	}
	s := strings.Join(parts, " and ")
	if r.MinValues > 0 {
		s += fmt.Sprintf(" (minValues %d)", r.MinValues)
	}
	return s
}

// Equal reports whether r and o accept the same labels and have the same key and MinValues.
func (r Requirement) Equal(o Requirement) bool {
	return r.Key == o.Key && r.MinValues == o.MinValues && r.finite == o.finite && r.mustExist == o.mustExist &&
		slices.Equal(r.values, o.values) && r.hasMin == o.hasMin && r.hasMax == o.hasMax &&
		(!r.hasMin || r.min == o.min) && (!r.hasMax || r.max == o.max)
}
