package nodeplan

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"
)

// Small alphabets so that random requirements collide on keys and values. The universe of label
// values holds every generated value plus values no generator produces, so that a brute-force
// search over it finds a witness whenever one exists: "zzz" for exclusion lists, ±1000 for one-sided
// integer bounds, and every integer between the generated bounds.
var (
	testKeys   = []string{"a", "b", "c"}
	testValues = []string{"x", "y", "-1", "0", "1", "2", "3", "5"}
	testBounds = []string{"-2", "0", "1", "2", "3", "4", "6"}
	universe   = func() []string {
		u := []string{"x", "y", "zzz", "-1000", "1000"}
		for n := -3; n <= 7; n++ {
			u = append(u, strconv.Itoa(n))
		}
		return u
	}()
)

var allOperators = []corev1.NodeSelectorOperator{
	corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
	corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt,
	NodeSelectorOpGte, NodeSelectorOpLte,
}

func genRequirement(key string) *rapid.Generator[Requirement] {
	return rapid.Custom(func(t *rapid.T) Requirement {
		op := rapid.SampledFrom(allOperators).Draw(t, "op")
		var values []string
		switch op {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			values = rapid.SliceOfN(rapid.SampledFrom(testValues), 1, 3).Draw(t, "values")
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			values = []string{rapid.SampledFrom(testBounds).Draw(t, "bound")}
		case NodeSelectorOpGte, NodeSelectorOpLte:
			values = []string{rapid.SampledFrom([]string{"0", "1", "2", "3", "4", "6"}).Draw(t, "bound")}
		}
		r, err := NewRequirement(key, op, values...)
		if err != nil {
			t.Fatalf("NewRequirement(%s, %s, %q): %v", key, op, values, err)
		}
		r.MinValues = rapid.IntRange(0, 2).Draw(t, "minValues")
		return r
	})
}

func genRequirements() *rapid.Generator[Requirements] {
	return rapid.Custom(func(t *rapid.T) Requirements {
		n := rapid.IntRange(0, 4).Draw(t, "n")
		var reqs []Requirement
		for range n {
			key := rapid.SampledFrom(testKeys).Draw(t, "key")
			reqs = append(reqs, genRequirement(key).Draw(t, "req"))
		}
		return NewRequirements(reqs...)
	})
}

// labelOption is one way a node can hold a key: absent, or one value of the universe.
type labelOption struct {
	value   string
	present bool
}

var labelOptions = func() []labelOption {
	opts := []labelOption{{}}
	for _, v := range universe {
		opts = append(opts, labelOption{v, true})
	}
	return opts
}()

// forEachLabelSet calls f with every label set over testKeys and the universe, until f returns false.
func forEachLabelSet(f func(map[string]string) bool) {
	labels := map[string]string{}
	var rec func(i int) bool
	rec = func(i int) bool {
		if i == len(testKeys) {
			return f(labels)
		}
		for _, o := range labelOptions {
			if o.present {
				labels[testKeys[i]] = o.value
			} else {
				delete(labels, testKeys[i])
			}
			if !rec(i + 1) {
				return false
			}
		}
		delete(labels, testKeys[i])
		return true
	}
	rec(0)
}

func TestRequirementIntersectProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := genRequirement("k").Draw(t, "a")
		b := genRequirement("k").Draw(t, "b")
		c := genRequirement("k").Draw(t, "c")
		ab := a.Intersect(b)
		for _, o := range labelOptions {
			want := a.Accepts(o.value, o.present) && b.Accepts(o.value, o.present)
			if got := ab.Accepts(o.value, o.present); got != want {
				t.Fatalf("(%v).Intersect(%v) = %v; Accepts(%q, %v) = %v, want %v", a, b, ab, o.value, o.present, got, want)
			}
		}
		if ba := b.Intersect(a); !ab.Equal(ba) {
			t.Fatalf("Intersect not commutative: a∩b = %v, b∩a = %v", ab, ba)
		}
		left, right := ab.Intersect(c), a.Intersect(b.Intersect(c))
		if !left.Equal(right) {
			t.Fatalf("Intersect not associative: (a∩b)∩c = %v, a∩(b∩c) = %v", left, right)
		}
		if got, want := ab.MinValues, max(a.MinValues, b.MinValues); got != want {
			t.Fatalf("(%v).Intersect(%v).MinValues = %d, want %d", a, b, got, want)
		}
		witness := false
		for _, o := range labelOptions {
			witness = witness || ab.Accepts(o.value, o.present)
		}
		if got := a.Intersects(b); got != witness {
			t.Fatalf("(%v).Intersects(%v) = %v, want %v (brute force)", a, b, got, witness)
		}
		if got := !ab.IsEmpty(); got != witness {
			t.Fatalf("!(%v).IsEmpty() = %v, want %v (brute force)", ab, got, witness)
		}
	})
}

func TestRequirementsIntersectProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := genRequirements().Draw(t, "a")
		b := genRequirements().Draw(t, "b")
		c := genRequirements().Draw(t, "c")
		ab := a.Intersect(b)
		if ba := b.Intersect(a); !ab.Equal(ba) {
			t.Fatalf("Intersect not commutative: a∩b = %v, b∩a = %v", ab, ba)
		}
		if left, right := ab.Intersect(c), a.Intersect(b.Intersect(c)); !left.Equal(right) {
			t.Fatalf("Intersect not associative: (a∩b)∩c = %v, a∩(b∩c) = %v", left, right)
		}
		witness := false
		forEachLabelSet(func(labels map[string]string) bool {
			want := a.Matches(labels) && b.Matches(labels)
			if got := ab.Matches(labels); got != want {
				t.Fatalf("(%v).Intersect(%v).Matches(%v) = %v, want %v", a, b, labels, got, want)
			}
			witness = witness || want
			return true
		})
		if got := a.Intersects(b); got != witness {
			t.Fatalf("(%v).Intersects(%v) = %v, want %v (brute force)", a, b, got, witness)
		}
		if got := !ab.IsEmpty(); got != a.Intersects(b) {
			t.Fatalf("!(%v).IsEmpty() = %v, but Intersects = %v", ab, got, !got)
		}
	})
}

// IntersectLabels is Intersect with the labels' requirements, built in one pass.
func TestIntersectLabelsIsIntersectFromLabels(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rs := genRequirements().Draw(t, "rs")
		labels := rapid.MapOf(rapid.SampledFrom(append([]string{"0", "z"}, testKeys...)), rapid.SampledFrom(testValues)).Draw(t, "labels")
		want := rs.Intersect(RequirementsFromLabels(labels))
		if got := rs.IntersectLabels(labels); !got.Equal(want) || got.String() != want.String() {
			t.Fatalf("IntersectLabels(%v, %v) = %v, want %v", rs, labels, got, want)
		}
	})
}

func TestRequirementsCompatibleBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		node := genRequirements().Draw(t, "node")
		pod := genRequirements().Draw(t, "pod")
		if node.IsEmpty() {
			t.Skip("no node satisfies the node's own requirements")
		}
		// The node is described completely: keys it does not mention are absent.
		want := false
		forEachLabelSet(func(labels map[string]string) bool {
			for _, k := range testKeys {
				if _, ok := labels[k]; ok && !node.Has(k) {
					return true
				}
			}
			want = node.Matches(labels) && pod.Matches(labels)
			return !want
		})
		err := node.Compatible(pod)
		if got := err == nil; got != want {
			t.Fatalf("(%v).Compatible(%v) = %v, want compatible=%v", node, pod, err, want)
		}
		var ie *IncompatibleError
		if err != nil && (!errors.As(err, &ie) || !pod.Has(ie.Key)) {
			t.Fatalf("(%v).Compatible(%v) = %v, want an *IncompatibleError naming a key of the pod", node, pod, err)
		}
	})
}

// NodeSelectorRequirements is how requirements are written back to manifests: converting back
// must give the same requirements.
func TestRequirementsNodeSelectorRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rs := genRequirements().Draw(t, "rs")
		if rs.IsEmpty() {
			t.Skip("an unsatisfiable requirement has no node-selector form")
		}
		exprs := rs.NodeSelectorRequirements()
		back, err := RequirementsFromNodeSelector(exprs)
		if err != nil {
			t.Fatalf("RequirementsFromNodeSelector(%v): %v", exprs, err)
		}
		forEachLabelSet(func(labels map[string]string) bool {
			if got, want := back.Matches(labels), rs.Matches(labels); got != want {
				t.Fatalf("RequirementsFromNodeSelector(%v).Matches(%v) = %v, want %v (from %v)", exprs, labels, got, want, rs)
			}
			return true
		})
	})
}

