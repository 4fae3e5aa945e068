package disruption_test

import (
	"cmp"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/check"
)

// checkInvariants checks what every plan must keep, computed independently of the planner
// where it can be: budgets, do-not-disrupt, PDBs, that moved pods fit (by scheduling/check),
// that consolidation never raises cost, and that every managed node is accounted for once.
func checkInvariants(t tb, in disruption.Input, r disruption.Result) {
	t.Helper()
	pools := map[string]*nodeplan.NodePool{}
	for i := range in.NodePools {
		pools[in.NodePools[i].Name] = &in.NodePools[i]
	}
	nodes := map[string]*disruption.Node{}
	for i := range in.Nodes {
		nodes[in.Nodes[i].Node.Name] = &in.Nodes[i]
	}

	// Every managed node is in exactly one command or one Blocked entry.
	seen := map[string]int{}
	for _, c := range r.Commands {
		for _, n := range c.Nodes {
			seen[n]++
		}
	}
	for _, b := range r.Blocked {
		seen[b.Node]++
		if b.Message == "" || b.Code == "" {
			t.Errorf("node %s blocked without a code or message: %+v", b.Node, b)
		}
	}
	for name, n := range nodes {
		want := 0
		if n.NodePool != "" {
			want = 1
		}
		if seen[name] != want {
			t.Errorf("node %s (pool %q) appears %d times in commands and Blocked, want %d", name, n.NodePool, seen[name], want)
		}
	}

	// Budgets: with commands in order, nodes disrupting never exceed a budgeted reason's cap.
	total, disrupting := map[string]int{}, map[string]int{}
	for _, n := range in.Nodes {
		if !n.Initialized.IsZero() {
			total[n.NodePool]++
		}
		if n.Disrupting {
			disrupting[n.NodePool]++
		}
	}
	for _, c := range r.Commands {
		for _, name := range c.Nodes {
			disrupting[nodes[name].NodePool]++
		}
		budgeted := c.Reason != nodeplan.ReasonInterrupted && (c.Reason != nodeplan.ReasonExpired || in.Options.ExpirationHonorsBudgets)
		if !budgeted {
			continue
		}
		for _, pool := range c.NodePools {
			allowed := pools[pool].Disruption.AllowedDisruptions(c.Reason, total[pool], in.Now)
			if disrupting[pool] > allowed {
				t.Errorf("command %v (%s) brings pool %s to %d disrupting, over its budget of %d", c.Nodes, c.Reason, pool, disrupting[pool], allowed)
			}
		}
	}

	// Do-not-disrupt: graceful commands touch no protected node or pod.
	for _, c := range r.Commands {
		if c.Reason == nodeplan.ReasonInterrupted || c.Reason == nodeplan.ReasonExpired {
			continue
		}
		for _, name := range c.Nodes {
			n := nodes[name]
			if nodeplan.NodeDoNotDisrupt(n.Node.Annotations) {
				t.Errorf("command %v (%s) disrupts do-not-disrupt node %s", c.Nodes, c.Reason, name)
			}
			if c.Forceful() {
				continue
			}
			for _, p := range n.Pods {
				if nodeplan.DoNotDisrupt(p, in.Now) && p.DeletionTimestamp == nil {
					t.Errorf("command %v (%s) evicts do-not-disrupt pod %s", c.Nodes, c.Reason, nodeplan.PodKey(p))
				}
			}
		}
	}

	// PDBs: forceful evictions use allowances first, one per healthy pod. A graceful drain takes
	// one per node with healthy pods of the PDB — it evicts them one at a time, as the PDB
	// lets it (Karpenter's rule: every PDB allows one) — and the nodes draining at once must
	// fit what is left.
	var all []*corev1.Pod
	for _, n := range in.Nodes {
		all = append(all, n.Pods...)
	}
	all = append(all, in.Pending...)
	evicted := map[string]bool{}
	for _, c := range r.Commands {
		for _, k := range c.Pods {
			evicted[k] = true
		}
	}
	for _, pdb := range in.PDBs {
		allowed, _, _ := disruption.PDBAllowed(pdb, all)
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		covers := func(p *corev1.Pod) bool {
			return p.Namespace == pdb.Namespace && sel.Matches(labels.Set(p.Labels)) && ready(p) && evicted[nodeplan.PodKey(p)]
		}
		forced, graceful := 0, 0
		var serial []string
		for _, c := range r.Commands {
			for _, name := range c.Nodes {
				count := 0
				for _, p := range nodes[name].Pods {
					if covers(p) {
						count++
					}
				}
				switch {
				case count == 0:
				case c.Forceful():
					forced += count
				default:
					graceful++
				}
				if count > 1 && !slices.Contains(c.OneAtATime, pdb.Namespace+"/"+pdb.Name) {
					serial = append(serial, name)
				}
			}
		}
		if graceful > 0 && graceful > max(allowed-forced, 0) {
			t.Errorf("PDB %s/%s allows %d disruptions, forceful commands take %d, and %d nodes drain its pods gracefully at once", pdb.Namespace, pdb.Name, allowed, forced, graceful)
		}
		if len(serial) > 0 {
			t.Errorf("nodes %v have several pods of PDB %s/%s but their command's OneAtATime does not name it", serial, pdb.Namespace, pdb.Name)
		}
	}

	// Consolidation never raises cost; replacements are judged at their worst launch price.
	for _, c := range r.Commands {
		if c.Reason != nodeplan.ReasonUnderutilized && c.Reason != nodeplan.ReasonEmpty {
			continue
		}
		if c.Action == disruption.ActionDelete && len(c.Replacements) == 0 && c.ReplacementPrice == 0 {
			continue // a delete costs nothing after, even when the node's price is unknown
		}
		if !(c.Savings > 0) || c.ReplacementPrice >= c.Price {
			t.Errorf("%s command %v costs $%.4f/h after, $%.4f/h before", c.Reason, c.Nodes, c.ReplacementPrice, c.Price)
		}
		worst := 0.0
		for _, rc := range c.Replacements {
			w := 0.0
			for _, name := range rc.InstanceTypeOptions {
				for _, it := range in.InstanceTypes {
					if it.Name != name {
						continue
					}
					for _, o := range it.Offerings {
						if o.Available && o.Accepts(rc.Requirements) {
							w = math.Max(w, o.Price)
						}
					}
				}
			}
			worst += w
		}
		if worst > c.ReplacementPrice+1e-9 {
			t.Errorf("%s command %v: replacements could launch at $%.4f/h, above the $%.4f/h it was judged at", c.Reason, c.Nodes, worst, c.ReplacementPrice)
		}
	}

	checkFit(t, in, r)
}

