package scheduling

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// podTerm selects pods the way an affinity term or a spread constraint does: a label selector,
// narrowed by matchLabelKeys / mismatchLabelKeys from the owning pod's labels, within a set of
// namespaces.
type podTerm struct {
	key string // topology key
	sel labels.Selector
	// allNS: every namespace; else ns lists them (nsSel, when set, adds those whose labels match).
	allNS bool
	ns    map[string]bool
	nsSel labels.Selector
	nsLab map[string]map[string]string // namespace labels, from the input
	// ownLabels: the selector was narrowed by the owner's own labels (matchLabelKeys,
	// mismatchLabelKeys), so owners that differ in those labels parse the term differently.
	ownLabels bool
}

// newPodTerm builds the selector of an affinity term owned by pod.
func newPodTerm(owner *corev1.Pod, t corev1.PodAffinityTerm, nsLabels map[string]map[string]string) (podTerm, error) {
	pt := podTerm{key: t.TopologyKey, nsLab: nsLabels}
	sel, own, err := selectorWithKeys(t.LabelSelector, owner, t.MatchLabelKeys, t.MismatchLabelKeys)
	if err != nil {
		return pt, err
	}
	pt.sel, pt.ownLabels = sel, own
	switch {
	case len(t.Namespaces) == 0 && t.NamespaceSelector == nil:
		pt.ns = map[string]bool{owner.Namespace: true}
	case t.NamespaceSelector != nil && len(t.NamespaceSelector.MatchLabels) == 0 && len(t.NamespaceSelector.MatchExpressions) == 0:
		pt.allNS = true // an empty namespaceSelector selects every namespace
	default:
		pt.ns = map[string]bool{}
		for _, n := range t.Namespaces {
			pt.ns[n] = true
		}
		if t.NamespaceSelector != nil {
			s, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector)
			if err != nil {
				return pt, err
			}
			pt.nsSel = s
		}
	}
	return pt, nil
}

// newSpreadTerm builds the selector of a topology spread constraint owned by pod: same namespace.
func newSpreadTerm(owner *corev1.Pod, c corev1.TopologySpreadConstraint) (podTerm, error) {
	pt := podTerm{key: c.TopologyKey, ns: map[string]bool{owner.Namespace: true}}
	sel, own, err := selectorWithKeys(c.LabelSelector, owner, c.MatchLabelKeys, nil)
	pt.sel, pt.ownLabels = sel, own
	return pt, err
}

// selectorWithKeys returns ls as a selector, narrowed to the owner's values of the match keys
// and away from its values of the mismatch keys, and whether it read the owner's labels (the
// one rule for which terms parse differently for owners that differ in their labels).
func selectorWithKeys(ls *metav1.LabelSelector, owner *corev1.Pod, match, mismatch []string) (labels.Selector, bool, error) {
	if ls == nil {
		// A nil selector matches nothing (kube-scheduler's reading for affinity terms and
		// spread constraints).
		return labels.Nothing(), false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, false, err
	}
	add := func(keys []string, op selection.Operator) error {
		for _, k := range keys {
			v, ok := owner.Labels[k]
			if !ok {
				continue
			}
			r, err := labels.NewRequirement(k, op, []string{v})
			if err != nil {
				return err
			}
			sel = sel.Add(*r)
		}
		return nil
	}
	if err := add(match, selection.In); err != nil {
		return nil, false, err
	}
	if err := add(mismatch, selection.NotIn); err != nil {
		return nil, false, err
	}
	return sel, len(match)+len(mismatch) > 0, nil
}

// sig identifies the term: equal signatures select the same pods over the same key.
func (t *podTerm) sig() string {
	ns := "*"
	if !t.allNS {
		ns = strings.Join(sortedSet(t.ns), ",")
		if t.nsSel != nil {
			ns += "+" + t.nsSel.String()
		}
	}
	return t.key + "|" + ns + "|" + t.sel.String()
}

// matchesAll reports whether every term selects pod: kube-scheduler counts a pod for a pod's
// required affinity only when it matches all of its terms.
func matchesAll(terms []podTerm, pod *corev1.Pod) bool {
	for i := range terms {
		if !terms[i].matches(pod) {
			return false
		}
	}
	return len(terms) > 0
}

// matches reports whether the term selects pod.
func (t *podTerm) matches(pod *corev1.Pod) bool {
	if !t.allNS && !t.ns[pod.Namespace] {
		if t.nsSel == nil || !t.nsSel.Matches(labels.Set(t.nsLab[pod.Namespace])) {
			return false
		}
	}
	return t.sel.Matches(labels.Set(pod.Labels))
}
