package disruption

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/internal/topology"
	"github.com/nodeplan/nodeplan/scheduling"
)

// The commands of a pass are carried out together: the controller drains them at the same
// time, so every pod they move is pending at once, and kube-scheduler checks each one's
// topology spread and required pod affinity against the cluster all the commands leave — not
// against the cluster as it was when its own command was simulated. Commands are simulated one
// after another, each seeing the earlier ones' moves as done; but a later command that evicts
// pods an earlier moved pod's spread or affinity counts changes what that pod will find: the
// pods it spread against may leave a zone, the pod it follows may move away.
//
// So once a simulation has found moves, it looks at every pod placed earlier in the pass whose
// hard inter-pod terms (DoNotSchedule spread, required pod affinity) select one of its pods.
// When the moves leave what such a pod counts unchanged (each selected pod stays in its domain;
// see affected), nothing more is needed. Otherwise it simulates again, with those pods re-placed
// beside its own, pinned to the nodes they were given, so the solver checks that they still bind
// there once the new moves are made. If one of them no longer would — or cannot be pinned — the
// set waits for a later pass.

// placedPod is a pod the pass moves (or a pending pod it places) whose hard inter-pod terms
// count other pods.
type placedPod struct {
	pod     *corev1.Pod
	node    string
	virtual bool // node is a replacement another command launches
	pending bool // a pending pod the pass expects on node, not a moved one
	terms   []hardTerm
}

// hardTerm is one selector of a DoNotSchedule spread or required pod affinity term.
type hardTerm struct {
	sel    labels.Selector
	ns     string // the namespace it counts pods in; "" for any (a namespaceSelector or list)
	key    string // the topology key
	spread bool   // a spread constraint, not a pod affinity term
	// filtered: a spread that counts only the nodes the pod's node selection admits (alts,
	// any of them) or whose taints it tolerates (tols), so a pod moved within a domain may
	// leave or enter its count.
	filtered    bool
	inexact     bool                    // alts cannot say (a term names nodes): every move counts
	alts        []nodeplan.Requirements // nil: every node
	honorTaints bool
	tols        []corev1.Toleration
}

// counts reports whether a filtered term counts the pods on node n.
func (t hardTerm) counts(n *corev1.Node) bool {
	if t.alts != nil && !slices.ContainsFunc(t.alts, func(r nodeplan.Requirements) bool { return r.Matches(n.Labels) }) {
		return false
	}
	if t.honorTaints {
		if _, blocked := nodeplan.UntoleratedTaint(t.tols, n.Spec.Taints); blocked {
			return false
		}
	}
	return true
}

// hardTerms returns the pod's terms that decide whether it may bind, by what they select.
func hardTerms(pod *corev1.Pod) []hardTerm {
	var out []hardTerm
	add := func(ls *metav1.LabelSelector, ns, key string, spread bool) {
		sel, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			sel = labels.Everything()
		}
		out = append(out, hardTerm{sel: sel, ns: ns, key: key, spread: spread})
	}
	alts, selects, exact := nodeSelection(pod)
	for _, c := range pod.Spec.TopologySpreadConstraints {
		// The constraint as kube-scheduler reads it, its defaults filled in: the solver's
		// reading (internal/topology), so a new spread option reaches disruption too.
		sp := topology.FromConstraint(c)
		if sp.Hard && c.LabelSelector != nil {
			add(c.LabelSelector, pod.Namespace, sp.Key, true)
			t := &out[len(out)-1]
			t.honorTaints = sp.HonorTaints
			t.filtered = sp.HonorTaints || (sp.HonorAffinity && selects)
			if sp.HonorAffinity && selects {
				t.alts, t.inexact = alts, !exact
			}
			t.tols = pod.Spec.Tolerations
		}
	}
	if a := pod.Spec.Affinity; a != nil && a.PodAffinity != nil {
		for _, t := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			ns := pod.Namespace
			if len(t.Namespaces) > 0 || t.NamespaceSelector != nil {
				ns = ""
			}
			add(t.LabelSelector, ns, t.TopologyKey, false)
		}
	}
	return out
}

// nodeSelection returns the pod's node selection as alternatives (node affinity terms, each with
// the nodeSelector), false when it has none, and false again when a term cannot be read as
// labels (matchFields name nodes).
func nodeSelection(pod *corev1.Pod) (alts []nodeplan.Requirements, selects, exact bool) {
	base := nodeplan.RequirementsFromLabels(pod.Spec.NodeSelector)
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		if len(pod.Spec.NodeSelector) == 0 {
			return nil, false, true
		}
		return []nodeplan.Requirements{base}, true, true
	}
	alts = []nodeplan.Requirements{}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		rs, err := nodeplan.RequirementsFromNodeSelector(term.MatchExpressions)
		if err != nil || len(term.MatchFields) > 0 {
			return nil, true, false
		}
		alts = append(alts, base.Intersect(rs))
	}
	return alts, true, true
}

// recordPlaced remembers pods placed on node this pass, for dependents.
func (p *planner) recordPlaced(node string, virtual, pending bool, pods []*corev1.Pod) {
	for _, pod := range pods {
		if t := hardTerms(pod); len(t) > 0 {
			p.placed = append(p.placed, placedPod{pod: pod, node: node, virtual: virtual, pending: pending, terms: t})
		}
	}
}

