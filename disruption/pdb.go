package disruption

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeplan/nodeplan"
)

// PDBAllowed returns how many of a PDB's pods may be evicted now, computed from its spec and
// pods — every pod in the cluster; those outside the PDB's namespace or selector are ignored —
// the way the disruption controller computes status.disruptionsAllowed:
//
//   - expected pods: the matching pods that are not terminal (Succeeded or Failed);
//   - healthy pods: those running with the Ready condition true and not being deleted;
//   - desired healthy: minAvailable (a percentage of expected, rounded up), or expected minus
//     maxUnavailable (a percentage rounded up);
//   - allowed: healthy − desired, at least zero.
//
// The controller scales percentages by the owning workload's replicas; with only pods to go on,
// the count of expected pods stands in for it. A PDB whose spec sets neither field gets its
// status.disruptionsAllowed. healthy and desired are returned for messages.
func PDBAllowed(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (allowed, healthy, desired int) {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		sel = labels.Nothing()
	}
	expected := 0
	for _, p := range pods {
		if p.Namespace != pdb.Namespace || !sel.Matches(labels.Set(p.Labels)) || terminal(p) {
			continue
		}
		expected++
		if podHealthy(p) {
			healthy++
		}
	}
	return allowedFrom(pdb, expected, healthy)
}

func allowedFrom(pdb *policyv1.PodDisruptionBudget, expected, healthy int) (allowed, h, desired int) {
	switch {
	case pdb.Spec.MinAvailable != nil:
		desired = scaled(*pdb.Spec.MinAvailable, expected)
	case pdb.Spec.MaxUnavailable != nil:
		desired = max(expected-scaled(*pdb.Spec.MaxUnavailable, expected), 0)
	default:
		return max(int(pdb.Status.DisruptionsAllowed), 0), int(pdb.Status.CurrentHealthy), int(pdb.Status.DesiredHealthy)
	}
	return max(healthy-desired, 0), healthy, desired
}

// scaled resolves an int-or-percent against total, rounding percentages up as the disruption
// controller does. A malformed percentage counts as all of total, which blocks rather than
// permits.
func scaled(v intstr.IntOrString, total int) int {
	if v.Type == intstr.Int {
		return v.IntValue()
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, total, true)
	if err != nil {
		return total
	}
	return n
}

func terminal(p *corev1.Pod) bool {
	return nodeplan.PodTerminal(p)
}

