package kubesched

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
)

// finalState describes, for a refused pod, what its required pod affinity terms and
// DoNotSchedule spread constraints see once every other planned pod is bound: the matching
// pods per topology domain. It is what a FINDINGS entry needs; kube-scheduler's message only
// names the rule.
func finalState(p *corev1.Pod, pods []*corev1.Pod, bound map[string]string, nodes []PlannedNode) string {
	nodeLabels := map[string]map[string]string{}
	for _, n := range nodes {
		nodeLabels[n.Node.Name] = n.Node.Labels
	}
	self := nodeplan.PodKey(p)
	count := func(sel *metav1.LabelSelector, ns []string, key string) map[string][]string {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return nil
		}
		out := map[string][]string{}
		for _, q := range pods {
			k := nodeplan.PodKey(q)
			node, ok := bound[k]
			if !ok || k == self || (ns != nil && !slices.Contains(ns, q.Namespace)) || !s.Matches(labelSet(q.Labels)) {
				continue
			}
			d := nodeLabels[node][key]
			out[d] = append(out[d], q.Name)
		}
		return out
	}
	var b strings.Builder
	if a := p.Spec.Affinity; a != nil && a.PodAffinity != nil {
		for _, t := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			ns := []string{p.Namespace}
			if t.NamespaceSelector != nil {
				ns = nil
			}
			s, _ := metav1.LabelSelectorAsSelector(t.LabelSelector)
			fmt.Fprintf(&b, "\n      required affinity %s over %s (own labels match: %v): matching pods by domain %v", metav1.FormatLabelSelector(t.LabelSelector), t.TopologyKey,
				s.Matches(labelSet(p.Labels)), summarize(count(t.LabelSelector, ns, t.TopologyKey)))
		}
	}
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		s, _ := metav1.LabelSelectorAsSelector(c.LabelSelector)
		fmt.Fprintf(&b, "\n      spread %s over %s maxSkew %d (own labels match: %v): matching pods by domain %v", metav1.FormatLabelSelector(c.LabelSelector), c.TopologyKey, c.MaxSkew,
			s.Matches(labelSet(p.Labels)), summarize(count(c.LabelSelector, []string{p.Namespace}, c.TopologyKey)))
	}
	return b.String()
}

type labelSet map[string]string

func (l labelSet) Has(k string) bool   { _, ok := l[k]; return ok }
func (l labelSet) Get(k string) string { return l[k] }
func (l labelSet) Lookup(k string) (string, bool) {
	v, ok := l[k]
	return v, ok
}

func summarize(m map[string][]string) string {
	var parts []string
	for _, d := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s: %d %v", d, len(m[d]), m[d]))
	}
	if len(parts) > 0 && len(m[""]) == len(parts) {
		return "none"
	}
	return "{" + strings.Join(parts, "; ") + "}"
}
