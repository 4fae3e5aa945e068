package scheduling

import (
	"slices"

	"k8s.io/apimachinery/pkg/selection"
)

// runningIndex lists the running pods by the value of a label key, built once a solve for each
// key some selector requires a value of. A disruption simulation hands the solver tens of
// thousands of running pods and each spread constraint counts the ones its selector matches;
// through the index a constraint looks only at the pods carrying one of the values it asks for
// instead of matching every running pod.
type runningIndex struct {
	pods  []existingPod // the slice indexed: a call with another one rebuilds
	byKey map[string]map[string][]int32
}

// runningCandidates returns the indexes into running of the pods t may select, in order, and
// whether that is every pod (then the list is nil). The caller still matches each candidate:
// the index only rules out pods lacking every value one requirement of the selector admits.
func (p *problem) runningCandidates(t *podTerm, running []existingPod) ([]int32, bool) {
	reqs, selectable := t.sel.Requirements()
	if !selectable {
		return nil, false // labels.Nothing: no pod
	}
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
		default:
			continue
		}
		byValue := p.runningByKey(r.Key(), running)
		vals := r.Values().UnsortedList()
		if len(vals) == 1 {
			return byValue[vals[0]], false
		}
		var out []int32
		for _, v := range vals {
			out = append(out, byValue[v]...)
		}
		slices.Sort(out) // the order of running, as a scan would visit them
		return out, false
	}
	return nil, true
}

// runningByKey returns the running pods by their value of label key.
func (p *problem) runningByKey(key string, running []existingPod) map[string][]int32 {
	ix := p.running
	if ix == nil || len(ix.pods) != len(running) || (len(running) > 0 && &ix.pods[0] != &running[0]) {
		ix = &runningIndex{pods: running, byKey: map[string]map[string][]int32{}}
		p.running = ix
	}
	if m, ok := ix.byKey[key]; ok {
		return m
	}
	m := map[string][]int32{}
	for i, e := range running {
		if v, ok := e.pod.Labels[key]; ok {
			m[v] = append(m[v], int32(i))
		}
	}
	ix.byKey[key] = m
	return m
}
