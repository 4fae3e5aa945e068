package scheduling

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
)

func zoneOf(t *testing.T, res Result) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, c := range res.NodeClaims {
		r, _ := c.Requirements.Get(nodeplan.LabelZone)
		z, ok := r.Single()
		if !ok {
			t.Fatalf("claim for %v has no single zone: %s", c.Pods, r)
		}
		if c.Offering.Zone != z {
			t.Fatalf("claim pinned to %s but costed in %s", z, c.Offering.Zone)
		}
		counts[z] += len(c.Pods)
	}
	return counts
}

func spreadPods(n int, key string, maxSkew int32, minDomains *int32, when corev1.UnsatisfiableConstraintAction) []*corev1.Pod {
	ps := pods("spread", n, "500m", "512Mi")
	for _, p := range ps {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when, MinDomains: minDomains,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
		}}
	}
	return ps
}

func TestZoneSpread(t *testing.T) {
	catalog := loadCatalog(t)
	three := int32(3)
	res, err := Solve(context.Background(), Input{
		Pods:          spreadPods(9, nodeplan.LabelZone, 1, &three, corev1.DoNotSchedule),
		NodePools:     []nodeplan.NodePool{{Name: "default"}},
		InstanceTypes: catalog,
	})
	if err != nil {
		t.Fatal(err)
	}
	got := zoneOf(t, res)
	if len(got) != 3 {
		t.Fatalf("pods per zone = %v, want three zones", got)
	}
	for z, n := range got {
		if n != 3 {
			t.Errorf("zone %s has %d pods, want 3 (%v)", z, n, got)
		}
	}
}

func TestZoneSpreadCountsRunningPods(t *testing.T) {
	catalog := loadCatalog(t)
	// Two pods already run in us-east-1a: the next four go to b and c first.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "existing", Labels: map[string]string{nodeplan.LabelZone: "us-east-1a", nodeplan.LabelHostname: "existing"}}}
	running := spreadPods(2, nodeplan.LabelZone, 1, nil, corev1.DoNotSchedule)
	for i, p := range running {
		p.Name = fmt.Sprintf("running-%d", i)
		p.Spec.NodeName = "existing"
	}
	res, err := Solve(context.Background(), Input{
		Pods:          spreadPods(4, nodeplan.LabelZone, 1, nil, corev1.DoNotSchedule),
		NodePools:     []nodeplan.NodePool{{Name: "default"}},
		InstanceTypes: catalog,
		Nodes:         []Node{{Node: node, Pods: running}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := zoneOf(t, res)
	if got["us-east-1b"] != 2 || got["us-east-1c"] != 2 || got["us-east-1a"] != 0 {
		t.Errorf("pods per zone = %v, want b=2 c=2 (a already has 2)", got)
	}
}

func TestSpreadThatCannotBeMetIsExplained(t *testing.T) {
	catalog := loadCatalog(t)
	four := int32(4)
	res, err := Solve(context.Background(), Input{
		Pods:          spreadPods(5, nodeplan.LabelZone, 1, &four, corev1.DoNotSchedule),
		NodePools:     []nodeplan.NodePool{{Name: "default"}},
		InstanceTypes: catalog,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Three zones, fewer than minDomains 4: the global minimum counts as 0, so each zone takes
	// at most maxSkew = 1.
	if len(res.Unschedulable) != 2 {
		t.Fatalf("unschedulable = %d, want 2", len(res.Unschedulable))
	}
	u := res.Unschedulable[0]
	if u.Code != ReasonTopologySpread || !strings.Contains(u.Message, "us-east-1a=1") || !strings.Contains(u.Message, "minDomains 4") {
		t.Errorf("reason = %s: %s, want TopologySpread naming the counts and minDomains", u.Code, u.Message)
	}
}

func antiAffinity(ps []*corev1.Pod, key string, required bool) {
	for _, p := range ps {
		term := corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": p.Labels["app"]}}}
		aa := &corev1.PodAntiAffinity{}
		if required {
			aa.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{term}
		} else {
			aa.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: term}}
		}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: aa}
	}
}

func TestHostnameAntiAffinityOnePodPerNode(t *testing.T) {
	catalog := loadCatalog(t)
	inflate := pods("inflate", 5, "1", "")
	antiAffinity(inflate, nodeplan.LabelHostname, true)
	res, err := Solve(context.Background(), Input{Pods: inflate, NodePools: []nodeplan.NodePool{{Name: "default"}}, InstanceTypes: catalog})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NodeClaims) != 5 {
		t.Fatalf("nodes = %d, want 5 (one inflate pod per node)", len(res.NodeClaims))
	}
	for _, c := range res.NodeClaims {
		if len(c.Pods) != 1 {
			t.Errorf("claim holds %v, want one pod", c.Pods)
		}
	}
}

func TestSelfAffinitySharesAZone(t *testing.T) {
	catalog := loadCatalog(t)
	ps := pods("together", 40, "1", "2Gi")
	for _, p := range ps {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: nodeplan.LabelZone, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "together"}}}}}}
	}
	res, err := Solve(context.Background(), Input{Pods: ps, NodePools: []nodeplan.NodePool{{Name: "default"}}, InstanceTypes: catalog})
	if err != nil {
		t.Fatal(err)
	}
	if got := zoneOf(t, res); len(got) != 1 {
		t.Errorf("pods per zone = %v, want a single zone", got)
	}
}

func TestPreferredAntiAffinityDoesNotMultiplyNodes(t *testing.T) {
	catalog := loadCatalog(t)
	ps := pods("pref", 4000, "100m", "128Mi")
	antiAffinity(ps, nodeplan.LabelHostname, false)
	res, err := Solve(context.Background(), Input{Pods: ps, NodePools: []nodeplan.NodePool{{Name: "default"}}, InstanceTypes: catalog, DaemonSets: testDaemonSets()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Unschedulable) > 0 {
		t.Fatalf("%d unschedulable: %s", len(res.Unschedulable), res.Unschedulable[0].Message)
	}
	ignore, err := Solve(context.Background(), Input{Pods: ps, NodePools: []nodeplan.NodePool{{Name: "default"}}, InstanceTypes: catalog,
		DaemonSets: testDaemonSets(), Options: Options{Preferences: PreferencesIgnore}})
	if err != nil {
		t.Fatal(err)
	}
	// Karpenter's own benchmark gives 4,000 nodes here.
	if len(res.NodeClaims) > 400 || res.Cost > ignore.Cost*(1+defaultPreferenceMargin) {
		t.Errorf("nodes = %d ($%.2f/h) for 4,000 pods with a preferred anti-affinity; ignoring it gives %d ($%.2f/h)",
			len(res.NodeClaims), res.Cost, len(ignore.NodeClaims), ignore.Cost)
	}
	t.Logf("%d nodes, $%.2f/h", len(res.NodeClaims), res.Cost)
}
