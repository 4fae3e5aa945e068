package kubesched

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
)

// Completeness is what kube-scheduler made of the pods a plan left unplaced, once every node
// the NodePools could still launch was there to take them.
type Completeness struct {
	// Candidates counts the candidate nodes registered.
	Candidates int
	// Unplaced counts the pods the plan left unplaced that were submitted.
	Unplaced int
	// WronglyRefused maps each unplaced pod kube-scheduler bound → the node it got and the
	// reason the plan gave. Each is a pod nodeplan should have placed.
	WronglyRefused map[string]Refusal
	// Justified maps unplaced pods kube-scheduler bound on a candidate whose launch breaks a
	// budget the pod's explanation names (minValues) → why the refusal holds.
	Justified map[string]string
}

// Complete is the completeness half of the differential: after [Cluster.Provision] has bound
// the plan's pods, it registers one candidate Node for every (NodePool, instance type, zone,
// capacity type) the pools could launch — exactly as the plan's nodes are modelled, DaemonSet
// pods bound first — then submits every pod the plan left unplaced, free to go to any node,
// and reports those kube-scheduler binds.
//
// A candidate that would take its pool past a limit (counting the plan's nodes) is not
// registered, so a pod refused for a limit binds only if another pool or offering could have
// taken it. A pod refused for minValues that binds on a candidate is judged by the budget:
// wrongly refused only when at least minValues values of the key fit it (resources, node
// affinity and taints; [minValuesJustified]).
//
// One candidate per offering is a lower bound on what the pools could launch (several pods
// may need several nodes of one offering), so a pod left pending here may still be placeable;
// a pod bound here certainly is.
func (cl *Cluster) Complete(ctx context.Context, rep *Report) (Completeness, error) {
	in, res := rep.Input, rep.Result
	out := Completeness{WronglyRefused: map[string]Refusal{}, Justified: map[string]string{}}
	reasons := map[string]scheduling.Unschedulable{}
	var pending []*corev1.Pod
	for _, u := range res.Unschedulable {
		reasons[u.Pod] = u
	}
	for _, p := range in.Pods {
		if _, ok := reasons[nodeplan.PodKey(p)]; ok {
			pending = append(pending, submitted(p, "", false))
		}
	}
	out.Unplaced = len(pending)
	if len(pending) == 0 {
		return out, nil
	}
	cands := Candidates(in, res, pending)
	out.Candidates = len(cands)
	var daemons []*corev1.Pod
	for _, n := range cands {
		if err := cl.AddNodes(ctx, n); err != nil {
			return out, err
		}
		for _, p := range DaemonPods(n, in.DaemonSets) {
			p = schedulingtest.APIServerShaped(p)
			daemons = append(daemons, p)
			if err := cl.AddPods(ctx, p); err != nil {
				return out, err
			}
		}
	}
	if _, err := cl.Wait(ctx, daemons, 2*time.Second); err != nil {
		return out, err
	}
	got, err := cl.Submit(ctx, pending)
	if err != nil {
		return out, err
	}
	byName := map[string]*corev1.Node{}
	for _, n := range cands {
		byName[n.Name] = n
	}
	for _, k := range slices.Sorted(maps.Keys(got.Bound)) {
		node, u := got.Bound[k], reasons[k]
		desc := fmt.Sprintf("bound on %s; the plan said %s: %s", node, u.Code, u.Message)
		if u.Code == scheduling.ReasonMinValues {
			if why, ok := minValuesJustified(podByKey(in.Pods, k), byName[node], cands, in); ok {
				out.Justified[k] = why
				continue
			}
		}
		out.WronglyRefused[k] = Refusal{Code: u.Code, Message: desc}
	}
	return out, nil
}

// Refusal is a pod the plan left unplaced that kube-scheduler bound: the plan's reason code
// and a sentence with the node it got and the plan's explanation.
type Refusal struct {
	Code    scheduling.Reason
	Message string
}

