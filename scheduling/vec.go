package scheduling

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling/internal/knapsack"
	"k8s.io/apimachinery/pkg/api/resource"
)

// dims interns resource names into vector indices for one solve. Every amount is kept in
// milli-units (resource.Quantity.MilliValue), so cpu, memory bytes, pod counts and GPUs share one
// exact integer representation.
type dims struct {
	names []corev1.ResourceName
	index map[corev1.ResourceName]int
}

// vec is an amount of every interned resource.
type vec []int64

func newDims() *dims {
	d := &dims{index: map[corev1.ResourceName]int{}}
	// The common dimensions first, so they sit at fixed small indices.
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		d.add(n)
	}
	return d
}

const (
	dimCPU    = 0
	dimMemory = 1
	dimPods   = 2
)

func (d *dims) add(n corev1.ResourceName) int {
	if i, ok := d.index[n]; ok {
		return i
	}
	d.index[n] = len(d.names)
	d.names = append(d.names, n)
	return len(d.names) - 1
}

func (d *dims) addAll(rl corev1.ResourceList) {
	// Usually every name is known already (a catalog names the same few resources hundreds of
	// times): then there is nothing to sort. Looking each dimension up in the list says so
	// without starting an iteration over it (most of the cost of a short list).
	if len(rl) <= len(d.names) {
		known := 0
		for _, n := range d.names {
			if _, ok := rl[n]; ok {
				known++
			}
		}
		if known == len(rl) {
			return
		}
	}
	names := make([]corev1.ResourceName, 0, len(rl))
	for n := range rl {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		d.add(n)
	}
}

// vec converts a resource list; names not interned are dropped (the caller interns first).
func (d *dims) vec(rl corev1.ResourceList) vec {
	v := make(vec, len(d.names))
	d.vecInto(v, rl)
	return v
}

// vecInto is vec writing into v (zeroed, of the dimensions' length).
func (d *dims) vecInto(v vec, rl corev1.ResourceList) {
	if len(rl)*2 >= len(d.names) {
		// A lookup per dimension costs a third of walking the map (an instance type's capacity
		// names most dimensions); a short list (a pod's requests) is walked instead.
		for i, n := range d.names {
			if q, ok := rl[n]; ok {
				v[i] = nodeplan.MilliValue(q) // saturated: 9E fits nowhere instead of wrapping
			}
		}
		return
	}
	for n, q := range rl {
		if i, ok := d.index[n]; ok {
			v[i] = nodeplan.MilliValue(q)
		}
	}
}

func (d *dims) list(v vec) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i, x := range v {
		if x == 0 {
			continue
		}
		n := d.names[i]
		switch {
		case n == corev1.ResourceCPU:
			out[n] = *resource.NewMilliQuantity(x, resource.DecimalSI)
		case x%1000 == 0 && (n == corev1.ResourceMemory || n == corev1.ResourceEphemeralStorage || isHugePages(n)):
			out[n] = *resource.NewQuantity(x/1000, resource.BinarySI)
		case x%1000 == 0:
			out[n] = *resource.NewQuantity(x/1000, resource.DecimalSI)
		default:
			out[n] = *resource.NewMilliQuantity(x, resource.DecimalSI)
		}
	}
	return out
}

func isHugePages(n corev1.ResourceName) bool {
	return len(n) > 10 && n[:10] == "hugepages-"
}

// fitsIn reports whether a ≤ b in every dimension.
func (a vec) fitsIn(b vec) bool {
	for i, x := range a {
		if x > b[i] {
			return false
		}
	}
	return true
}

func (a vec) add(b vec) {
	for i := range a {
		a[i] += b[i]
	}
}

func (a vec) sub(b vec) {
	for i := range a {
		a[i] -= b[i]
	}
}

// addScaled adds k·b to a.
func (a vec) addScaled(b vec, k int64) {
	for i := range a {
		a[i] += b[i] * k
	}
}

// maxCopies returns how many copies of req fit into free (capped at limit).
func maxCopies(req, free vec, limit int64) int64 { return knapsack.MaxCopies(req, free, limit) }

// maxCopiesLeft is maxCopies(req, alloc-used, limit) without building the difference.
func maxCopiesLeft(req, alloc, used vec, limit int64) int64 {
	k := limit
	for i, r := range req {
		free := alloc[i] - used[i]
		if r <= 0 {
			if free < 0 {
				return 0
			}
			continue
		}
		if c := free / r; c < k {
			k = c
		}
		if k <= 0 {
			return 0
		}
	}
	return k
}

func (a vec) clone() vec { return slices.Clone(a) }

// nonNegative floors every amount at zero.
func (a vec) nonNegative() vec {
	for i := range a {
		if a[i] < 0 {
			a[i] = 0
		}
	}
	return a
}
