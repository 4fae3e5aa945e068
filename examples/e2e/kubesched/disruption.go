package kubesched

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
)

// ClusterState reads the cluster back as the disruption planner's input: every Node with the
// pods bound to it, and each node's pool, type, zone, capacity type and price from its labels
// and the catalog. Nodes have been initialized for a day and have seen no pod event for an
// hour, so every node is a candidate.
func (cl *Cluster) ClusterState(ctx context.Context, pools []nodeplan.NodePool, catalog map[string]nodeplan.InstanceType, now time.Time) ([]disruption.Node, error) {
	nodes, err := cl.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubesched: list nodes: %w", err)
	}
	pods, err := cl.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubesched: list pods: %w", err)
	}
	byNode := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != "" {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	var out []disruption.Node
	for i := range nodes.Items {
		n := &nodes.Items[i]
		l := n.Labels
		ct := nodeplan.CapacityType(l[nodeplan.LabelCapacityType])
		price := 0.0
		for _, o := range catalog[l[nodeplan.LabelInstanceType]].Offerings {
			if o.Zone == l[nodeplan.LabelZone] && o.CapacityType == ct {
				price = o.Price
			}
		}
		out = append(out, disruption.Node{
			Node: n, Pods: byNode[n.Name], NodePool: l[nodeplan.LabelNodePool],
			InstanceType: l[nodeplan.LabelInstanceType], Zone: l[nodeplan.LabelZone], CapacityType: ct, Price: price,
			Created: now.Add(-24 * time.Hour), Initialized: now.Add(-24 * time.Hour), LastPodEvent: now.Add(-time.Hour),
		})
	}
	return out, nil
}

// Disrupted is what kube-scheduler made of a disruption plan's moves.
type Disrupted struct {
	// Moved maps each pod a command moves to a planned destination → that node.
	Moved map[string]string
	// Bound and Refused are kube-scheduler's answer for the moved pods.
	Bound, Refused map[string]string
	// Replacements counts the replacement nodes registered; DaemonRefused are their DaemonSet
	// pods that did not bind.
	Replacements  int
	DaemonRefused map[string]string
}

// ApplyDisruption carries out a disruption plan's commands as a controller would: registers
// every replacement (as modelled, with its DaemonSet pods bound), taints every candidate
// karpenter.sh/disrupted:NoSchedule, evicts the candidates' pods (DaemonSet pods stay) and
// submits each moved pod again — as its ReplicaSet would recreate it — restricted to the
// destination the plan gives it; then reports. Candidates are deleted once the moved pods are
// bound. pods are the cluster's pods as created (before binding), by key.
func (cl *Cluster) ApplyDisruption(ctx context.Context, plan disruption.Result, pods map[string]*corev1.Pod, in disruption.Input) (Disrupted, error) {
	d := Disrupted{Moved: map[string]string{}}
	catalog := Catalog(in.InstanceTypes)
	var daemons []*corev1.Pod
	for ci, c := range plan.Commands {
		for ri, rc := range c.Replacements {
			it, ok := catalog[rc.InstanceType]
			if !ok {
				return d, fmt.Errorf("kubesched: replacement %d of command %d: instance type %q is not in the catalog", ri, ci, rc.InstanceType)
			}
			n := NewNode(fmt.Sprintf("replacement-%d-%d", ci, ri), rc.NodeClaim, it, rc.Offering)
			if err := cl.AddNodes(ctx, n); err != nil {
				return d, err
			}
			d.Replacements++
			for _, p := range DaemonPods(n, in.DaemonSets) {
				p = schedulingtest.APIServerShaped(p)
				daemons = append(daemons, p)
				if err := cl.AddPods(ctx, p); err != nil {
					return d, err
				}
			}
			for _, k := range rc.Pods {
				d.Moved[k] = n.Name
			}
		}
		for _, m := range c.Moves {
			for _, k := range m.Pods {
				d.Moved[k] = m.Name
			}
		}
	}
	dout, err := cl.Wait(ctx, daemons, 2*time.Second)
	if err != nil {
		return d, err
	}
	d.DaemonRefused = dout.Unbound
	var candidates []string
	for _, c := range plan.Commands {
		candidates = append(candidates, c.Nodes...)
	}
	for _, name := range candidates {
		n, err := cl.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return d, fmt.Errorf("kubesched: candidate %s: %w", name, err)
		}
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: nodeplan.TaintDisrupted, Effect: corev1.TaintEffectNoSchedule})
		if _, err := cl.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			return d, fmt.Errorf("kubesched: taint candidate %s: %w", name, err)
		}
	}
	var evicted []string
	for _, c := range plan.Commands {
		evicted = append(evicted, c.Pods...)
	}
	if err := cl.Evict(ctx, evicted...); err != nil {
		return d, err
	}
	var again []*corev1.Pod
	for _, k := range evicted {
		p, ok := pods[k]
		if !ok {
			return d, fmt.Errorf("kubesched: evicted pod %s is not among the cluster's pods", k)
		}
		dest, ok := d.Moved[k]
		if !ok {
			continue // unplaced by a forceful command: pending for the provisioner
		}
		p = submitted(p, dest, true)
		p.UID += "-moved" // a new pod, as its ReplicaSet would create
		again = append(again, p)
	}
	out, err := cl.Submit(ctx, again)
	if err != nil {
		return d, err
	}
	d.Bound, d.Refused = out.Bound, out.Unbound
	for _, name := range candidates {
		if err := cl.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return d, fmt.Errorf("kubesched: delete candidate %s: %w", name, err)
		}
	}
	return d, nil
}

// ScaleDown deletes every pod of keys for which drop says so, as a deployment scaled down
// would; it returns the keys deleted.
func (cl *Cluster) ScaleDown(ctx context.Context, keys []string, drop func(string) bool) ([]string, error) {
	var gone []string
	for _, k := range slices.Sorted(slices.Values(keys)) {
		if drop(k) {
			gone = append(gone, k)
		}
	}
	return gone, cl.Evict(ctx, gone...)
}

// disruptionInput is the planner's input for the cluster as it is now.
func disruptionInput(nodes []disruption.Node, in scheduling.Input, now time.Time) disruption.Input {
	pools := slices.Clone(in.NodePools)
	for i := range pools {
		// Let the planner act on up to half of a pool's nodes at once, so a pass has moves.
		pools[i].Disruption.Budgets = []nodeplan.Budget{{Nodes: nodeplan.NodeCount{Value: 50, Percent: true}}}
	}
	return disruption.Input{
		Nodes: nodes, NodePools: pools, InstanceTypes: in.InstanceTypes, PoolInstanceTypes: in.PoolInstanceTypes,
		DaemonSets: in.DaemonSets, Namespaces: in.Namespaces, Now: now,
	}
}
