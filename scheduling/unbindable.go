package scheduling

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

// withoutUnbindable solves in again without the pods res left unplaced for reasons of their
// own — no pool, taint, requirement, type, offering, minValues or volume zone takes them — when
// res also left pods unplaced for a spread or an affinity: pods that can never bind count for
// nobody's constraints in kube-scheduler, but the first solve counted them. A pod with required
// affinity to them was made to follow them and refused with them, though, as none of them will
// ever bind, kube-scheduler lets it start where it likes if it matches its own term (and a
// spread's carriers met counts that will never be). It keeps the second plan when it places
// more pods, each unbindable pod keeping its first reason.
func withoutUnbindable(ctx context.Context, in *Input, res Result) (Result, error) {
	never := map[string]bool{}
	topological := false
	for _, u := range res.Unschedulable {
		switch u.Code {
		case ReasonTopologySpread, ReasonPodAffinity, ReasonPodAntiAffinity:
			topological = true
		case ReasonHostPort, ReasonLimit:
			// They depend on where other pods go: they might bind.
		default:
			never[u.Pod] = true
		}
	}
	if !topological || len(never) == 0 {
		return res, nil
	}
	again := *in
	again.Pods = slices.DeleteFunc(slices.Clone(in.Pods), func(p *corev1.Pod) bool {
		return p != nil && never[nodeplan.PodKey(p)]
	})
	res2, err := solveWithPreferences(ctx, &again)
	if err != nil {
		return Result{}, err
	}
	if len(res2.Unschedulable)+len(never) >= len(res.Unschedulable) {
		return res, nil
	}
	for _, u := range res.Unschedulable {
		if never[u.Pod] {
			res2.Unschedulable = append(res2.Unschedulable, u)
		}
	}
	slices.SortFunc(res2.Unschedulable, func(a, b Unschedulable) int { return strings.Compare(a.Pod, b.Pod) })
	return res2, nil
}
