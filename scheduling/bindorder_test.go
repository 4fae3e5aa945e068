package scheduling_test

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// stuckOrder plays kube-scheduler's PodTopologySpread filter over every order of binding a
// plan's placed pods, by search over the sets of pods bound so far: a pod binds in its planned
// zone when, for each of its DoNotSchedule zone spreads, that zone's count of matching pods
// (running, and bound so far; the pod itself if it matches) is within maxSkew of the least count
// over the zones. It returns a set of placed pods some order leaves pending for good (nil when
// every order binds them all). Its scope is the tests' inputs: at most 20 placed pods, zone
// spreads only, every node eligible (no node affinity under nodeAffinityPolicy Honor, no
// tainted node under Honor), and the domains are zones.
func stuckOrder(in scheduling.Input, res scheduling.Result, zones []string) []string {
	where := placedZones(in, res)
	var pods []*corev1.Pod
	for _, p := range in.Pods {
		if _, ok := where[nodeplan.PodKey(p)]; ok {
			pods = append(pods, p)
		}
	}
	var running []*corev1.Pod
	runningZone := map[*corev1.Pod]string{}
	for _, n := range in.Nodes {
		for _, p := range n.Pods {
			if p.DeletionTimestamp == nil {
				running = append(running, p)
				runningZone[p] = n.Node.Labels[nodeplan.LabelZone]
			}
		}
	}
	binds := func(i int, bound uint) bool {
		p := pods[i]
		for _, c := range p.Spec.TopologySpreadConstraints {
			if c.WhenUnsatisfiable != corev1.DoNotSchedule || c.TopologyKey != nodeplan.LabelZone {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
			if err != nil || sel.Empty() {
				continue
			}
			counts := map[string]int{}
			for _, z := range zones {
				counts[z] = 0
			}
			for _, q := range running {
				if q.Namespace == p.Namespace && sel.Matches(labels.Set(q.Labels)) {
					counts[runningZone[q]]++
				}
			}
			for j, q := range pods {
				if (bound>>j)&1 == 1 && q.Namespace == p.Namespace && sel.Matches(labels.Set(q.Labels)) {
					counts[where[nodeplan.PodKey(q)]]++
				}
			}
			own := counts[where[nodeplan.PodKey(p)]]
			if sel.Matches(labels.Set(p.Labels)) {
				own++
			}
			lowest := own
			for _, n := range counts {
				lowest = min(lowest, n)
			}
			if own-lowest > int(c.MaxSkew) {
				return false
			}
		}
		return true
	}
	all := uint(1)<<len(pods) - 1
	seen := map[uint]bool{0: true}
	todo := []uint{0}
	for len(todo) > 0 {
		bound := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		progress := false
		for i := range pods {
			if (bound>>i)&1 == 0 && binds(i, bound) {
				progress = true
				if next := bound | 1<<i; !seen[next] {
					seen[next] = true
					todo = append(todo, next)
				}
			}
		}
		if !progress && bound != all {
			var stuck []string
			for i := range pods {
				if (bound>>i)&1 == 0 {
					stuck = append(stuck, nodeplan.PodKey(pods[i]))
				}
			}
			return stuck
		}
	}
	return nil
}
