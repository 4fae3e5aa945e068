package scheduling

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/nodeplan/nodeplan"
)

// TestNameSorterSortsByKey checks the prefix-number sort against sorting the keys as strings,
// on keys that share long prefixes, end at any point of each other and hold any bytes.
func TestNameSorterSortsByKey(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		prefix := rapid.SampledFrom([]string{"", "default/", "default/web-7d9f8b6c4-", "ns/a"}).Draw(t, "prefix")
		tail := rapid.Map(rapid.SliceOfN(rapid.SampledFrom([]byte{0, 1, '0', '9', 'a', 0xff}), 0, 14), func(b []byte) string { return string(b) })
		tails := rapid.SliceOfNDistinct(tail, 0, 40, rapid.ID).Draw(t, "tails")
		var pods []*corev1.Pod
		var keys []string
		for _, tail := range tails {
			pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tail}})
			keys = append(keys, prefix+tail)
		}
		byKey := map[string]*corev1.Pod{}
		for i, k := range keys {
			byKey[k] = pods[i]
		}
		var s nameSorter
		s.sort(pods, keys)
		if want := slices.Sorted(slices.Values(keys)); !slices.Equal(keys, want) {
			t.Fatalf("keys sorted as %q, want %q", keys, want)
		}
		for i, k := range keys {
			if byKey[k] != pods[i] {
				t.Fatalf("pod %d is not the pod of key %q", i, k)
			}
		}
	})
}

// TestParsedOncePerConstraints: groups of one namespace with equal constraints share one parse,
// except where matchLabelKeys or mismatchLabelKeys read each pod's own labels — then each
// group's terms select by its own value.
func TestParsedOncePerConstraints(t *testing.T) {
	web := &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}
	for _, tc := range []struct {
		name      string
		ownLabels bool // the terms read the pod's own labels
		add       func(*corev1.Pod)
		selector  func(groupTopo) string
	}{
		{"spread, matchLabelKeys", true, func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: nodeplan.LabelZone,
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: web, MatchLabelKeys: []string{"app"}}}
		}, func(t groupTopo) string { return t.spreads[0].term.sel.String() }},
		{"anti-affinity, mismatchLabelKeys", true, func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				{TopologyKey: nodeplan.LabelHostname, LabelSelector: web, MismatchLabelKeys: []string{"app"}}}}}
		}, func(t groupTopo) string { return t.anti[0].sel.String() }},
		{"spread, no label keys", false, func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: nodeplan.LabelZone,
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "app", Operator: metav1.LabelSelectorOpExists}}}}}
		}, func(t groupTopo) string { return t.spreads[0].term.sel.String() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in Input
			for _, app := range []string{"a", "b", "c"} {
				p := pod(app+"-0", "1", "1Gi")
				p.Labels = map[string]string{"app": app, "tier": "web"}
				tc.add(p)
				in.Pods = append(in.Pods, p)
			}
			in.NodePools = []nodeplan.NodePool{{Name: "default"}}
			in.InstanceTypes = []nodeplan.InstanceType{cType(4, 0.2)}
			p, err := newProblem(&in, preferences{})
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range p.base {
				app, sel := g.rep.Labels["app"], tc.selector(p.facts.topos[g.id])
				if first := tc.selector(p.facts.topos[0]); !tc.ownLabels && sel != first {
					t.Errorf("group app=%s parses its term as %q, want %q as every group", app, sel, first)
				}
				if tc.ownLabels && !strings.Contains(sel, "("+app+")") {
					t.Errorf("group app=%s parses its term as %q, want one naming its own app=%s", app, sel, app)
				}
			}
		})
	}
}
