package schedulingtest

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// The model both baselines share: pods as request vectors, each pinned to one pool; every way a
// pool can launch a node (type × available offering) with its room net of DaemonSet pods; and
// existing nodes as free bins.

type vec []int64

func (a vec) plus(b vec) vec {
	out := slices.Clone(a)
	for i := range b {
		out[i] += b[i]
	}
	return out
}

func (a vec) minus(b vec) vec {
	out := slices.Clone(a)
	for i := range b {
		out[i] -= b[i]
	}
	return out
}

// fits reports whether a fits into room. As in kube-scheduler, a resource a does not request is
// not checked, so an overcommitted resource blocks only pods that ask for it.
func (a vec) fits(room vec) bool {
	for i := range a {
		if a[i] > 0 && a[i] > room[i] {
			return false
		}
	}
	return true
}

type model struct {
	names []corev1.ResourceName
	pods  []mpod
	pools []mpool
	bins  []mbin
}

type mpod struct {
	key string
	pod *corev1.Pod
	req vec
	// pool is the index of the highest-weight pool that can take the pod on a node of its own,
	// or -1.
	pool int
	// ok[v] reports whether the pod matches and tolerates variant v of its pool.
	ok []bool
}

type mpool struct {
	np       *nodeplan.NodePool
	variants []mvariant
}

type mvariant struct {
	typ    string
	off    nodeplan.Offering
	labels map[string]string
	room   vec // allocatable less the DaemonSet pods that would run there
}

type mbin struct {
	name   string
	labels map[string]string
	taints []corev1.Taint
	room   vec // allocatable less bound pods and DaemonSet pods not yet there
	usable bool
}

func (m *model) vec(rl corev1.ResourceList) vec {
	out := make(vec, len(m.names))
	for i, n := range m.names {
		if q, ok := rl[n]; ok {
			out[i] = q.MilliValue()
		}
	}
	return out
}

func catalog(in *scheduling.Input, pool string) []nodeplan.InstanceType {
	if its, ok := in.PoolInstanceTypes[pool]; ok {
		return its
	}
	return in.InstanceTypes
}

// pending returns the pods the solver places: those without spec.nodeName, by key.
func pending(in *scheduling.Input) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range in.Pods {
		if p != nil && p.Spec.NodeName == "" {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return cmp.Compare(nodeplan.PodKey(a), nodeplan.PodKey(b)) })
	return out
}

type dsPod struct {
	ns, name string
	pod      *corev1.Pod
	req      corev1.ResourceList
}

func newModel(in *scheduling.Input) *model {
	m := &model{}
	pods := pending(in)
	daemons := m.collectNames(in, pods)
	m.buildPools(in, daemons)
	m.assignPods(pods)
	m.buildBins(in, daemons)
	return m
}

// collectNames sets the resources the model counts: every one a pending pod or a DaemonSet's
// pod asks for. It returns the DaemonSets' pods.
func (m *model) collectNames(in *scheduling.Input, pods []*corev1.Pod) []dsPod {
	names := map[corev1.ResourceName]bool{}
	collect := func(rl corev1.ResourceList) {
		for k := range rl {
			names[k] = true
		}
	}
	for _, p := range pods {
		collect(nodeplan.PodRequests(p))
	}
	var daemons []dsPod
	for _, ds := range in.DaemonSets {
		if ds == nil {
			continue
		}
		p := &corev1.Pod{Spec: *ds.Spec.Template.Spec.DeepCopy()}
		p.Spec.Tolerations = daemonTolerations(p.Spec.Tolerations)
		d := dsPod{ns: ds.Namespace, name: ds.Name, pod: p, req: nodeplan.PodRequests(p)}
		collect(d.req)
		daemons = append(daemons, d)
	}
	m.names = slices.Sorted(maps.Keys(names))
	return daemons
}

// daemonLoad is what the DaemonSets' pods take on a node with these labels and taints, but
// those with a pod among bound already.
func (m *model) daemonLoad(daemons []dsPod, nodeName string, lbls map[string]string, taints []corev1.Taint, bound []*corev1.Pod) vec {
	load := make(vec, len(m.names))
	for _, d := range daemons {
		if !matchNode(d.pod, nodeName, lbls) {
			continue
		}
		if _, bad := nodeplan.UntoleratedTaint(d.pod.Spec.Tolerations, taints); bad {
			continue
		}
		if slices.ContainsFunc(bound, func(p *corev1.Pod) bool { return ownedByDaemonSet(p, d.ns, d.name) }) {
			continue
		}
		load = load.plus(m.vec(d.req))
	}
	return load
}

// buildPools lists the pools, highest weight first, ties by name, each with a variant per
// available offering of each instance type its requirements accept — none for a pool that is
// being deleted or whose Ready condition is reported other than True.
func (m *model) buildPools(in *scheduling.Input, daemons []dsPod) {
	for i := range in.NodePools {
		m.pools = append(m.pools, mpool{np: &in.NodePools[i]})
	}
	slices.SortFunc(m.pools, func(a, b mpool) int {
		if c := cmp.Compare(b.np.Weight, a.np.Weight); c != 0 {
			return c
		}
		return cmp.Compare(a.np.Name, b.np.Name)
	})
	for pi := range m.pools {
		pl := &m.pools[pi]
		if pl.np.DeletionTimestamp != nil || (pl.np.Ready.Status != "" && pl.np.Ready.Status != "True") {
			continue // Karpenter launches nothing for a pool being deleted or not Ready
		}
		its := catalog(in, pl.np.Name)
		for ti := range its {
			it := &its[ti]
			for _, o := range it.Offerings {
				if !o.Available {
					continue
				}
				lbls := maps.Clone(pl.np.Template.Labels)
				if lbls == nil {
					lbls = map[string]string{}
				}
				maps.Copy(lbls, it.Labels)
				lbls[nodeplan.LabelInstanceType] = it.Name
				lbls[nodeplan.LabelZone] = o.Zone
				lbls[nodeplan.LabelCapacityType] = string(o.CapacityType)
				lbls[nodeplan.LabelNodePool] = pl.np.Name
				if !pl.np.Template.Requirements.Matches(lbls) {
					continue
				}
				addBetaLabels(lbls)
				room := m.vec(it.Allocatable()).minus(m.daemonLoad(daemons, "", lbls, pl.np.Template.Taints, nil))
				pl.variants = append(pl.variants, mvariant{typ: it.Name, off: o, labels: lbls, room: room})
			}
		}
	}
}

