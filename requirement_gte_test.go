package nodeplan

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"
)

// Karpenter v1.14: Gte n is the inclusive bound, Gt (n-1); Lte n is Lt (n+1); values are single
// non-negative integers; a non-integer label value never matches.
func TestGteLte(t *testing.T) {
	tests := []struct {
		op           corev1.NodeSelectorOperator
		bound, value string
		want         bool
	}{
		{NodeSelectorOpGte, "4", "4", true},
		{NodeSelectorOpGte, "4", "3", false},
		{NodeSelectorOpGte, "4", "5", true},
		{NodeSelectorOpGte, "0", "0", true},
		{NodeSelectorOpGte, "0", "-1", false},
		{NodeSelectorOpGte, "4", "four", false},
		{NodeSelectorOpLte, "4", "4", true},
		{NodeSelectorOpLte, "4", "5", false},
		{NodeSelectorOpLte, "4", "-3", true},
		{NodeSelectorOpLte, "4", "", false},
	}
	for _, tt := range tests {
		r := mustRequirement(t, "karpenter.k8s.aws/instance-cpu", tt.op, tt.bound)
		if got := r.Accepts(tt.value, true); got != tt.want {
			t.Errorf("NewRequirement(cpu, %s, %s).Accepts(%q) = %v, want %v", tt.op, tt.bound, tt.value, got, tt.want)
		}
		if r.Accepts("", false) {
			t.Errorf("NewRequirement(cpu, %s, %s) accepts an absent label", tt.op, tt.bound)
		}
	}
	for _, bad := range [][]string{{"-1"}, {"x"}, {}, {"1", "2"}, {"1.5"}, {"9223372036854775807"}} {
		if r, err := NewRequirement("k", NodeSelectorOpLte, bad...); err == nil {
			t.Errorf("NewRequirement(k, Lte, %q) = %v, nil; want an error", bad, r)
		}
	}
	if v, ok := mustRequirement(t, "k", NodeSelectorOpGte, "4").Intersect(mustRequirement(t, "k", NodeSelectorOpLte, "4")).Single(); !ok || v != "4" {
		t.Errorf("Gte 4 ∩ Lte 4 = %q, %v; want the single value 4", v, ok)
	}
	if r := mustRequirement(t, "k", NodeSelectorOpGte, "5").Intersect(mustRequirement(t, "k", NodeSelectorOpLte, "4")); !r.IsEmpty() {
		t.Errorf("Gte 5 ∩ Lte 4 = %v, want empty", r)
	}
}

// TestPropertyGteIsGtMinusOne: on every value, Gte n accepts what Gt n-1 accepts and Lte n what
// Lt n+1 accepts, alone and intersected with any other requirement.
func TestPropertyGteIsGtMinusOne(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 6).Draw(t, "n")
		other := genRequirement("k").Draw(t, "other")
		pairs := [][2]Requirement{
			{mustRequirementR(t, NodeSelectorOpGte, n), mustRequirementR(t, corev1.NodeSelectorOpGt, n-1)},
			{mustRequirementR(t, NodeSelectorOpLte, n), mustRequirementR(t, corev1.NodeSelectorOpLt, n+1)},
		}
		for _, p := range pairs {
			for _, v := range universe {
				for _, present := range []bool{true, false} {
					if a, b := p[0].Accepts(v, present), p[1].Accepts(v, present); a != b {
						t.Fatalf("%v accepts (%q, %v) = %v but %v = %v", p[0], v, present, a, p[1], b)
					}
					if a, b := p[0].Intersect(other).Accepts(v, present), p[1].Intersect(other).Accepts(v, present); a != b {
						t.Fatalf("(%v ∩ %v) accepts (%q, %v) = %v but with %v = %v", p[0], other, v, present, a, p[1], b)
					}
				}
			}
		}
	})
}

func mustRequirementR(t *rapid.T, op corev1.NodeSelectorOperator, n int) Requirement {
	r, err := NewRequirement("k", op, strconv.Itoa(n))
	if err != nil {
		t.Fatal(err)
	}
	return r
}
