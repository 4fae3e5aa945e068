package controller

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type named interface{ GetName() string }

// sortByName sorts objects by name, so every list the controller builds is in a stable order.
func sortByName[T named](xs []T) {
	slices.SortFunc(xs, func(a, b T) int { return strings.Compare(a.GetName(), b.GetName()) })
}

var _ named = (*metav1.ObjectMeta)(nil)

// Resources renders a resource list in logs: an object in JSON ({"cpu":"7910m",…}), and
// cpu:7910m,memory:14162Mi in text, in name order.
type Resources corev1.ResourceList

// LogValue implements slog.LogValuer.
func (r Resources) LogValue() slog.Value {
	keys := slices.Sorted(maps.Keys(r))
	attrs := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		q := r[k]
		attrs = append(attrs, slog.String(string(k), q.String()))
	}
	return slog.GroupValue(attrs...)
}

// Dollars renders a price in $/h: a number in JSON, $0.0731/h in text.
type Dollars float64

// LogValue implements slog.LogValuer: JSON handlers see the number.
func (d Dollars) LogValue() slog.Value { return slog.Float64Value(float64(d)) }

// String formats the price for people.
func (d Dollars) String() string { return fmt.Sprintf("$%.4f/h", float64(d)) }

// PriceChange names what a command does to the fleet's $/h the way a person reads it:
// "savings" when the fleet gets cheaper, "cost-increase" when a drifted or expired node is
// replaced by a dearer one — never a negative saving. A change smaller than the figure shows
// ($0.0001/h), such as a like-for-like replacement's rounding, is no saving and no increase.
func PriceChange(savings float64) (key string, amount Dollars) {
	if savings <= -0.00005 {
		return "cost-increase", Dollars(-savings)
	}
	return "savings", Dollars(max(savings, 0))
}
