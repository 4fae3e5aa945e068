package check_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/check"
)

// zonesWithRunning is an input of three existing nodes, one per zone, running pods labelled
// my-label=f and my-label=g as counted (per zone a, b, c), and no pool.
func zonesWithRunning(f, g [3]int) scheduling.Input {
	var in scheduling.Input
	for i, z := range []string{"zone-a", "zone-b", "zone-c"} {
		name := "node-" + z
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				nodeplan.LabelZone: z, nodeplan.LabelHostname: name, nodeplan.LabelArch: "amd64"}},
			Status: corev1.NodeStatus{Capacity: withPods(rl("8", "16Gi"), 110), Allocatable: withPods(rl("8", "16Gi"), 110)},
		}
		n := scheduling.Node{Node: node}
		for v, counts := range map[string][3]int{"f": f, "g": g} {
			for j := range counts[i] {
				p := pod(fmt.Sprintf("default/run-%s-%s-%d", v, z, j), "100m", "")
				p.Labels = map[string]string{"my-label": v}
				p.Spec.NodeName = name
				n.Pods = append(n.Pods, p)
			}
		}
		in.Nodes = append(in.Nodes, n)
	}
	return in
}

// labelledCarrier is a pending pod labelled my-label=label with a zone spread (maxSkew 1) over
// the pods labelled my-label=sel.
func labelledCarrier(key, label, sel string) *corev1.Pod {
	p := pod(key, "100m", "")
	p.Labels = map[string]string{"my-label": label}
	p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: nodeplan.LabelZone,
		WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"my-label": sel}}}}
	return p
}

// The final state is not enough for spreads whose carriers count for each other's selectors:
// x (labelled f, spread over g) in zone-a is within maxSkew only once y is bound in zone-b, and y
// (labelled g, spread over f) only once x is bound. kube-scheduler binds neither, in any order.
func TestSpreadCarriersWaitingOnEachOther(t *testing.T) {
	tests := []struct {
		name string
		f, g [3]int // running pods per zone a, b, c
		want []check.Rule
	}{
		// g: a2 b0+y c1, f: a0+x b2 c1 — each within maxSkew at the end, neither first.
		{"each waits for the other", [3]int{0, 2, 1}, [3]int{2, 0, 1}, []check.Rule{check.RuleTopologySpread, check.RuleTopologySpread}},
		// f: a0+x b1 c1 — y binds at once, then x.
		{"one waits, the other binds first", [3]int{0, 1, 1}, [3]int{2, 0, 1}, nil},
		// g: a1 b0+y c1 — x binds at once.
		{"neither waits", [3]int{0, 1, 1}, [3]int{1, 0, 1}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := zonesWithRunning(tt.f, tt.g)
			in.Pods = []*corev1.Pod{labelledCarrier("default/x", "f", "g"), labelledCarrier("default/y", "g", "f")}
			res := scheduling.Result{Existing: []scheduling.Placement{
				{Name: "node-zone-a", Pods: []string{"default/x"}}, {Name: "node-zone-b", Pods: []string{"default/y"}}}}
			err := check.Result(in, res)
			var got []check.Rule
			for _, v := range check.Violations(err) {
				got = append(got, v.Rule)
				if !strings.Contains(v.Detail, "may wait forever") {
					t.Errorf("violation %v: want a wait", v)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("rules broken (-want +got):\n%s\n%v", diff, err)
			}
		})
	}
}

// The same cycle can form turned two ways: the g pods in zone-a (spread over f) waiting for the
// f pods in zone-c, which (spread over g) wait for them — or the g pods in zone-c waiting for the
// f pods in zone-a, which wait for them. Every final count is 2 in every zone. Settled with all
// eight pending at once nothing is refused, so the check passed the plan; kube-scheduler can bind
// the f pods in zone-a and the g pods in zone-c first, and then the other four wait for good
// (input 349 of scheduling's TestSpreadCarriersWaitingOnEachOtherBindInAnyOrder, simplified).
func TestSpreadCarriersWaitingOnEachOtherTwoWays(t *testing.T) {
	in := zonesWithRunning([3]int{0, 2, 0}, [3]int{0, 2, 0})
	var res scheduling.Result
	for _, z := range []string{"a", "c"} {
		var keys []string
		for _, v := range []struct{ label, sel string }{{"f", "g"}, {"g", "f"}} {
			for i := range 2 {
				key := fmt.Sprintf("default/%s-%s-%d", v.label, z, i)
				in.Pods = append(in.Pods, labelledCarrier(key, v.label, v.sel))
				keys = append(keys, key)
			}
		}
		res.Existing = append(res.Existing, scheduling.Placement{Name: "node-zone-" + z, Pods: keys})
	}
	err := check.Result(in, res)
	vs := check.Violations(err)
	if len(vs) == 0 {
		t.Fatal("check.Result() = nil, want the pods of one way of the cycle to wait forever")
	}
	for _, v := range vs {
		if v.Rule != check.RuleTopologySpread || !strings.Contains(v.Detail, "may wait forever") {
			t.Errorf("violation %v: want a wait", v)
		}
	}
}
