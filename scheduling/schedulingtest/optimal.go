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
//     pool's requirements allow, priced at that offering, when the types that hold its pods
//     offer as many values of each minValues key as the pool asks; it holds its pods'
//     requests plus the DaemonSet pods its labels and taints admit (within allocatable, every
//     resource);
//   - an existing node takes pods it admits into allocatable less its running pods and the
//     DaemonSet pods not yet running there; it costs nothing.
//
// ok is false, and nothing is computed, when in has more than [MaxOptimalPods] pending pods or a
// pool more than [MaxOptimalTypes] types, or anything the model leaves out: NodePool limits,
// in-flight NodeClaims, topology spread, pod affinity or anti-affinity (pending or running
// pods), host ports, volume zones, volumes on attach-limited nodes, and — unless
// Options.Preferences is PreferencesIgnore — preferred node affinity and PreferNoSchedule taints.
func Optimal(in scheduling.Input) (cost float64, unplaced []string, ok bool) {
	if !inScope(&in) {
		return 0, nil, false
	}
	m := newModel(&in)
	sums := m.subsetSums()
	newOK := m.newNodeMask()
	block := m.cheapestNodes(sums, newOK)
	for i := range m.pods {
		// A pod no node of its own can take (its types too few for minValues) is left out:
		// more pods on its node only narrow the types further.
		if math.IsInf(block[1<<i], 1) {
			newOK &^= 1 << i
		}
	}
	search := &binSearch{
		g: cheapestPartitions(block, newOK, len(m.pods)), newOK: newOK,
		fitsBin: m.binFits(sums), memo: make([]map[int]optValue, len(m.bins)+1),
	}
	for i := range search.memo {
		search.memo[i] = map[int]optValue{}
	}
	best := search.f(0, 1<<len(m.pods)-1)
	s := search.leftForNew()
	for i, p := range m.pods {
		if s&^newOK&(1<<i) != 0 {
			unplaced = append(unplaced, p.key)
		}
	}
	return best.cost, unplaced, true
}

// subsetSums returns, for every set s of pending pods (a bit per pod), their summed requests.
func (m *model) subsetSums() []vec {
	n := len(m.pods)
	sums := make([]vec, 1<<n)
	sums[0] = make(vec, len(m.names))
	for s := 1; s <= 1<<n-1; s++ {
		low := bits.TrailingZeros(uint(s))
		sums[s] = sums[s&(s-1)].plus(m.pods[low].req)
	}
	return sums
}

// newNodeMask returns the set of pods some pool can take on a new node.
func (m *model) newNodeMask() int {
	newOK := 0
	for i, p := range m.pods {
		if p.pool >= 0 {
			newOK |= 1 << i
		}
	}
	return newOK
}

// cheapestNodes returns, for every set s of pods, the price of the cheapest new node for
// exactly the pods in s (+Inf when none takes them all: pods of different pools, or no fit).
func (m *model) cheapestNodes(sums []vec, newOK int) []float64 {
	full := 1<<len(m.pods) - 1
	block := make([]float64, 1<<len(m.pods))
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
		price := math.Inf(1)
		var holding []mvariant
		for vi, v := range m.pools[pool].variants {
			if !sums[s].fits(v.room) {
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
				price = min(price, v.off.Price)
				holding = append(holding, v)
			}
		}
		if meetsMinValues(m.pools[pool].np, holding) {
			block[s] = price
		}
	}
	return block
}

// meetsMinValues reports whether the variants that hold a node's pods offer, for every
// requirement of the pool with minValues, that many distinct values of its key among their
// instance types: Karpenter's launch flexibility, judged on the node's options.
func meetsMinValues(np *nodeplan.NodePool, holding []mvariant) bool {
	for _, r := range np.Template.Requirements.All() {
		if r.MinValues == 0 {
			continue
		}
		seen := map[string]bool{}
		for _, v := range holding {
			if x, ok := v.labels[r.Key]; ok {
				seen[x] = true
			}
		}
		if len(seen) < r.MinValues {
			return false
		}
	}
	return true
}

// cheapestPartitions returns, for every set s of n pods, the cheapest partition of s into new
// nodes, from block, each set's cheapest node.
func cheapestPartitions(block []float64, newOK, n int) []float64 {
	g := make([]float64, 1<<n)
	for s := 1; s <= 1<<n-1; s++ {
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
	return g
}

// binFits returns fitsBin[i][s]: existing node i can take the pods in s.
func (m *model) binFits(sums []vec) [][]bool {
	full := 1<<len(m.pods) - 1
	fitsBin := make([][]bool, len(m.bins))
	for i := range m.bins {
		b := &m.bins[i]
		admit := 0
		for j := range m.pods {
			if b.admits(&m.pods[j]) {
				admit |= 1 << j
			}
		}
		fitsBin[i] = make([]bool, 1<<len(m.pods))
		for s := 0; s <= full; s++ {
			fitsBin[i][s] = s&^admit == 0 && sums[s].fits(b.room)
		}
	}
	return fitsBin
}

// optValue is a plan's worth: fewer pods left out first, then cost.
type optValue struct {
	unplaced int
	cost     float64
}

func (a optValue) better(b optValue) bool {
	return a.unplaced < b.unplaced || (a.unplaced == b.unplaced && a.cost < b.cost-1e-12)
}

// binSearch chooses which pods go on each existing node in turn: f(i, s) is the best plan for the
// pods in s on nodes i, i+1, … and new nodes (g: the cheapest partitions into new nodes).
type binSearch struct {
	fitsBin [][]bool
	g       []float64
	newOK   int
	memo    []map[int]optValue
}

func (b *binSearch) f(i, s int) optValue {
	if i == len(b.fitsBin) {
		return optValue{bits.OnesCount(uint(s &^ b.newOK)), b.g[s&b.newOK]}
	}
	if v, ok := b.memo[i][s]; ok {
		return v
	}
	best := optValue{math.MaxInt, math.Inf(1)}
	for sub := s; ; sub = (sub - 1) & s {
		if b.fitsBin[i][sub] {
			if v := b.f(i+1, s^sub); v.better(best) {
				best = v
			}
		}
		if sub == 0 {
			break
		}
	}
	b.memo[i][s] = best
	return best
}

// leftForNew walks the best choices again and returns the pods no existing node takes.
func (b *binSearch) leftForNew() int {
	s := len(b.g) - 1 // every pod
	for i := range b.fitsBin {
		want := b.f(i, s)
		for sub := s; ; sub = (sub - 1) & s {
			if b.fitsBin[i][sub] {
				if v := b.f(i+1, s^sub); !want.better(v) && !v.better(want) {
					s ^= sub
					break
				}
			}
			if sub == 0 {
				break
			}
		}
	}
	return s
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
