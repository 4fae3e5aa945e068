package schedulingtest

import (
	"math"
	"math/bits"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// Limits of what [Optimal] solves exactly.
const (
	MaxOptimalPods  = 8
	MaxOptimalTypes = 6
)

// Optimal returns the cheapest plan for in, by exhaustive search: every partition of the
// pending pods into nodes, each node the cheapest type and offering that holds its pods, with
// existing nodes as free bins. It maximises the number of pods placed first, then minimises
// cost; unplaced lists the pods left out (one optimal choice of them, by key).
//
// It assumes what Karpenter does and nothing more:
//   - a pod uses only its highest-weight NodePool (ties by name) that can take it — that it
//     tolerates, whose requirements and labels its node affinity allows, and that has a type
//     with an available offering large enough for it and the DaemonSet pods that would run
//     there; pods of different pools never share a node;
//   - a new node of a pool is any type of the pool's catalog in any available offering the
//     pool's requirements allow, priced at that offering; it holds its pods' requests plus the
//     DaemonSet pods its labels and taints admit (within allocatable, every resource);
//   - an existing node takes pods it admits into allocatable less its running pods and the
//     DaemonSet pods not yet running there; it costs nothing.
//
// ok is false, and nothing is computed, when in has more than [MaxOptimalPods] pending pods or a
// pool more than [MaxOptimalTypes] types, or anything the model leaves out: NodePool limits or
// minValues, in-flight NodeClaims, topology spread, pod affinity or anti-affinity (pending or
// running pods), host ports, volume zones, volumes on attach-limited nodes, and — unless
// Options.Preferences is PreferencesIgnore — preferred node affinity and PreferNoSchedule taints.
func Optimal(in scheduling.Input) (cost float64, unplaced []string, ok bool) {
	if !inScope(&in) {
		return 0, nil, false
	}
	m := newModel(&in)
	n := len(m.pods)
	full := 1<<n - 1
	sums := make([]vec, 1<<n)
	sums[0] = make(vec, len(m.names))
	for s := 1; s <= full; s++ {
		low := bits.TrailingZeros(uint(s))
		sums[s] = sums[s&(s-1)].plus(m.pods[low].req)
	}

	// block[s]: the cheapest new node for exactly the pods in s.
	block := make([]float64, 1<<n)
	newOK := 0
	for i, p := range m.pods {
		if p.pool >= 0 {
			newOK |= 1 << i
		}
	}
	for s := 1; s <= full; s++ {
		block[s] = math.Inf(1)
		if s&^newOK != 0 {
			continue
		}
		pool := m.pods[bits.TrailingZeros(uint(s))].pool
		same := true
		for i := range m.pods {
			if s&(1<<i) != 0 && m.pods[i].pool != pool {
				same = false
			}
		}
		if !same {
			continue
		}
		for vi, v := range m.pools[pool].variants {
			if v.off.Price >= block[s] || !sums[s].fits(v.room) {
				continue
			}
			all := true
			for i := range m.pods {
				if s&(1<<i) != 0 && !m.pods[i].ok[vi] {
					all = false
					break
				}
			}
			if all {
				block[s] = v.off.Price
			}
		}
	}

	// g[s]: the cheapest partition of s into new nodes.
	g := make([]float64, 1<<n)
	for s := 1; s <= full; s++ {
		g[s] = math.Inf(1)
		if s&^newOK != 0 {
			continue
		}
		low := s & -s
		rest := s ^ low
		for sub := rest; ; sub = (sub - 1) & rest {
			b := sub | low
			if c := block[b] + g[s^b]; c < g[s] {
				g[s] = c
			}
			if sub == 0 {
				break
			}
		}
	}

	// fitsBin[i][s]: existing node i can take the pods in s.
	fitsBin := make([][]bool, len(m.bins))
	for i := range m.bins {
		b := &m.bins[i]
		admit := 0
		for j := range m.pods {
			if b.admits(&m.pods[j]) {
				admit |= 1 << j
			}
		}
		fitsBin[i] = make([]bool, 1<<n)
		for s := 0; s <= full; s++ {
			fitsBin[i][s] = s&^admit == 0 && sums[s].fits(b.room)
		}
	}

	type value struct {
		unplaced int
		cost     float64
	}
	better := func(a, b value) bool {
		return a.unplaced < b.unplaced || (a.unplaced == b.unplaced && a.cost < b.cost-1e-12)
	}
	memo := make([]map[int]value, len(m.bins)+1)
	for i := range memo {
		memo[i] = map[int]value{}
	}
	var f func(i, s int) value
	f = func(i, s int) value {
		if i == len(m.bins) {
			return value{bits.OnesCount(uint(s &^ newOK)), g[s&newOK]}
		}
		if v, ok := memo[i][s]; ok {
			return v
		}
		best := value{math.MaxInt, math.Inf(1)}
		for sub := s; ; sub = (sub - 1) & s {
			if fitsBin[i][sub] {
				if v := f(i+1, s^sub); better(v, best) {
					best = v
				}
			}
			if sub == 0 {
				break
			}
		}
		memo[i][s] = best
		return best
	}
	best := f(0, full)
	// Walk the choices again to name the pods left out.
	s := full
	for i := range m.bins {
		want := f(i, s)
		for sub := s; ; sub = (sub - 1) & s {
			if fitsBin[i][sub] {
				if v := f(i+1, s^sub); !better(want, v) && !better(v, want) {
					s ^= sub
					break
				}
			}
			if sub == 0 {
				break
			}
		}
	}
	for i, p := range m.pods {
		if s&^newOK&(1<<i) != 0 {
			unplaced = append(unplaced, p.key)
		}
	}
	return best.cost, unplaced, true
}

func inScope(in *scheduling.Input) bool {
	ignorePrefs := in.Options.Preferences == scheduling.PreferencesIgnore
	pods := pending(in)
	if len(pods) > MaxOptimalPods || len(in.NodeClaims) > 0 {
		return false
	}
	attachLimited := false
	for _, n := range in.Nodes {
		attachLimited = attachLimited || n.AttachLimit > 0
		if n.Node != nil && !ignorePrefs && hasPreferNoSchedule(n.Node.Spec.Taints) {
			return false
		}
		for _, p := range n.Pods {
			if p != nil && p.Spec.Affinity != nil && p.Spec.Affinity.PodAntiAffinity != nil &&
				len(p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
				return false
			}
		}
	}
	for _, np := range in.NodePools {
		if len(np.Limits) > 0 || len(catalog(in, np.Name)) > MaxOptimalTypes {
			return false
		}
		if !ignorePrefs && hasPreferNoSchedule(np.Template.Taints) {
			return false
		}
		for _, r := range np.Template.Requirements.All() {
			if r.MinValues > 0 {
				return false
			}
		}
	}
	for _, p := range pods {
		if len(p.Spec.TopologySpreadConstraints) > 0 || len(in.VolumeZones[nodeplan.PodKey(p)]) > 0 {
			return false
		}
		if a := p.Spec.Affinity; a != nil {
			if a.PodAffinity != nil || a.PodAntiAffinity != nil {
				return false
			}
			if !ignorePrefs && a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
				return false
			}
		}
		if usesPortsOrAttachments(p, attachLimited) {
			return false
		}
	}
	return true
}

// usesPortsOrAttachments reports whether p asks for a host port, or, where nodes have attach
// limits, for a volume that attaches: what neither oracle models.
func usesPortsOrAttachments(p *corev1.Pod, attachLimited bool) bool {
	for _, c := range append(slices.Clone(p.Spec.Containers), p.Spec.InitContainers...) {
		for _, port := range c.Ports {
			if port.HostPort > 0 {
				return true
			}
		}
	}
	if attachLimited {
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
				return true
			}
		}
	}
	return false
}

func hasPreferNoSchedule(taints []corev1.Taint) bool {
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			return true
		}
	}
	return false
}
