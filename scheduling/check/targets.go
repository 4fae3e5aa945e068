package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// A target is somewhere a Result puts pods: an existing node, an in-flight claim or a new claim.
type target struct {
	kind targetKind
	// desc names the target in messages.
	desc string
	// name is the node's (or claim's) name, which matchFields on metadata.name compare against.
	name string
	pool string
	// labels are the labels the node is taken to have for topology: an existing node's own,
	// a new claim's at its chosen type and offering. A claim's hostname is unique to it.
	labels map[string]string
	taints []corev1.Taint
	// variants are every concrete node the target may turn out to be: one for an existing
	// node, one per instance-type option and acceptable offering for a claim. Resources, node
	// affinity, host ports and volume zones must hold on each.
	variants []variant
	// pods are the pending pods the Result puts here.
	pods []*corev1.Pod
	// bound are the running (non-terminal) pods of an existing node.
	bound []*corev1.Pod
	node  *scheduling.Node
}

type targetKind int

const (
	kindExisting targetKind = iota
	kindInFlight
	kindNew
)

type variant struct {
	// desc says which type and offering, for messages; empty for an existing node.
	desc   string
	labels map[string]string
	alloc  corev1.ResourceList
	// used is what is already taken: bound pods' requests, or an in-flight claim's Resources.
	used corev1.ResourceList
	// daemons are the DaemonSet pods that would run on the node and do not run there yet.
	daemons []*daemon
}

type daemon struct {
	ds    *appsv1.DaemonSet
	pod   *corev1.Pod
	req   corev1.ResourceList
	ports []hostPort
}

func (c *checker) catalog(pool string) []nodeplan.InstanceType {
	if its, ok := c.in.PoolInstanceTypes[pool]; ok {
		return its
	}
	return c.in.InstanceTypes
}

func (c *checker) instanceType(pool, name string) *nodeplan.InstanceType {
	its := c.catalog(pool)
	for i := range its {
		if its[i].Name == name {
			return &its[i]
		}
	}
	return nil
}

// daemonsFor returns the DaemonSet pods that would run on a node with these labels and taints,
// leaving out those already among its bound pods.
func (c *checker) daemonsFor(name string, lbls map[string]string, taints []corev1.Taint, bound []*corev1.Pod) []*daemon {
	var out []*daemon
	for _, d := range c.daemons {
		if !daemonRuns(d.pod, name, lbls, taints) {
			continue
		}
		if slices.ContainsFunc(bound, func(p *corev1.Pod) bool { return ownedBy(p, d.ds) }) {
			continue
		}
		out = append(out, d)
	}
	return out
}

// claimLabels are the labels of a node launched for a claim of pool as type it through
// offering o: the claim's labels, then what the type, the offering and the pool set.
func claimLabels(nc *nodeplan.NodeClaim, pool string, it *nodeplan.InstanceType, zone string, ct nodeplan.CapacityType, hostname string) map[string]string {
	out := maps.Clone(nc.Labels)
	if out == nil {
		out = map[string]string{}
	}
	if it != nil {
		maps.Copy(out, it.Labels)
		out[nodeplan.LabelInstanceType] = it.Name
	}
	if zone != "" {
		out[nodeplan.LabelZone] = zone
	}
	if ct != "" {
		out[nodeplan.LabelCapacityType] = string(ct)
	}
	out[nodeplan.LabelNodePool] = pool
	out[nodeplan.LabelHostname] = hostname
	// The kubelet (arch, os) and the cloud node controller (instance type, zone, region) still
	// put the deprecated beta labels on a node beside the stable ones, with the same values.
	for beta, stable := range map[string]string{
		"beta.kubernetes.io/arch": "kubernetes.io/arch", "beta.kubernetes.io/os": "kubernetes.io/os",
		"beta.kubernetes.io/instance-type":         "node.kubernetes.io/instance-type",
		"failure-domain.beta.kubernetes.io/zone":   "topology.kubernetes.io/zone",
		"failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
	} {
		if v, ok := out[stable]; ok {
			if _, set := out[beta]; !set {
				out[beta] = v
			}
		}
	}
	return out
}

func unionTaints(a, b []corev1.Taint) []corev1.Taint {
	out := slices.Clone(a)
	for _, t := range b {
		if !slices.ContainsFunc(out, func(o corev1.Taint) bool { return o.MatchTaint(&t) && o.Value == t.Value }) {
			out = append(out, t)
		}
	}
	return out
}

func (c *checker) poolTaints(pool string) []corev1.Taint {
	if np := c.pools[pool]; np != nil {
		return np.Template.Taints
	}
	return nil
}

// lastingTaints are the taints of an existing node a pod planned there must tolerate. A node
// launched for a NodePool (it has the karpenter.sh/nodepool label) that is not yet
// karpenter.sh/initialized=true still carries what it came up with and will shed: the
// kubelet's and node controller's not-ready (NoSchedule, NoExecute) and unreachable
// (NoSchedule) taints, the external cloud provider's uninitialized one (NoSchedule),
// karpenter.sh/unregistered (NoExecute), readiness.k8s.io/ gates, and its pool's startup
// taints (by key and effect) — Karpenter plans pods onto it regardless. On any other node
// every taint holds: kube-scheduler will not bind past it.
func (c *checker) lastingTaints(n *corev1.Node) []corev1.Taint {
	pool, launched := n.Labels[nodeplan.LabelNodePool]
	if !launched || pool == "" || n.Labels[nodeplan.LabelInitialized] == "true" {
		return n.Spec.Taints
	}
	var startup []corev1.Taint
	if np := c.pools[pool]; np != nil {
		startup = np.Template.StartupTaints
	}
	shed := func(t corev1.Taint) bool {
		for _, s := range startup {
			if s.Key == t.Key && s.Effect == t.Effect {
				return true
			}
		}
		if strings.HasPrefix(t.Key, "readiness.k8s.io/") {
			return true
		}
		switch {
		case t.Key == "node.kubernetes.io/not-ready":
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		case t.Key == "node.kubernetes.io/unreachable", t.Key == "node.cloudprovider.kubernetes.io/uninitialized":
			return t.Effect == corev1.TaintEffectNoSchedule
		case t.Key == "karpenter.sh/unregistered":
			return t.Effect == corev1.TaintEffectNoExecute
		}
		return false
	}
	var out []corev1.Taint
	for _, t := range n.Spec.Taints {
		if !shed(t) {
			out = append(out, t)
		}
	}
	return out
}