func ready(p *corev1.Pod) bool {
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

// checkFit rebuilds the cluster the plan leaves — every node not in a command, with its pods —
// and asks scheduling/check whether all the moved pods, placed as the commands say, fit it plus
// the replacements at once.
func checkFit(t tb, in disruption.Input, r disruption.Result) {
	t.Helper()
	gone := map[string]bool{}
	for _, c := range r.Commands {
		for _, n := range c.Nodes {
			gone[n] = true
		}
	}
	podByKey := map[string]*corev1.Pod{}
	for _, n := range in.Nodes {
		for _, p := range n.Pods {
			podByKey[nodeplan.PodKey(p)] = p
		}
	}
	sin := scheduling.Input{NodePools: in.NodePools, InstanceTypes: in.InstanceTypes, PoolInstanceTypes: in.PoolInstanceTypes,
		DaemonSets: in.DaemonSets, Namespaces: in.Namespaces, VolumeZones: in.VolumeZones}
	for _, n := range in.Nodes {
		if !gone[n.Node.Name] {
			sin.Nodes = append(sin.Nodes, scheduling.Node{Node: n.Node, Pods: n.Pods, AttachLimit: n.AttachLimit, VolumeCount: n.VolumeCount})
		}
	}
	var res scheduling.Result
	moves := map[string][]string{}
	for _, c := range r.Commands {
		for _, m := range c.Moves {
			moves[m.Name] = append(moves[m.Name], m.Pods...)
		}
		for _, rc := range c.Replacements {
			res.NodeClaims = append(res.NodeClaims, rc)
			res.Cost += rc.Offering.Price
		}
		placed := map[string]bool{}
		for _, m := range c.Moves {
			for _, k := range m.Pods {
				placed[k] = true
			}
		}
		for _, rc := range c.Replacements {
			for _, k := range rc.Pods {
				placed[k] = true
			}
		}
		unplaced := map[string]bool{}
		for _, k := range c.Unplaced {
			unplaced[k] = true
		}
		for _, k := range c.Pods {
			switch {
			case placed[k]:
				q := *podByKey[k]
				q.Spec.NodeName = ""
				sin.Pods = append(sin.Pods, &q)
			case !unplaced[k]:
				t.Errorf("command %v evicts pod %s but neither places it nor lists it as unplaced", c.Nodes, k)
			case !c.Forceful():
				t.Errorf("graceful command %v leaves pod %s unplaced", c.Nodes, k)
			}
		}
	}
	for _, name := range slices.Sorted(mapKeys(moves)) {
		ps := slices.Clone(moves[name])
		slices.Sort(ps)
		res.Existing = append(res.Existing, scheduling.Placement{Name: name, Pods: ps})
	}
	weight := map[string]int32{}
	for _, np := range in.NodePools {
		weight[np.Name] = np.Weight
	}
	slices.SortStableFunc(res.NodeClaims, func(a, b scheduling.NewNodeClaim) int {
		return cmp.Compare(weight[b.NodePool], weight[a.NodePool])
	})
	if err := check.Result(sin, res); err != nil {
		t.Errorf("moved pods do not fit the nodes that remain plus the replacements:\n%v", err)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