func TestMissingKey(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := genRequirement("k").Draw(t, "r")
		op := r.Operator()
		want := op == corev1.NodeSelectorOpNotIn || op == corev1.NodeSelectorOpDoesNotExist
		if r.IsEmpty() {
			want = false
		}
		if got := r.Accepts("", false); got != want && len(r.NodeSelectorRequirements()) == 1 {
			t.Fatalf("(%v).Accepts(missing) = %v, want %v", r, got, want)
		}
		if got := NewRequirements(r).Matches(nil); got != r.Accepts("", false) {
			t.Fatalf("NewRequirements(%v).Matches(nil) = %v, want %v", r, got, !got)
		}
	})
	for _, r := range []Requirement{NotIn("k", "a"), DoesNotExist("k"), NotIn("k", "a").Intersect(NotIn("k", "b"))} {
		if !r.Accepts("", false) {
			t.Errorf("(%v).Accepts(missing) = false, want true", r)
		}
	}
	for _, r := range []Requirement{In("k", "a"), Exists("k"), mustRequirement(t, "k", corev1.NodeSelectorOpGt, "1"),
		mustRequirement(t, "k", corev1.NodeSelectorOpLt, "1")} {
		if r.Accepts("", false) {
			t.Errorf("(%v).Accepts(missing) = true, want false", r)
		}
	}
}

func TestGtLt(t *testing.T) {
	tests := []struct {
		op    corev1.NodeSelectorOperator
		bound string
		value string
		want  bool
	}{
		{corev1.NodeSelectorOpGt, "5", "6", true},
		{corev1.NodeSelectorOpGt, "5", "5", false},
		{corev1.NodeSelectorOpGt, "5", "4", false},
		{corev1.NodeSelectorOpGt, "-1", "0", true},
		{corev1.NodeSelectorOpGt, "5", "six", false},
		{corev1.NodeSelectorOpGt, "5", "", false},
		{corev1.NodeSelectorOpGt, "5", "1e3", false},
		{corev1.NodeSelectorOpGt, "9223372036854775806", "9223372036854775807", true},
		{corev1.NodeSelectorOpGt, "9223372036854775807", "9223372036854775807", false},
		{corev1.NodeSelectorOpLt, "5", "4", true},
		{corev1.NodeSelectorOpLt, "5", "5", false},
		{corev1.NodeSelectorOpLt, "5", "-100", true},
		{corev1.NodeSelectorOpLt, "5", "x", false},
		{corev1.NodeSelectorOpLt, "-9223372036854775808", "-9223372036854775808", false},
	}
	for _, tt := range tests {
		r := mustRequirement(t, "k", tt.op, tt.bound)
		if got := r.Accepts(tt.value, true); got != tt.want {
			t.Errorf("NewRequirement(k, %s, %s).Accepts(%q) = %v, want %v", tt.op, tt.bound, tt.value, got, tt.want)
		}
	}
	for _, bad := range [][]string{{"five"}, {"1", "2"}, {}, {"1.5"}, {"99999999999999999999"}} {
		for _, op := range []corev1.NodeSelectorOperator{corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt} {
			if r, err := NewRequirement("k", op, bad...); err == nil {
				t.Errorf("NewRequirement(k, %s, %q) = %v, nil; want an error", op, bad, r)
			}
		}
	}
	// Bounds intersect into ranges; crossing bounds leave nothing, a single integer pins the value.
	gt := func(n int) Requirement { return mustRequirement(t, "k", corev1.NodeSelectorOpGt, strconv.Itoa(n)) }
	lt := func(n int) Requirement { return mustRequirement(t, "k", corev1.NodeSelectorOpLt, strconv.Itoa(n)) }
	if r := gt(3).Intersect(lt(4)); !r.IsEmpty() {
		t.Errorf("Gt 3 ∩ Lt 4 = %v, want empty", r)
	}
	if v, ok := gt(3).Intersect(lt(5)).Single(); !ok || v != "4" {
		t.Errorf("(Gt 3 ∩ Lt 5).Single() = %q, %v; want 4, true", v, ok)
	}
	if r := gt(1).Intersect(lt(10)).Intersect(NotIn("k", "5")); r.Accepts("5", true) || !r.Accepts("6", true) || r.Accepts("10", true) {
		t.Errorf("Gt 1 ∩ Lt 10 ∩ NotIn 5 = %v accepts wrongly", r)
	}
	if r := gt(math.MaxInt64 - 1); !r.Accepts(strconv.Itoa(math.MaxInt64), true) {
		t.Errorf("%v rejects MaxInt64", r)
	}
}