// dependents returns the pods placed earlier in the pass whose hard terms select one of
// moving.
func (p *planner) dependents(moving []*corev1.Pod) []placedPod {
	var out []placedPod
	for _, d := range p.placed {
		if slices.ContainsFunc(moving, d.selects) {
			out = append(out, d)
		}
	}
	return out
}

func (d placedPod) selects(pod *corev1.Pod) bool {
	for _, t := range d.terms {
		if t.selects(pod) {
			return true
		}
	}
	return false
}

func (t hardTerm) selects(pod *corev1.Pod) bool {
	return (t.ns == "" || t.ns == pod.Namespace) && t.sel.Matches(labels.Set(pod.Labels))
}

// affected reports whether moving set's pods as res says may change what d's terms find. A
// term over a key other than the hostname counts per domain: it is unaffected when every pod it
// selects stays in its domain (the node left behind is still there, in the same domain, while
// the pods bind). A pod affinity term per hostname needs its match on d's node, which is not
// among set's. A spread per hostname changes when a pod it selects lands on d's node; its
// minimum was already zero when d was placed (the nodes its own command removed were empty
// domains then), unless it counts only some nodes or d is a pending pod.
func (p *planner) affected(d placedPod, set []*nstate, res scheduling.Result) bool {
	dest := map[string]string{}
	for _, pl := range res.Existing {
		for _, k := range pl.Pods {
			dest[k] = pl.Name
		}
	}
	for _, t := range d.terms {
		if t.key == nodeplan.LabelHostname && !t.spread {
			continue
		}
		for _, s := range set {
			for _, pod := range s.movable {
				if !t.selects(pod) {
					continue
				}
				if t.key == nodeplan.LabelHostname {
					if t.filtered || d.pending || dest[nodeplan.PodKey(pod)] == d.node {
						return true
					}
					continue
				}
				to := p.byName[dest[nodeplan.PodKey(pod)]]
				if to == nil { // a new node or nowhere
					return true
				}
				v, ok := s.sched.Node.Labels[t.key]
				if w, has := to.sched.Node.Labels[t.key]; !ok || !has || v != w {
					return true
				}
				if t.filtered && (t.inexact || t.counts(s.sched.Node) != t.counts(to.sched.Node)) {
					return true
				}
			}
		}
	}
	return false
}

// pinned returns a pending copy of d's pod, for the solver to place on d's node only
// (scheduling.Input.Pins), and false when d's node is another command's replacement, which is
// not a node the solve may use.
func (d placedPod) pinned() (*corev1.Pod, bool) {
	if d.virtual {
		return nil, false
	}
	q := *d.pod
	q.Spec.NodeName = ""
	return &q, true
}

// brokenDependent is the blocker for a set whose moves would leave d unable to bind.
func brokenDependent(d placedPod, why string) *Blocked {
	msg := fmt.Sprintf("pod %s, which another command of this pass moves to %s, counts the node's pods for its topology spread or pod affinity", nodeplan.PodKey(d.pod), d.node)
	if why != "" {
		msg += " and could not bind there once they move (" + why + ")"
	} else {
		msg += ", and that move cannot be re-checked against this one"
	}
	return &Blocked{Code: CodeDependsOnPass, Object: nodeplan.PodKey(d.pod),
		Message: msg + "; a later pass reconsiders the node"}
}

// unplace is node v as a simulation sees it with pods (placed there earlier in the pass) taken
// off again: their room back, and no longer among its pods.
func (p *planner) unplace(v scheduling.Node, pods []*corev1.Pod) scheduling.Node {
	node := *v.Node
	alloc := node.Status.Allocatable.DeepCopy()
	gone := map[string]bool{}
	for _, pod := range pods {
		alloc = nodeplan.AddResources(alloc, p.podRequests(pod))
		gone[nodeplan.PodKey(pod)] = true
	}
	node.Status.Allocatable = alloc
	v.Node = &node
	v.Pods = slices.DeleteFunc(slices.Clone(v.Pods), func(pod *corev1.Pod) bool { return gone[nodeplan.PodKey(pod)] })
	return v
}

// dropPinned takes the pinned pods of deps out of a simulation's result, and returns the blocker
// for the first of them the solver could not place on its node.
func dropPinned(res scheduling.Result, deps []placedPod) (scheduling.Result, *Blocked) {
	byKey := make(map[string]placedPod, len(deps))
	for _, d := range deps {
		byKey[nodeplan.PodKey(d.pod)] = d
	}
	var broken *Blocked
	var unsched []scheduling.Unschedulable
	for _, u := range res.Unschedulable {
		if d, ok := byKey[u.Pod]; ok {
			if broken == nil {
				broken = brokenDependent(d, u.Message)
			}
			continue
		}
		unsched = append(unsched, u)
	}
	res.Unschedulable = unsched
	var existing []scheduling.Placement
	for _, pl := range res.Existing {
		pods := slices.DeleteFunc(slices.Clone(pl.Pods), func(k string) bool { _, ok := byKey[k]; return ok })
		if len(pods) > 0 {
			existing = append(existing, scheduling.Placement{Name: pl.Name, Pods: pods})
		}
	}
	res.Existing = existing
	return res, broken
}
