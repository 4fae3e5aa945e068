package nodeplan

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ToleratesTaint reports whether one toleration matches a taint, by Kubernetes' rules: an empty
// effect matches every effect; an empty key with Exists matches every key; Exists matches any
// value; Equal (or no operator) needs equal values; Gt and Lt compare integer values (the taint's
// value against the toleration's) and match nothing when either is not an integer.
func ToleratesTaint(t corev1.Toleration, taint corev1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case "", corev1.TolerationOpEqual:
		return t.Key != "" && t.Value == taint.Value
	case corev1.TolerationOpExists:
		return true
	case corev1.TolerationOpGt, corev1.TolerationOpLt:
		tv, ok1 := decimalInteger(t.Value)
		nv, ok2 := decimalInteger(taint.Value)
		if !ok1 || !ok2 || t.Key == "" {
			return false
		}
		if t.Operator == corev1.TolerationOpGt {
			return nv > tv
		}
		return nv < tv
	}
	return false
}

// Tolerates reports whether some toleration in the list matches the taint.
func Tolerates(tolerations []corev1.Toleration, taint corev1.Taint) bool {
	for i := range tolerations {
		if ToleratesTaint(tolerations[i], taint) {
			return true
		}
	}
	return false
}

// UntoleratedTaint returns the first taint that keeps a pod with these tolerations off a node:
// a NoSchedule or NoExecute taint it does not tolerate. PreferNoSchedule taints never block (they
// are preferences). ok is false when the pod tolerates every blocking taint.
func UntoleratedTaint(tolerations []corev1.Toleration, taints []corev1.Taint) (taint corev1.Taint, ok bool) {
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !Tolerates(tolerations, t) {
			return t, true
		}
	}
	return corev1.Taint{}, false
}

// TaintString formats a taint the way kubectl does: key=value:Effect, or key:Effect without a value.
func TaintString(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// decimalInteger parses s as Kubernetes compares taint values: a canonical base-10 integer, with
// no sign but an optional '-', and no leading zeros ("05", "+5" and "-0" are not integers).
func decimalInteger(s string) (int64, bool) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || (digits[0] == '0' && (len(digits) > 1 || len(s) > 1)) || digits[0] == '+' {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