// addBetaLabels gives a launched node's labels the deprecated beta twins the kubelet (arch, os)
// and the cloud node controller (instance type, zone, region) still set, with the stable
// label's value.
func addBetaLabels(lbls map[string]string) {
	twins := [][2]string{
		{nodeplan.LabelArch, "beta.kubernetes.io/arch"}, {nodeplan.LabelOS, "beta.kubernetes.io/os"},
		{nodeplan.LabelInstanceType, "beta.kubernetes.io/instance-type"},
		{nodeplan.LabelZone, "failure-domain.beta.kubernetes.io/zone"},
		{nodeplan.LabelRegion, "failure-domain.beta.kubernetes.io/region"},
	}
	for _, tw := range twins {
		if v, ok := lbls[tw[0]]; ok {
			if _, set := lbls[tw[1]]; !set {
				lbls[tw[1]] = v
			}
		}
	}
}

// assignPods gives each pending pod the first pool (in weight order) that tolerates it and has a
// variant it may go on and fits, and which variants it may go on there.
func (m *model) assignPods(pods []*corev1.Pod) {
	for _, p := range pods {
		mp := mpod{key: nodeplan.PodKey(p), pod: p, req: m.vec(nodeplan.PodRequests(p)), pool: -1}
		for pi := range m.pools {
			pl := &m.pools[pi]
			if _, bad := nodeplan.UntoleratedTaint(p.Spec.Tolerations, pl.np.Template.Taints); bad {
				continue
			}
			ok := make([]bool, len(pl.variants))
			any := false
			for vi, v := range pl.variants {
				ok[vi] = matchNode(p, "", v.labels)
				any = any || (ok[vi] && mp.req.fits(v.room))
			}
			if any {
				mp.pool, mp.ok = pi, ok
				break
			}
		}
		m.pods = append(m.pods, mp)
	}
}

// buildBins lists the existing nodes, by name, each with the room its bound pods (terminal ones
// aside) and DaemonSets leave.
func (m *model) buildBins(in *scheduling.Input, daemons []dsPod) {
	for i := range in.Nodes {
		n := in.Nodes[i]
		if n.Node == nil {
			continue
		}
		b := mbin{name: n.Node.Name, labels: n.Node.Labels, taints: holdingTaints(n.Node, in.NodePools), usable: n.Node.DeletionTimestamp == nil}
		if n.Node.Spec.Unschedulable {
			b.taints = append(slices.Clone(b.taints), corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
		}
		var bound []*corev1.Pod
		used := make(vec, len(m.names))
		for _, p := range n.Pods {
			if p == nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			bound = append(bound, p)
			used = used.plus(m.vec(nodeplan.PodRequests(p)))
		}
		b.room = m.vec(n.Node.Status.Allocatable).minus(used).minus(m.daemonLoad(daemons, b.name, b.labels, b.taints, bound))
		m.bins = append(m.bins, b)
	}
	slices.SortFunc(m.bins, func(a, b mbin) int { return cmp.Compare(a.name, b.name) })
}

// comingUpTaints are the taints, by key and effect, that a node launched for a NodePool wears
// until it is initialized and then loses by itself (Karpenter's known ephemeral taints).
var comingUpTaints = map[corev1.Taint]bool{
	{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}:                   true,
	{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoExecute}:                    true,
	{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoSchedule}:                 true,
	{Key: "node.cloudprovider.kubernetes.io/uninitialized", Effect: corev1.TaintEffectNoSchedule}: true,
	{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}:                       true,
}

// holdingTaints are the taints that keep pods off an existing node: all of them, except on a
// node of a NodePool that is not karpenter.sh/initialized yet, where the taints it comes up
// with (comingUpTaints, readiness.k8s.io/ gates, its pool's startup taints) are about to go.
func holdingTaints(n *corev1.Node, pools []nodeplan.NodePool) []corev1.Taint {
	pool := n.Labels[nodeplan.LabelNodePool]
	if pool == "" || n.Labels[nodeplan.LabelInitialized] == "true" {
		return n.Spec.Taints
	}
	goes := map[corev1.Taint]bool{}
	for _, np := range pools {
		if np.Name == pool {
			for _, t := range np.Template.StartupTaints {
				goes[corev1.Taint{Key: t.Key, Effect: t.Effect}] = true
			}
		}
	}
	var out []corev1.Taint
	for _, t := range n.Spec.Taints {
		k := corev1.Taint{Key: t.Key, Effect: t.Effect}
		if comingUpTaints[k] || goes[k] || strings.HasPrefix(t.Key, "readiness.k8s.io/") {
			continue
		}
		out = append(out, t)
	}
	return out
}

// admits reports whether an existing node may take the pod at all, resources aside.
func (b *mbin) admits(p *mpod) bool {
	if !b.usable {
		return false
	}
	if _, bad := nodeplan.UntoleratedTaint(p.pod.Spec.Tolerations, b.taints); bad {
		return false
	}
	return matchNode(p.pod, b.name, b.labels)
}
