package kubesched

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
)

// Report is what kube-scheduler made of one plan.
type Report struct {
	Input  scheduling.Input // with pods as the API server returns them
	Result scheduling.Result
	Nodes  []PlannedNode
	// Planned maps each pod the plan places → its node.
	Planned map[string]string
	// Bound maps pod → node for the planned pods kube-scheduler bound.
	Bound map[string]string
	// Refused maps each planned pod kube-scheduler did not bind → its FailedScheduling message.
	Refused map[string]string
	// Misplaced maps a pod bound elsewhere than planned → the node it got (only when unpinned).
	Misplaced map[string]string
	// DaemonPods counts the DaemonSet pods created for the planned nodes; DaemonRefused maps
	// those that did not bind → why.
	DaemonPods    int
	DaemonRefused map[string]string
}

// Options tune Run.
type Options struct {
	// Unpinned lets kube-scheduler choose any node for each pod instead of its planned node.
	Unpinned bool
}

// Run shapes in's pods as the API server returns them (schedulingtest.APIServerShapedPods), solves, registers the planned nodes in
// a fresh cluster with a real kube-scheduler, lets the DaemonSet pods bind first (as when nodes
// join), submits every pod the plan places restricted to its planned node, and reports.
func Run(ctx context.Context, in scheduling.Input, opts Options) (Report, error) {
	rep, err := Plan(ctx, in)
	if err != nil {
		return rep, err
	}
	cl, err := StartCluster(ctx)
	if err != nil {
		return rep, err
	}
	defer cl.Stop()
	return rep, cl.Provision(ctx, &rep, opts)
}

// Plan shapes in's pods as the API server returns them, solves, and turns the plan into the
// Nodes it would register: a Report waiting for Provision.
func Plan(ctx context.Context, in scheduling.Input) (Report, error) {
	in.Pods = schedulingtest.APIServerShapedPods(in.Pods)
	res, err := scheduling.Solve(ctx, in)
	if err != nil {
		return Report{}, fmt.Errorf("kubesched: solve: %w", err)
	}
	nodes, err := NodesFromPlan(res, Catalog(in.InstanceTypes), "node")
	if err != nil {
		return Report{}, err
	}
	rep := Report{Input: in, Result: res, Nodes: nodes, Planned: map[string]string{}, Misplaced: map[string]string{}}
	for _, n := range nodes {
		for _, k := range n.Pods {
			rep.Planned[k] = n.Node.Name
		}
	}
	return rep, nil
}

// Provision registers rep's planned nodes in the cluster, binds their DaemonSet pods, submits
// the planned pods and records the outcome in rep.
func (cl *Cluster) Provision(ctx context.Context, rep *Report, opts Options) error {
	in, nodes := rep.Input, rep.Nodes
	if err := cl.AddNamespaces(ctx, in.Namespaces...); err != nil {
		return err
	}
	var daemons []*corev1.Pod
	for _, n := range nodes {
		if err := cl.AddNodes(ctx, n.Node); err != nil {
			return err
		}
		for _, p := range DaemonPods(n.Node, in.DaemonSets) {
			p = schedulingtest.APIServerShaped(p)
			daemons = append(daemons, p)
			if err := cl.AddPods(ctx, p); err != nil {
				return err
			}
		}
	}
	dout, err := cl.Wait(ctx, daemons, 2*time.Second)
	if err != nil {
		return err
	}
	rep.DaemonPods, rep.DaemonRefused = len(daemons), dout.Unbound
	var todo []*corev1.Pod
	for _, p := range in.Pods {
		if node, ok := rep.Planned[nodeplan.PodKey(p)]; ok {
			todo = append(todo, submitted(p, node, !opts.Unpinned))
		}
	}
	out, err := cl.Submit(ctx, todo)
	if err != nil {
		return err
	}
	rep.Bound, rep.Refused = out.Bound, out.Unbound
	for k, node := range out.Bound {
		if node != rep.Planned[k] {
			rep.Misplaced[k] = node
		}
	}
	return nil
}

// Submit creates pods, waits until each is bound or the scheduler has stopped binding, then
// submits the pods left pending afresh once, so that a refusal is the final state's (every other
// pod in place) and not an artefact of the order the scheduler took them in, and waits again.
func (c *Cluster) Submit(ctx context.Context, pods []*corev1.Pod) (Outcome, error) {
	if err := c.AddPods(ctx, pods...); err != nil {
		return Outcome{}, err
	}
	out, err := c.Wait(ctx, pods, 2*time.Second)
	if err != nil || len(out.Unbound) == 0 {
		return out, err
	}
	if err := c.Evict(ctx, slices.Sorted(maps.Keys(out.Unbound))...); err != nil {
		return out, err
	}
	var again []*corev1.Pod
	for _, p := range pods {
		if _, ok := out.Unbound[nodeplan.PodKey(p)]; ok {
			p = p.DeepCopy()
			p.UID += "-again"
			again = append(again, p)
		}
	}
	c.forget(again)
	if err := c.AddPods(ctx, again...); err != nil {
		return out, err
	}
	retried, err := c.Wait(ctx, again, 2*time.Second)
	if err != nil {
		return out, err
	}
	maps.Copy(out.Bound, retried.Bound)
	out.Unbound = retried.Unbound
	return out, nil
}

// submitted is the pod as created: restricted to its planned node when pin is set.
func submitted(p *corev1.Pod, node string, pin bool) *corev1.Pod {
	p = p.DeepCopy()
	p.ResourceVersion = ""
	if pin {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[AnnotationPlannedNode] = node
	}
	return p
}

// DescribeNode is one line about a planned node: type, zone, capacity type, pool, allocatable,
// taints.
func DescribeNode(nodes []PlannedNode, name string) string {
	for _, n := range nodes {
		if n.Node.Name != name {
			continue
		}
		l := n.Node.Labels
		return fmt.Sprintf("%s %s %s pool %s, allocatable cpu %s memory %s pods %s, taints %v",
			l[nodeplan.LabelInstanceType], l[nodeplan.LabelZone], l[nodeplan.LabelCapacityType], l[nodeplan.LabelNodePool],
			n.Node.Status.Allocatable.Cpu(), n.Node.Status.Allocatable.Memory(), n.Node.Status.Allocatable.Pods(), n.Node.Spec.Taints)
	}
	return "unknown node"
}

// DescribePlan lists the plan's nodes and their pods, one line each.
func DescribePlan(res scheduling.Result) string {
	var b strings.Builder
	for i, c := range res.NodeClaims {
		fmt.Fprintf(&b, "\n  node-%d %s %s %s: %s", i, c.InstanceType, c.Offering.Zone, c.Offering.CapacityType, strings.Join(c.Pods, " "))
	}
	return b.String()
}
