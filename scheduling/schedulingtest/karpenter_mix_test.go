package schedulingtest_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
)

// TestKarpenterMixDistribution checks the draw against what Karpenter's makeDiversePods does:
// a fifth of each kind (the rest generic), labels and spread selectors independent, every
// value and size drawn.
func TestKarpenterMixDistribution(t *testing.T) {
	const n = 7003
	pods := schedulingtest.KarpenterMix(rand.New(rand.NewPCG(1, 2)), n, "t")
	if len(pods) != n {
		t.Fatalf("KarpenterMix(%d) gave %d pods", n, len(pods))
	}
	kinds := map[string]int{}
	spreads, selfMatching := 0, 0
	values, cpus, mems := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, p := range pods {
		kind := p.Name[:strings.LastIndex(p.Name, "-")]
		kinds[kind]++
		for _, v := range p.Labels {
			values[v] = true
		}
		r := p.Spec.Containers[0].Resources.Requests
		cpus[r.Cpu().String()], mems[r.Memory().String()] = true, true
		for _, c := range p.Spec.TopologySpreadConstraints {
			sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
			if err != nil {
				t.Fatal(err)
			}
			spreads++
			if sel.Matches(labels.Set(p.Labels)) {
				selfMatching++
			}
		}
		if a := p.Spec.Affinity; a != nil && a.PodAffinity != nil {
			sel, _ := metav1.LabelSelectorAsSelector(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector)
			if !sel.Matches(labels.Set(p.Labels)) {
				t.Errorf("pod %s: affinity does not select itself, as Karpenter's does", p.Name)
			}
		}
	}
	want := map[string]int{"generic": 1400, "zone-spread": 1400, "host-spread": 1400, "zone-affinity": 1400, "host-anti": 1400, "generic-extra": 3}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("pods per kind (-want +got):\n%s", diff)
	}
	// Independent draws from seven values: a seventh of the spread pods match their selector.
	if share := float64(selfMatching) / float64(spreads); share < 0.12 || share > 0.17 {
		t.Errorf("%.3f of spread pods match their own selector, want about 1/7", share)
	}
	if len(values) != 8 || len(cpus) != 5 || len(mems) != 6 { // a–g and nginx
		t.Errorf("drew %d label values, %d cpu and %d memory sizes; want 8, 5, 6", len(values), len(cpus), len(mems))
	}
	again := schedulingtest.KarpenterMix(rand.New(rand.NewPCG(1, 2)), n, "t")
	if diff := cmp.Diff(pods, again); diff != "" {
		t.Errorf("KarpenterMix differs between equal seeds (-first +second):\n%.2000s", diff)
	}
}