func (c *checker) existingTarget(n *scheduling.Node) *target {
	t := &target{kind: kindExisting, desc: fmt.Sprintf("node %q", n.Node.Name), name: n.Node.Name,
		labels: n.Node.Labels, taints: c.lastingTaints(n.Node), node: n}
	// A cordoned node carries the unschedulable taint (the node controller adds it); only
	// pods that tolerate it may land there.
	unsched := corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	if n.Node.Spec.Unschedulable && !slices.ContainsFunc(t.taints, func(o corev1.Taint) bool { return o.MatchTaint(&unsched) }) {
		t.taints = append(slices.Clone(t.taints), unsched)
	}
	if t.labels == nil {
		t.labels = map[string]string{}
	}
	used := corev1.ResourceList{}
	for _, p := range n.Pods {
		if p == nil || terminal(p) {
			continue
		}
		t.bound = append(t.bound, p)
		used = nodeplan.AddResources(used, podRequests(p))
	}
	t.variants = []variant{{labels: t.labels, alloc: n.Node.Status.Allocatable, used: used,
		daemons: c.daemonsFor(t.name, t.labels, t.taints, t.bound)}}
	return t
}

func (c *checker) inFlightTarget(i int, nc *nodeplan.NodeClaim) *target {
	t := &target{kind: kindInFlight, desc: fmt.Sprintf("in-flight claim %q", nc.Name), name: nc.Name, pool: nc.NodePool,
		taints: unionTaints(c.poolTaints(nc.NodePool), nc.Taints)}
	host := fmt.Sprintf("in-flight-claim-%d-%s", i, nc.Name)
	if nc.Status.NodeName != "" {
		host = nc.Status.NodeName
	}
	add := func(it *nodeplan.InstanceType, zone string, ct nodeplan.CapacityType) {
		v := variant{labels: claimLabels(nc, nc.NodePool, it, zone, ct, host), alloc: nc.Status.Allocatable, used: nc.Resources}
		if it != nil {
			v.desc = fmt.Sprintf("as %s in %s %s", it.Name, zone, ct)
			if len(v.alloc) == 0 {
				v.alloc = it.Allocatable()
			}
		}
		t.variants = append(t.variants, v)
	}
	if nc.Status.InstanceType != "" {
		add(c.instanceType(nc.NodePool, nc.Status.InstanceType), nc.Status.Zone, nc.Status.CapacityType)
	} else {
		for _, name := range nc.InstanceTypeOptions {
			it := c.instanceType(nc.NodePool, name)
			if it == nil {
				continue
			}
			for _, o := range it.Offerings {
				if o.Available && o.Accepts(nc.Requirements) {
					add(it, o.Zone, o.CapacityType)
				}
			}
		}
	}
	if len(t.variants) > 0 {
		t.labels = t.variants[0].labels
	} else {
		t.labels = claimLabels(nc, nc.NodePool, nil, "", "", host)
	}
	return t
}

// newTarget builds the target of res.NodeClaims[i]. Its variants are the chosen type and
// offering, then every option in every available offering its requirements accept.
func (c *checker) newTarget(i int, nc *scheduling.NewNodeClaim) *target {
	t := &target{kind: kindNew, desc: fmt.Sprintf("new claim %d %q", i, nc.Name), name: nc.Name, pool: nc.NodePool,
		taints: unionTaints(c.poolTaints(nc.NodePool), nc.Taints)}
	host := fmt.Sprintf("new-claim-%d-%s", i, nc.Name)
	seen := map[string]bool{}
	add := func(it *nodeplan.InstanceType, o nodeplan.Offering) {
		k := it.Name + "/" + o.Zone + "/" + string(o.CapacityType)
		if seen[k] {
			return
		}
		seen[k] = true
		lbls := claimLabels(&nc.NodeClaim, nc.NodePool, it, o.Zone, o.CapacityType, host)
		t.variants = append(t.variants, variant{desc: fmt.Sprintf("as %s in %s %s", it.Name, o.Zone, o.CapacityType),
			labels: lbls, alloc: it.Allocatable(), daemons: c.daemonsFor(nc.Name, lbls, t.taints, nil)})
	}
	if it := c.instanceType(nc.NodePool, nc.InstanceType); it != nil {
		add(it, nc.Offering)
	}
	for _, name := range nc.InstanceTypeOptions {
		it := c.instanceType(nc.NodePool, name)
		if it == nil {
			continue
		}
		for _, o := range it.Offerings {
			if o.Available && o.Accepts(nc.Requirements) {
				add(it, o)
			}
		}
	}
	if len(t.variants) > 0 {
		t.labels = t.variants[0].labels
	} else {
		t.labels = claimLabels(&nc.NodeClaim, nc.NodePool, nil, nc.Offering.Zone, nc.Offering.CapacityType, host)
	}
	return t
}
