package topology

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

func TestFromConstraintFillsKubeSchedulersDefaults(t *testing.T) {
	honor, ignore := corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore
	three := int32(3)
	for _, tc := range []struct {
		name string
		c    corev1.TopologySpreadConstraint
		want Spread
	}{
		{"unset", corev1.TopologySpreadConstraint{MaxSkew: 2, TopologyKey: "k", WhenUnsatisfiable: corev1.DoNotSchedule},
			Spread{Key: "k", MaxSkew: 2, MinDomains: 1, Hard: true, HonorAffinity: true}},
		{"soft", corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "k", WhenUnsatisfiable: corev1.ScheduleAnyway},
			Spread{Key: "k", MaxSkew: 1, MinDomains: 1, HonorAffinity: true}},
		{"policies", corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "k", MinDomains: &three,
			NodeAffinityPolicy: &ignore, NodeTaintsPolicy: &honor},
			Spread{Key: "k", MaxSkew: 1, MinDomains: 3, Hard: true, HonorTaints: true}},
		{"zero skew", corev1.TopologySpreadConstraint{TopologyKey: "k"},
			Spread{Key: "k", MaxSkew: 1, MinDomains: 1, Hard: true, HonorAffinity: true}},
	} {
		if diff := cmp.Diff(tc.want, FromConstraint(tc.c)); diff != "" {
			t.Errorf("FromConstraint(%s) (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestCountedHonorsThePolicyAndTheKeys(t *testing.T) {
	zoneA := []nodeplan.Requirements{nodeplan.NewRequirements(nodeplan.In(nodeplan.LabelZone, "a"))}
	for _, tc := range []struct {
		name string
		s    Spread
		keys []string
		want string
	}{
		{"honor", Spread{HonorAffinity: true}, nil, zoneA[0].String()},
		{"ignore", Spread{}, nil, nodeplan.NewRequirements().String()},
		{"rack key", Spread{HonorAffinity: true}, []string{nodeplan.LabelZone, "example.com/rack"},
			zoneA[0].Add(nodeplan.Exists("example.com/rack")).String()},
	} {
		got := tc.s.Counted(zoneA, tc.keys)
		if len(got) != 1 || got[0].String() != tc.want {
			t.Errorf("Counted(%s) = %v, want [%s]", tc.name, got, tc.want)
		}
	}
	a := Spread{HonorAffinity: true}.Scope(zoneA, nil, "")
	b := Spread{HonorAffinity: true}.Scope([]nodeplan.Requirements{nodeplan.NewRequirements(nodeplan.In(nodeplan.LabelZone, "b"))}, nil, "")
	if a == b {
		t.Errorf("Scope(zone a) = Scope(zone b) = %q: pods pinned to different zones count different nodes", a)
	}
	if a, b := (Spread{}).Scope(zoneA, nil, ""), (Spread{}).Scope(nil, nil, ""); a != b {
		t.Errorf("Scope under nodeAffinityPolicy Ignore = %q and %q, want equal: the pod's affinity does not matter", a, b)
	}
}

func TestKeysAreThoseOfOneKind(t *testing.T) {
	cs := []corev1.TopologySpreadConstraint{
		{TopologyKey: "z", WhenUnsatisfiable: corev1.DoNotSchedule},
		{TopologyKey: "r", WhenUnsatisfiable: corev1.ScheduleAnyway},
		{TopologyKey: "a", WhenUnsatisfiable: corev1.DoNotSchedule},
		{TopologyKey: "z", WhenUnsatisfiable: corev1.DoNotSchedule},
	}
	if diff := cmp.Diff([]string{"a", "z"}, Keys(cs, true)); diff != "" {
		t.Errorf("Keys(hard) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"r"}, Keys(cs, false)); diff != "" {
		t.Errorf("Keys(soft) (-want +got):\n%s", diff)
	}
}

func TestFamilyMinimumAdmitsAndRoom(t *testing.T) {
	f := NewFamily(Spread{Key: "zone", MaxSkew: 5, MinDomains: 1}, map[string]int{"a": 1, "b": 1, "c": 0})
	f.Reset()
	if got := f.Minimum(f.Lo); got != 0 {
		t.Errorf("Minimum() = %d, want 0", got)
	}
	f.Add("c", 6, Sure)
	if got := f.Minimum(f.Lo); got != 1 {
		t.Errorf("Minimum() after 6 in c = %d, want 1", got)
	}
	if !f.Admits("c", 0) || f.Admits("c", 1) {
		t.Errorf("Admits(c, 0), Admits(c, 1) = %t, %t; want true, false (c=6, min 1, maxSkew 5)", f.Admits("c", 0), f.Admits("c", 1))
	}
	if got := f.Room("a"); got != 5 {
		t.Errorf("Room(a) = %d, want 5", got)
	}
	if f.Admits("d", 0) || f.Room("d") != 0 {
		t.Errorf("Admits(d) or Room(d) > 0: d is not a domain")
	}
	f.Add("a", 3, Maybe)
	if got := f.Minimum(f.Lo); got != 1 {
		t.Errorf("Minimum() with 3 maybe in a = %d, want 1: pods that may not count do not raise it", got)
	}
	want := "topology spread on zone (maxSkew 5) cannot take more pods: a=4, b=1, c=6"
	if got := f.Blocked(f.Hi, "pods"); got != want {
		t.Errorf("Blocked() = %q, want %q", got, want)
	}
	g := NewFamily(Spread{Key: "zone", MaxSkew: 1, MinDomains: 3}, map[string]int{"a": 2, "b": 2})
	g.Reset()
	if got := g.Minimum(g.Lo); got != 0 {
		t.Errorf("Minimum() with 2 domains, minDomains 3 = %d, want 0", got)
	}
	if got, want := NewFamily(Spread{Key: "rack", MaxSkew: 1}, map[string]int{}).Blocked(nil, "pods"), "topology spread on rack (maxSkew 1) cannot take more pods: no domain"; got != want {
		t.Errorf("Blocked() of a family without domains = %q, want %q", got, want)
	}
}

// A member whose only launchable domain is c, beside domains a and b with one running pod
// each and no room, takes 6 pods there with maxSkew 5 and is stuck with the real counts.
func TestAssignFillsTheHeadroom(t *testing.T) {
	f := NewFamily(Spread{Key: "zone", MaxSkew: 5, MinDomains: 1}, map[string]int{"a": 1, "b": 1, "c": 0})
	f.Reset()
	m := NewMember(10, []string{"c"})
	m.Carries, m.Counted, m.Kinds = []*Family{f}, []*Family{f}, []Kind{Sure}
	Assign(nil, []*Member{m})
	if m.Parts[0] != 6 || m.Left != 4 || !m.Stuck {
		t.Errorf("Assign() = %v parts, %d left, stuck %t; want [6], 4, true", m.Parts, m.Left, m.Stuck)
	}
	if want := "topology spread on zone (maxSkew 5) cannot take more pods: a=1, b=1, c=6"; m.Why != want {
		t.Errorf("Why = %q, want %q", m.Why, want)
	}
}

// Room caps what a domain takes: the rest goes where the spread allows.
func TestAssignKeepsToRoom(t *testing.T) {
	f := NewFamily(Spread{Key: "zone", MaxSkew: 1, MinDomains: 1}, map[string]int{"a": 0, "b": 0})
	f.Reset()
	m := NewMember(4, []string{"a", "b"})
	m.Room = []int{1, -1}
	m.Carries, m.Counted, m.Kinds = []*Family{f}, []*Family{f}, []Kind{Sure}
	Assign(nil, []*Member{m})
	if diff := cmp.Diff([]int{1, 2}, m.Parts); diff != "" || m.Left != 1 {
		t.Errorf("Assign() parts (-want +got):\n%s left %d, want 1", diff, m.Left)
	}
}

// Pods that only count go first, to the least filled domain; carriers then round the members.
func TestAssignMoversFirstThenCarriersRoundRobin(t *testing.T) {
	f := NewFamily(Spread{Key: "zone", MaxSkew: 1, MinDomains: 1}, map[string]int{"a": 0, "b": 0, "c": 0})
	f.Reset()
	mover := NewMember(2, []string{"a", "b", "c"})
	mover.Counted, mover.Kinds = []*Family{f}, []Kind{Sure}
	x := NewMember(2, []string{"a", "b", "c"})
	x.Carries, x.Counted, x.Kinds = []*Family{f}, []*Family{f}, []Kind{Sure}
	y := NewMember(2, []string{"c", "b", "a"})
	y.Carries, y.Counted, y.Kinds = []*Family{f}, []*Family{f}, []Kind{Sure}
	Assign([]*Member{mover}, []*Member{x, y})
	for _, v := range f.Domains {
		if f.Hi[v] != 2 {
			t.Errorf("Hi[%s] = %d, want 2 in every domain: %v", v, f.Hi[v], f.Hi)
		}
	}
	if x.Left+y.Left+mover.Left != 0 {
		t.Errorf("pods left: %d, %d, %d; want none", mover.Left, x.Left, y.Left)
	}
}

// Pods no domain has room for are not the spread's to explain: Why stays empty.
func TestAssignLeavesPodsWithoutRoomUnexplained(t *testing.T) {
	f := NewFamily(Spread{Key: "zone", MaxSkew: 1, MinDomains: 1}, map[string]int{"a": 0})
	f.Reset()
	m := NewMember(3, []string{"a"})
	m.Room = []int{1}
	m.Carries, m.Counted, m.Kinds = []*Family{f}, []*Family{f}, []Kind{Sure}
	Assign(nil, []*Member{m})
	if m.Parts[0] != 1 || m.Left != 2 || !m.Stuck || m.Why != "" {
		t.Errorf("Assign() = %v parts, %d left, stuck %t, why %q; want [1], 2, true, no reason", m.Parts, m.Left, m.Stuck, m.Why)
	}
}

func TestWholeDomains(t *testing.T) {
	zone := nodeplan.NewRequirements(nodeplan.In(nodeplan.LabelZone, "a", "b"))
	for _, tc := range []struct {
		name    string
		counted []nodeplan.Requirements
		want    bool
	}{
		{"any node", []nodeplan.Requirements{nodeplan.NewRequirements()}, true},
		{"zone only", []nodeplan.Requirements{zone}, true},
		{"zone and type", []nodeplan.Requirements{zone.Add(nodeplan.In(nodeplan.LabelInstanceType, "m"))}, false},
		{"zone and rack key", []nodeplan.Requirements{zone.Add(nodeplan.Exists("example.com/rack"))}, false},
	} {
		if got := WholeDomains(tc.counted, nodeplan.LabelZone); got != tc.want {
			t.Errorf("WholeDomains(%s) = %t, want %t", tc.name, got, tc.want)
		}
	}
}

// A member a family counts goes before the family's other carriers: kube-scheduler never
// refuses it for that constraint, so they must make room. Before, the carrier b, given first,
// took zone c, and a's second pod was refused for pushing b's domain over maxSkew.
func TestAssignCountedBeforeTheCarriersCountingThem(t *testing.T) {
	own := NewFamily(Spread{Key: "zone", MaxSkew: 1, MinDomains: 1}, map[string]int{"c": 0})
	other := NewFamily(Spread{Key: "zone", MaxSkew: 1, MinDomains: 1}, map[string]int{"a": 0, "b": 0, "c": 0})
	own.Reset()
	other.Reset()
	b := NewMember(1, []string{"c"})
	b.Carries = []*Family{other}
	a := NewMember(2, []string{"c"})
	a.Carries, a.Counted, a.Kinds = []*Family{own}, []*Family{own, other}, []Kind{Sure, Sure}
	Assign(nil, []*Member{b, a})
	if a.Parts[0] != 2 || a.Stuck {
		t.Errorf("a: parts %v, stuck %t (%s); want both pods in c", a.Parts, a.Stuck, a.Why)
	}
	if !b.Stuck || b.Why == "" {
		t.Errorf("b: parts %v, stuck %t; want stuck with its spread's reason", b.Parts, b.Stuck)
	}
}

func TestOrderLayersFollowTheCounts(t *testing.T) {
	f := NewFamily(Spread{Key: "zone", MaxSkew: 1, MinDomains: 1}, map[string]int{"a": 0})
	g := NewFamily(Spread{Key: "zone", MaxSkew: 1, MinDomains: 1}, map[string]int{"a": 0})
	x := NewMember(1, []string{"a"}) // carries f, counted by g
	x.Carries, x.Counted = []*Family{f}, []*Family{f, g}
	y := NewMember(1, []string{"a"}) // carries g, counted by f: a cycle with x
	y.Carries, y.Counted = []*Family{g}, []*Family{f}
	z := NewMember(1, []string{"a"}) // carries g only
	z.Carries = []*Family{g}
	w := NewMember(1, []string{"a", "b"}) // counted by f, carries nothing another counts
	w.Carries, w.Counted = []*Family{NewFamily(Spread{}, nil)}, []*Family{f}
	got := Order([]*Member{z, w, y, x})
	names := map[*Member]string{x: "x", y: "y", z: "z", w: "w"}
	var layers [][]string
	for _, l := range got {
		var ns []string
		for _, m := range l {
			ns = append(ns, names[m])
		}
		layers = append(layers, ns)
	}
	// w and the x–y cycle come before f's and g's other carriers; z, counted by none, last.
	if diff := cmp.Diff([][]string{{"w"}, {"y", "x"}, {"z"}}, layers); diff != "" {
		t.Errorf("Order() layers (-want +got):\n%s", diff)
	}
}

// Members that count for each other's constraints share a layer and take turns, and a turn can
// put a carrier where a later member, which only counts for its constraint, has its one
// domain: here b takes c (its least filled, first of its domains) and a's second pod would
// take b's count in c over maxSkew. kube-scheduler binds a's pods there; Assign tries again
// with b steered away from c. Before, a's second pod was refused (seed 4's app-4, minimised).
func TestAssignRetriesWithCarriersOutOfTheWay(t *testing.T) {
	zones := map[string]int{"a": 0, "b": 0, "c": 0}
	fa := NewFamily(Spread{Key: "zone", MaxSkew: 1, MinDomains: 1}, zones) // b carries it; it counts a
	fg := NewFamily(Spread{Key: "zone", MaxSkew: 1, MinDomains: 1}, map[string]int{"a": 1, "b": 1, "c": 0})
	fa.Reset()
	fg.Reset()
	a := NewMember(2, []string{"c"})
	a.Carries, a.Counted, a.Kinds = []*Family{fg}, []*Family{fa}, []Kind{Sure}
	b := NewMember(1, []string{"c", "a", "b"})
	b.Carries, b.Counted, b.Kinds = []*Family{fa}, []*Family{fg}, []Kind{Sure}
	Assign(nil, []*Member{a, b})
	if a.Parts[0] != 2 || a.Stuck {
		t.Errorf("a: parts %v, stuck %t (%s); want both pods in c", a.Parts, a.Stuck, a.Why)
	}
	if b.Left != 0 || b.Parts[0] != 0 {
		t.Errorf("b: parts %v over %v, %d left; want its pod outside c", b.Parts, b.Domains, b.Left)
	}
	if fa.Held["c"] {
		t.Errorf("b's constraint still held in c after the retry: %v", fa.Held)
	}
}