// Candidates returns one Node per (NodePool, instance type, available offering) the pools
// could launch, labelled, tainted and sized as [NewNode] models a launched claim, leaving out
// those that would take their pool past a limit given the plan's nodes and those no pod of
// pending fits by resources. Names are cand-N in a fixed order.
func Candidates(in scheduling.Input, res scheduling.Result, pending []*corev1.Pod) []*corev1.Node {
	catalog := Catalog(in.InstanceTypes)
	used := map[string]corev1.ResourceList{}
	for _, c := range res.NodeClaims {
		if it, ok := catalog[c.InstanceType]; ok {
			used[c.NodePool] = nodeplan.AddResources(used[c.NodePool], withNodeCount(it.Capacity))
		}
	}
	smallest := smallestRequests(pending)
	var out []*corev1.Node
	for _, np := range in.NodePools {
		if np.Replicas != nil {
			continue // static pools are never provisioned into
		}
		types := in.InstanceTypes
		if pt, ok := in.PoolInstanceTypes[np.Name]; ok {
			types = pt
		}
		for _, it := range types {
			if !withinLimits(np.Limits, nodeplan.AddResources(used[np.Name], withNodeCount(it.Capacity))) {
				continue
			}
			if _, fits := nodeplan.Fits(smallest, it.Allocatable()); !fits {
				continue
			}
			if !typeAllowed(np, it) {
				continue
			}
			for _, o := range it.Offerings {
				if !o.Available {
					continue
				}
				claim := nodeplan.NodeClaim{NodePool: np.Name, Taints: np.Template.Taints}
				claim.Labels = np.Template.Requirements.Labels()
				maps.Copy(claim.Labels, np.Template.Labels)
				node := NewNode(fmt.Sprintf("cand-%d", len(out)), claim, it, o)
				if !np.Template.Requirements.Matches(node.Labels) {
					continue
				}
				out = append(out, node)
			}
		}
	}
	return out
}

// typeAllowed reports whether the pool's requirements accept the instance type's own labels:
// a pool asking for category t never launches a c6i. The candidate's labels cannot tell, since
// the pool's single-valued requirements are written over them as a claim's labels are.
func typeAllowed(np nodeplan.NodePool, it nodeplan.InstanceType) bool {
	labels := maps.Clone(it.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[nodeplan.LabelInstanceType] = it.Name
	for _, r := range np.Template.Requirements.All() {
		if v, ok := labels[r.Key]; ok && !r.Accepts(v, true) {
			return false
		}
	}
	return true
}

// withNodeCount is a node's capacity with the one node it is, for a limit on nodes.
func withNodeCount(capacity corev1.ResourceList) corev1.ResourceList {
	out := capacity.DeepCopy()
	out[nodeplan.ResourceNodes] = *resource.NewQuantity(1, resource.DecimalSI)
	return out
}

// withinLimits reports whether total stays within every limit that is set.
func withinLimits(limits, total corev1.ResourceList) bool {
	for name, limit := range limits {
		if q, ok := total[name]; ok && q.Cmp(limit) > 0 {
			return false
		}
	}
	return true
}

// smallestRequests is the least of each resource any pod of pods requests: a node too small for
// it takes none of them.
func smallestRequests(pods []*corev1.Pod) corev1.ResourceList {
	var out corev1.ResourceList
	for i, p := range pods {
		r := nodeplan.PodRequests(p)
		if i == 0 {
			out = r
			continue
		}
		for name, q := range out {
			if o, ok := r[name]; !ok {
				delete(out, name)
			} else if o.Cmp(q) < 0 {
				out[name] = o
			}
		}
	}
	return out
}

// minValuesJustified says whether a pod refused for minValues, which kube-scheduler bound on
// node, is rightly refused: the pool of node asks for at least N values of a key among the
// instance types a claim may launch as, and fewer than N values of that key have a candidate
// of the pool the pod fits on (resources with the node's DaemonSet pods, required node
// affinity, taints). Written here, independently of the solver.
func minValuesJustified(pod *corev1.Pod, node *corev1.Node, cands []*corev1.Node, in scheduling.Input) (string, bool) {
	if pod == nil || node == nil {
		return "", false
	}
	pool := node.Labels[nodeplan.LabelNodePool]
	var np *nodeplan.NodePool
	for i := range in.NodePools {
		if in.NodePools[i].Name == pool {
			np = &in.NodePools[i]
		}
	}
	if np == nil {
		return "", false
	}
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	req := nodeplan.PodRequests(pod)
	for _, r := range np.Template.Requirements.All() {
		if r.MinValues <= 0 {
			continue
		}
		values := map[string]bool{}
		for _, c := range cands {
			if c.Labels[nodeplan.LabelNodePool] != pool {
				continue
			}
			if ok, _ := affinity.Match(c); !ok {
				continue
			}
			if _, bad := nodeplan.UntoleratedTaint(pod.Spec.Tolerations, noScheduleTaints(c.Spec.Taints)); bad {
				continue
			}
			room := c.Status.Allocatable
			for _, d := range DaemonPods(c, in.DaemonSets) {
				room = nodeplan.SubtractResources(room, nodeplan.PodRequests(d))
			}
			if _, fits := nodeplan.Fits(req, room); fits {
				values[c.Labels[r.Key]] = true
			}
		}
		if len(values) < r.MinValues {
			return fmt.Sprintf("nodepool %s asks for %d values of %s; %d fit the pod (%v)", pool, r.MinValues, r.Key, len(values), slices.Sorted(maps.Keys(values))), true
		}
	}
	return "", false
}

// noScheduleTaints are the taints that keep a pod off a node at scheduling time.
func noScheduleTaints(ts []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range ts {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}