func TestNewRequirementErrors(t *testing.T) {
	tests := []struct {
		key    string
		op     corev1.NodeSelectorOperator
		values []string
	}{
		{"", corev1.NodeSelectorOpExists, nil},
		{"k", corev1.NodeSelectorOpIn, nil},
		{"k", corev1.NodeSelectorOpNotIn, nil},
		{"k", corev1.NodeSelectorOpExists, []string{"a"}},
		{"k", corev1.NodeSelectorOpDoesNotExist, []string{"a"}},
		{"k", "Within", []string{"a"}},
	}
	for _, tt := range tests {
		if r, err := NewRequirement(tt.key, tt.op, tt.values...); err == nil {
			t.Errorf("NewRequirement(%q, %s, %q) = %v, nil; want an error", tt.key, tt.op, tt.values, r)
		}
	}
}

func TestRequirementsCompatibleError(t *testing.T) {
	node := NewRequirements(In(LabelArch, "amd64"), In(LabelZone, "us-east-1a"))
	tests := []struct {
		pod  Requirements
		want string
	}{
		{NewRequirements(In(LabelArch, "amd64")), ""},
		{NewRequirements(NotIn("gpu", "true")), ""},
		{NewRequirements(In(LabelArch, "arm64")), "requires kubernetes.io/arch In [arm64], but the node offers kubernetes.io/arch In [amd64]"},
		{RequirementsFromLabels(map[string]string{"workload": "gpu"}), "requires workload In [gpu], but the node has no label workload"},
	}
	for _, tt := range tests {
		err := node.Compatible(tt.pod)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("(%v).Compatible(%v) = %q, want %q", node, tt.pod, got, tt.want)
		}
	}
}

func ExampleRequirements() {
	// What a NodePool allows, narrowed by one instance type's offerings.
	pool := NewRequirements(
		In(LabelCapacityType, "spot", "on-demand"),
		In(LabelZone, "us-east-1a", "us-east-1b"),
	)
	node := pool.Intersect(NewRequirements(In(LabelArch, "arm64"), In(LabelZone, "us-east-1b", "us-east-1c")))
	fmt.Println(node)

	// What a pod demands: a nodeSelector and required node affinity.
	pod := RequirementsFromLabels(map[string]string{LabelArch: "arm64"})
	affinity, _ := RequirementsFromNodeSelector([]corev1.NodeSelectorRequirement{
		{Key: LabelCapacityType, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"spot"}},
	})
	pod = pod.Intersect(affinity)
	fmt.Println(node.Compatible(pod))
	fmt.Println(node.Intersect(pod).Labels())

	fmt.Println(node.Compatible(RequirementsFromLabels(map[string]string{"workload": "gpu"})))
	// Output:
	// karpenter.sh/capacity-type In [on-demand spot], kubernetes.io/arch In [arm64], topology.kubernetes.io/zone In [us-east-1b]
	// <nil>
	// map[karpenter.sh/capacity-type:on-demand kubernetes.io/arch:arm64 topology.kubernetes.io/zone:us-east-1b]
	// requires workload In [gpu], but the node has no label workload
}

func TestNewRequirementNormalizesBetaKeys(t *testing.T) {
	for beta, stable := range map[string]string{
		"beta.kubernetes.io/instance-type": LabelInstanceType, "failure-domain.beta.kubernetes.io/zone": LabelZone,
		"failure-domain.beta.kubernetes.io/region": LabelRegion, "beta.kubernetes.io/arch": LabelArch,
		"beta.kubernetes.io/os": LabelOS, "example.com/beta.kubernetes.io/os": "example.com/beta.kubernetes.io/os",
	} {
		r, err := NewRequirement(beta, corev1.NodeSelectorOpIn, "x")
		if err != nil || r.Key != stable {
			t.Errorf("NewRequirement(%q, In, x).Key = %q, %v, want %q, nil", beta, r.Key, err, stable)
		}
	}
}
