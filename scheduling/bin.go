package scheduling

import (
	"cmp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

// bin is room that already exists: a registered node, or an in-flight claim whose node has not
// registered yet. Pending pods fill bins before any new node is planned. A bin is part of the
// model: what the solve places on it, and the room left, are its binState in packState.bins.
type bin struct {
	name     string
	inflight bool
	reqs     nodeplan.Requirements
	labels   map[string]string
	taints   []corev1.Taint
	p        *problem
	free0    vec // free before this solve placed anything: where packState starts, what the lower bound counts
	ports    []nodeplan.HostPort
	pods     []*corev1.Pod // bound pods (existing nodes)
}

// placement is k pods of group g.
type placement struct {
	g int
	k int64
}

func (p *problem) buildBins(in *Input) error {
	poolByName := map[string]*pool{}
	for _, pl := range p.pools {
		poolByName[pl.np.Name] = pl
	}
	for i := range in.Nodes {
		n := &in.Nodes[i]
		node := n.Node
		pl := poolByName[node.Labels[nodeplan.LabelNodePool]]
		if pl != nil {
			pl.used0.add(p.dims.vec(node.Status.Capacity))
			pl.nodes0++
		}
		if node.Spec.Unschedulable || nodeplan.NodeDeleting(node) || n.NoNewPods {
			continue
		}
		p.bins = append(p.bins, p.nodeBin(n, pl))
	}
	for i := range in.NodeClaims {
		c := &in.NodeClaims[i]
		pl := poolByName[c.NodePool]
		capacity, alloc := p.claimSize(c, pl)
		if pl != nil {
			pl.used0.add(capacity)
			pl.nodes0++
		}
		if c.DeletionTimestamp != nil {
			continue // counts for its pool's limits until it is gone, takes no pod
		}
		p.bins = append(p.bins, p.claimBin(in, c, pl, alloc))
	}
	// Best fit: the fullest room first, so big holes stay for big pods.
	slices.SortStableFunc(p.bins, func(a, b *bin) int {
		return cmp.Or(cmp.Compare(a.free0[dimCPU], b.free0[dimCPU]), cmp.Compare(a.free0[dimMemory], b.free0[dimMemory]), strings.Compare(a.name, b.name))
	})
	return nil
}

// nodeBin is the room pending pods may use on existing node n of pool pl (nil: unmanaged):
// its allocatable less its running pods and the DaemonSet pods still to come.
func (p *problem) nodeBin(n *Node, pl *pool) *bin {
	node := n.Node
	b := &bin{name: node.Name, free0: p.dims.vec(node.Status.Allocatable), pods: n.Pods, labels: node.Labels, p: p}
	labels := map[string]string{metadataName: node.Name}
	for k, v := range node.Labels {
		labels[k] = v
	}
	b.reqs = nodeplan.RequirementsFromLabels(labels)
	var startup []corev1.Taint
	if pl != nil {
		startup = pl.np.Template.StartupTaints
	}
	// Until the node is initialized, the taints it sheds as it comes up are not expected to be
	// tolerated; after, they are real.
	b.taints = nodeplan.NodeTaints(node, startup)
	running := map[string]bool{}
	for _, pod := range n.Pods {
		if nodeplan.PodTerminal(pod) {
			continue
		}
		b.free0.sub(p.dims.vec(nodeplan.PodRequests(pod)))
		b.ports = append(b.ports, nodeplan.PodHostPorts(pod)...)
		if ds := nodeplan.DaemonSetOf(pod); ds != "" {
			running[pod.Namespace+"/"+ds] = true
		}
	}
	// DaemonSet pods not running yet will come; their room is not free.
	for _, d := range p.daemons {
		if !running[d.name] && d.runsOnLabels(node.Labels, b.taints) {
			b.free0.sub(d.req)
			b.ports = append(b.ports, d.ports...)
		}
	}
	return b
}

// claimBin is the room pending pods may use on in-flight claim c of pool pl, whose node will
// offer alloc: its labels are those of the type it launched as, once known.
func (p *problem) claimBin(in *Input, c *nodeplan.NodeClaim, pl *pool, alloc vec) *bin {
	labels := map[string]string{nodeplan.LabelNodePool: c.NodePool}
	for k, v := range c.Labels {
		labels[k] = v
	}
	if c.Status.InstanceType != "" {
		// The type it launched as: a pod selecting on instance-type labels must see them.
		if it := findType(pl, in.InstanceTypes, c.Status.InstanceType); it != nil {
			for k, v := range it.Labels {
				labels[k] = v
			}
		}
		labels[nodeplan.LabelInstanceType] = c.Status.InstanceType
		labels[nodeplan.LabelZone] = c.Status.Zone
		labels[nodeplan.LabelCapacityType] = string(c.Status.CapacityType)
	}
	b := &bin{name: c.Name, inflight: true, reqs: c.Requirements.Intersect(nodeplan.RequirementsFromLabels(labels)), taints: c.Taints, labels: labels, p: p}
	b.free0 = alloc
	b.free0.sub(p.dims.vec(c.Resources))
	return b
}

// claimSize returns the capacity and allocatable of an in-flight claim: what it launched as, or
// before launch the smallest of its options (it will be at least that big).
func (p *problem) claimSize(c *nodeplan.NodeClaim, pl *pool) (capacity, alloc vec) {
	if len(c.Status.Allocatable) > 0 {
		capacity = p.dims.vec(c.Status.Capacity)
		if len(c.Status.Capacity) == 0 {
			capacity = p.dims.vec(c.Status.Allocatable)
		}
		return capacity, p.dims.vec(c.Status.Allocatable)
	}
	var types []*nodeplan.InstanceType
	if pl != nil {
		types = pl.types
	}
	for _, name := range c.InstanceTypeOptions {
		i, ok := slices.BinarySearchFunc(types, name, func(it *nodeplan.InstanceType, n string) int { return strings.Compare(it.Name, n) })
		if !ok {
			continue
		}
		cv, av := p.dims.vec(types[i].Capacity), p.dims.vec(types[i].Allocatable())
		if capacity == nil {
			capacity, alloc = cv, av
			continue
		}
		for d := range capacity {
			capacity[d] = min(capacity[d], cv[d])
			alloc[d] = min(alloc[d], av[d])
		}
	}
	if capacity == nil {
		// Unknown options: the claim's own resources are all we can count on.
		r := p.dims.vec(c.Resources)
		return r, r.clone()
	}
	return capacity, alloc
}

func findType(pl *pool, catalog []nodeplan.InstanceType, name string) *nodeplan.InstanceType {
	if pl != nil {
		for _, it := range pl.types {
			if it.Name == name {
				return it
			}
		}
	}
	for i := range catalog {
		if catalog[i].Name == name {
			return &catalog[i]
		}
	}
	return nil
}

// admits reports whether pods of group g may go on the bin, with placed already there, ignoring
// room.
func (b *bin) admits(g *group, placed []placement) bool {
	return g.room(placed, b.name) > 0 && b.mayHold(g)
}

// mayHold is admits without the per-node caps: whether the node could take the group at all,
// before this solve placed anything (what the lower bound asks).
func (b *bin) mayHold(g *group) bool {
	if g.blocked != nil || g.avoid[b.name] || (g.onlyOn != nil && !g.onlyOn[b.name]) {
		return false
	}
	if _, blocked := b.p.untolerated(g.tolerations, b.taints); blocked {
		return false
	}
	if _, clash := portsConflict(g.ports, b.ports); clash {
		return false
	}
	for _, alt := range g.alts {
		if b.reqs.Compatible(alt) == nil {
			return true
		}
	}
	return false
}