func podHealthy(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// pdbSet tracks what each PDB still allows during one pass.
type pdbSet struct {
	list  []pdbState
	byPod map[string][]int // pod key → indices into list, ascending
}

type pdbState struct {
	key                string
	allowed            int // what the spec allows at the start of the pass
	used               int // healthy evictions planned so far
	healthy, desired   int
	unhealthyEvictable bool // an unhealthy pod may be evicted without using the budget
}

func newPDBSet(pdbs []*policyv1.PodDisruptionBudget, pods []*corev1.Pod) *pdbSet {
	s := &pdbSet{byPod: map[string][]int{}}
	if len(pdbs) == 0 {
		return s
	}
	byNS := map[string][]*corev1.Pod{}
	for _, p := range pods {
		byNS[p.Namespace] = append(byNS[p.Namespace], p)
	}
	sorted := slices.Clone(pdbs)
	slices.SortFunc(sorted, func(a, b *policyv1.PodDisruptionBudget) int {
		return compareStrings(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for _, pdb := range sorted {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			sel = labels.Nothing()
		}
		i := len(s.list)
		expected, healthy := 0, 0
		for _, p := range byNS[pdb.Namespace] {
			if !sel.Matches(labels.Set(p.Labels)) || terminal(p) {
				continue
			}
			expected++
			if podHealthy(p) {
				healthy++
			}
			k := p.Namespace + "/" + p.Name
			s.byPod[k] = append(s.byPod[k], i)
		}
		allowed, h, desired := allowedFrom(pdb, expected, healthy)
		always := pdb.Spec.UnhealthyPodEvictionPolicy != nil && *pdb.Spec.UnhealthyPodEvictionPolicy == policyv1.AlwaysAllow
		s.list = append(s.list, pdbState{key: pdb.Namespace + "/" + pdb.Name, allowed: allowed,
			healthy: h, desired: desired, unhealthyEvictable: always || h >= desired})
	}
	return s
}

// pdbNeed is what a move takes from each PDB's allowance this pass, by index into pdbSet.list.
type pdbNeed map[int]int

// need returns what draining one node's pods takes from each PDB, or a blocker: a pod under
// two PDBs (the Eviction API refuses it) or an unhealthy pod its PDB will not let go.
//
// A graceful drain takes one eviction from each PDB covering the node's healthy pods, however
// many of them the node has: Karpenter's rule (pdb.Limits.CanEvictPods) is that every PDB must
// allow at least one eviction, and the drain then evicts through the Eviction API, which
// answers 429 until the PDB allows the next — once the pod evicted before has a Ready
// replacement. So a PDB allowing 1 lets a node with 3 of its pods go, one pod at a time, and
// lets only one such node drain at once. Command.OneAtATime names the PDBs this serialises.
func (s *pdbSet) need(pods []*corev1.Pod) (pdbNeed, *Blocked) {
	var n pdbNeed
	for _, p := range pods {
		k := p.Namespace + "/" + p.Name
		idx := s.byPod[k]
		if len(idx) == 0 {
			continue
		}
		if len(idx) > 1 {
			return nil, &Blocked{Code: CodePDB, Object: s.list[idx[0]].key, Message: fmt.Sprintf(
				"pod %s is covered by PDBs %s and %s; the Eviction API refuses to evict a pod under more than one PDB",
				k, s.list[idx[0]].key, s.list[idx[1]].key)}
		}
		if !podHealthy(p) {
			if !s.list[idx[0]].unhealthyEvictable {
				st := s.list[idx[0]]
				return nil, &Blocked{Code: CodePDB, Object: st.key, Message: fmt.Sprintf(
					"PDB %s does not allow evicting unhealthy pod %s while only %d of %d desired pods are healthy",
					st.key, k, st.healthy, st.desired)}
			}
			continue
		}
		if n == nil {
			n = pdbNeed{}
		}
		n[idx[0]] = 1
	}
	return n, nil
}

// needNodes is what draining every node of set takes: one eviction per PDB per node, the
// nodes draining at once.
func (s *pdbSet) needNodes(set []*nstate) (pdbNeed, *Blocked) {
	var total pdbNeed
	for _, st := range set {
		n, bl := s.need(st.movable)
		if bl != nil {
			return nil, bl
		}
		total = total.add(n)
	}
	return total, nil
}

// oneAtATime returns the keys, sorted, of the PDBs with more than one healthy pod on a node of
// set: their drain evicts those pods one at a time, each waiting until the PDB allows it.
func (s *pdbSet) oneAtATime(set []*nstate) []string {
	var keys []string
	for _, st := range set {
		count := map[int]int{}
		for _, p := range st.movable {
			idx := s.byPod[p.Namespace+"/"+p.Name]
			if len(idx) == 1 && podHealthy(p) {
				count[idx[0]]++
			}
		}
		for i, c := range count {
			if c > 1 && !slices.Contains(keys, s.list[i].key) {
				keys = append(keys, s.list[i].key)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// check reports the first PDB (by key) that cannot take need on top of what is used.
func (s *pdbSet) check(n pdbNeed) *Blocked {
	for _, i := range sortedKeys(n) {
		st := s.list[i]
		if st.used+n[i] <= st.allowed {
			continue
		}
		msg := fmt.Sprintf("PDB %s allows %d disruptions now (%d healthy, %d required)", st.key, st.allowed, st.healthy, st.desired)
		switch {
		case st.allowed == 0:
			msg += ", so none of its pods can be evicted"
		case st.used > 0:
			msg += fmt.Sprintf(", %d already taken by evictions planned this pass, and the move would drain its pods from %d more nodes at once",
				st.used, n[i])
		default:
			msg += fmt.Sprintf(", and the move would drain its pods from %d nodes at once", n[i])
		}
		return &Blocked{Code: CodePDB, Object: st.key, Message: msg}
	}
	return nil
}

func (s *pdbSet) take(n pdbNeed) {
	for i, c := range n {
		s.list[i].used += c
	}
}

// add returns the sum of two needs.
func (n pdbNeed) add(o pdbNeed) pdbNeed {
	if len(o) == 0 {
		return n
	}
	out := make(pdbNeed, len(n)+len(o))
	for i, c := range n {
		out[i] += c
	}
	for i, c := range o {
		out[i] += c
	}
	return out
}

func sortedKeys(n pdbNeed) []int {
	keys := make([]int, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func compareStrings(a, b string) int { return strings.Compare(a, b) }

// needForced is what evicting pods takes from each PDB when nothing may hold the eviction back:
// every healthy pod counts against every PDB that covers it.
func (s *pdbSet) needForced(pods []*corev1.Pod) pdbNeed {
	var n pdbNeed
	for _, p := range pods {
		idx := s.byPod[p.Namespace+"/"+p.Name]
		if len(idx) == 0 || !podHealthy(p) {
			continue
		}
		if n == nil {
			n = pdbNeed{}
		}
		for _, i := range idx {
			n[i]++
		}
	}
	return n
}
