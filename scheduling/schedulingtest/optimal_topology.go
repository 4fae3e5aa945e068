package schedulingtest

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// Limits of what [OptimalTopology] solves exactly.
const (
	MaxTopologyPods  = 7
	MaxTopologyTypes = 4
	MaxTopologyNodes = 2
)

// TopologyRules settles what kube-scheduler's rules leave to the cluster around a plan. The zero
// value reads them as package check does.
type TopologyRules struct {
	// EmptyHostnameDomain assumes that some node eligible for a hostname spread holds none of
	// the pods the spread counts — a node outside the input, or one launched for other pods —
	// so the minimum over hostnames is 0 and no node may hold more than maxSkew of them. That is
	// Karpenter's reading, and Solve's. Without it the cluster is exactly the input's nodes and
	// the plan's new ones, and the minimum is taken over those, as package check does: four
	// pods with maxSkew 1 may then share one new node.
	EmptyHostnameDomain bool
}

// OptimalTopology returns the cheapest plan for in under topology constraints, by exhaustive
// search: every assignment of the pending pods to existing nodes, to new nodes (each any type
// and available offering of the pool) or to nothing. It maximises the number of pods placed
// first, then minimises cost; unplaced lists the pods left out (one optimal choice of them).
//
// A plan is accepted when its final state keeps the rules package check enforces, which are
// kube-scheduler's filters applied in some order of placing the pods one at a time:
//   - resources, node selectors and required node affinity, taints, DaemonSet overhead and
//     existing nodes as in [Optimal] (existing nodes are free, new nodes cost their offering);
//   - DoNotSchedule topology spread over topology.kubernetes.io/zone or kubernetes.io/hostname,
//     with maxSkew, minDomains, nodeAffinityPolicy and nodeTaintsPolicy: a pod's domains are
//     the values of the key on nodes eligible for it (existing nodes and the plan's new ones)
//     and, for zones, every zone the pool can launch an eligible node into; a domain counts
//     every pod its selector matches in the pod's namespace on an eligible node — running or
//     placed, carrying the constraint or not (kube-scheduler counts them all, and binds the
//     pods in an order the plan does not choose); every domain holding a carrier is within
//     maxSkew of the minimum, which is 0 when there are fewer domains than minDomains (and,
//     with [TopologyRules.EmptyHostnameDomain], always 0 over hostnames); and no set of placed
//     carriers may each be refused while the others are pending: a carrier in domain d is
//     refused while d's count exceeds by more than maxSkew the least count of the other
//     domains without the pods another constraint of theirs may refuse forever (the largest
//     such set, found by dropping pairs until none drops, then settled to the pairs refused
//     with every pod of the set pending at once, must be empty);
//   - required pod anti-affinity over zone or hostname, both ways: no placed pod shares a
//     domain with a pod (placed or running) that its terms select or whose terms select it;
//   - required pod affinity over zone or hostname: a carrier's domain holds a running pod the
//     term selects, or a placed one that does not carry the term; otherwise no pod anywhere
//     matches the term but its carriers — no running pod, no placed pod without the term,
//     since kube-scheduler may bind that one first — and every such carrier is in one domain,
//     where a carrier matches its own term (the group starts there).
//
// Terms' namespaces, namespaceSelectors (against Input.Namespaces) and label selectors are
// read as in Kubernetes. Input.VolumeZones restrict pods to zones.
//
// ok is false, and nothing is computed, when in is out of scope: more than [MaxTopologyPods]
// pending pods, [MaxTopologyTypes] types or [MaxTopologyNodes] existing nodes; other than one
// NodePool, or one being deleted or not Ready; NodePool limits or minValues; in-flight NodeClaims; host ports on pending pods;
// volumes with attach-limited nodes; spread (but a DoNotSchedule one over a key no node,
// instance type or NodePool has, whose pods are never placed) or affinity over any other key, with
// matchLabelKeys, mismatchLabelKeys or a nil label selector; more than one required affinity
// term on a pod; node selectors on the hostname or
// matchFields; and — unless Options.Preferences is PreferencesIgnore — any preference
// (ScheduleAnyway spread, preferred node or pod affinity, PreferNoSchedule taints).
func OptimalTopology(in scheduling.Input, rules TopologyRules) (cost float64, unplaced []string, ok bool) {
	res, ok := OptimalTopologyPlan(in, rules)
	if !ok {
		return 0, nil, false
	}
	for _, u := range res.Unschedulable {
		unplaced = append(unplaced, u.Pod)
	}
	return res.Cost, unplaced, true
}

// OptimalTopologyPlan is [OptimalTopology] returning the plan itself, as a Result package
// check can verify: one claim per new node, pinned to its type, zone and capacity type, with
// LowerBound equal to Cost. Unschedulable entries carry a rough reason code.
func OptimalTopologyPlan(in scheduling.Input, rules TopologyRules) (scheduling.Result, bool) {
	if !topologyInScope(&in) {
		return scheduling.Result{}, false
	}
	s := newTopoSearch(&in, rules)
	s.dfs(0, 0, 0)
	return s.plan(s.best.where, s.best.class), true
}

func topologyInScope(in *scheduling.Input) bool {
	ignorePrefs := in.Options.Preferences == scheduling.PreferencesIgnore
	pods := pending(in)
	if len(pods) > MaxTopologyPods || len(in.NodeClaims) > 0 || len(in.NodePools) != 1 || len(in.Nodes) > MaxTopologyNodes ||
		in.NodePools[0].Replicas != nil || in.NodePools[0].DeletionTimestamp != nil || (in.NodePools[0].Ready.Status != "" && in.NodePools[0].Ready.Status != "True") {
		return false
	}
	np := &in.NodePools[0]
	if len(np.Limits) > 0 || len(catalog(in, np.Name)) > MaxTopologyTypes {
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
	attachLimited := false
	for _, n := range in.Nodes {
		if n.Node == nil {
			continue
		}
		attachLimited = attachLimited || n.AttachLimit > 0
		if !ignorePrefs && hasPreferNoSchedule(n.Node.Spec.Taints) {
			return false
		}
		for _, p := range n.Pods {
			if p == nil {
				continue
			}
			if _, anti := requiredPodTerms(p); !termsInScope(anti) {
				return false
			}
		}
	}
	for _, p := range pods {
		if !podInScope(p, ignorePrefs, attachLimited, func(key string) bool { return keyless(in, key) }) {
			return false
		}
	}
	return true
}

// keyless reports whether no node of in, existing or launchable, can have the label key: no
// existing node, instance type or NodePool template has it and no NodePool requires it.
func keyless(in *scheduling.Input, key string) bool {
	for _, n := range in.Nodes {
		if n.Node == nil {
			continue
		}
		if _, ok := n.Node.Labels[key]; ok {
			return false
		}
	}
	for _, it := range in.InstanceTypes {
		if _, ok := it.Labels[key]; ok {
			return false
		}
	}
	for _, np := range in.NodePools {
		if _, ok := np.Template.Labels[key]; ok {
			return false
		}
		if _, ok := np.Template.Requirements.Get(key); ok {
			return false
		}
	}
	return true
}

// podInScope reports whether the search models p; keyless says whether no node can have a key.
func podInScope(p *corev1.Pod, ignorePrefs, attachLimited bool, keyless func(string) bool) bool {
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.DoNotSchedule {
			if ignorePrefs {
				continue
			}
			return false
		}
		// A DoNotSchedule spread over a key no node has is in scope: kube-scheduler's filter
		// refuses every node without the key, so the pod is never placed.
		if (!topologyKey(c.TopologyKey) && !keyless(c.TopologyKey)) || len(c.MatchLabelKeys) > 0 || c.LabelSelector == nil {
			return false
		}
		if _, err := metav1.LabelSelectorAsSelector(c.LabelSelector); err != nil {
			return false
		}
	}
	if _, ok := p.Spec.NodeSelector[nodeplan.LabelHostname]; ok {
		return false
	}
	if a := p.Spec.Affinity; a != nil {
		if na := a.NodeAffinity; na != nil {
			if !ignorePrefs && len(na.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
				return false
			}
			if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
				for _, t := range r.NodeSelectorTerms {
					if len(t.MatchFields) > 0 || slices.ContainsFunc(t.MatchExpressions, func(e corev1.NodeSelectorRequirement) bool {
						return e.Key == nodeplan.LabelHostname
					}) {
						return false
					}
				}
			}
		}
		if !ignorePrefs {
			if a.PodAffinity != nil && len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
				return false
			}
			if a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
				return false
			}
		}
	}
	aff, anti := requiredPodTerms(p)
	if len(aff) > 1 || !termsInScope(aff) || !termsInScope(anti) {
		return false
	}
	return !usesPortsOrAttachments(p, attachLimited)
}

func topologyKey(k string) bool { return k == nodeplan.LabelZone || k == nodeplan.LabelHostname }

func termsInScope(terms []corev1.PodAffinityTerm) bool {
	for _, t := range terms {
		if !topologyKey(t.TopologyKey) || len(t.MatchLabelKeys) > 0 || len(t.MismatchLabelKeys) > 0 || t.LabelSelector == nil {
			return false
		}
		if _, err := metav1.LabelSelectorAsSelector(t.LabelSelector); err != nil {
			return false
		}
		if t.NamespaceSelector != nil {
			if _, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector); err != nil {
				return false
			}
		}
	}
	return true
}

func requiredPodTerms(p *corev1.Pod) (aff, anti []corev1.PodAffinityTerm) {
	a := p.Spec.Affinity
	if a == nil {
		return nil, nil
	}
	if a.PodAffinity != nil {
		aff = a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if a.PodAntiAffinity != nil {
		anti = a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return aff, anti
}

// The two topology keys in scope, as indexes.
const (
	keyZone = iota
	keyHost
	numKeys
)

func keyIndex(k string) int {
	if k == nodeplan.LabelZone {
		return keyZone
	}
	return keyHost
}

// A tclass is the new nodes of one kind, as far as the constraints can tell: a zone (or none,
// when nothing depends on zones) and the pods whose node selectors admit them.
type tclass struct {
	zone  int  // zone id, or -1
	match uint // pods whose node selector and affinity match the node
	ok    uint // pods that may run there
	// cost[s] is the cheapest variant of the class that holds the pods in s, pick[s] which.
	cost []float64
	pick []int
}

// A tspread is one DoNotSchedule spread constraint of one pending pod.
type tspread struct {
	key, maxSkew, minDomains int
	countable                uint // pending pods counted: every one the selector matches in the namespace
	selfMatch                bool
	binElig                  []bool
	binCount                 []int // running pods counted, per bin
	classElig                []bool
	launch                   []int // zone ids the pool can launch an eligible node into
	// view tells constraints apart for noSpreadWait: equal for carriers that count the same
	// pods on the same nodes with the same maxSkew and minDomains.
	view string
}

// A taff is a required pod-affinity term and the pending pods that carry it.
type taff struct {
	key        int
	carriers   uint
	matches    uint
	anyRunning bool
	runningDom []bool // domain ids holding a running pod the term selects
}

// A resolved pod-affinity term.
type rterm struct {
	key        int
	namespaces map[string]bool // nil: every namespace
	sel        labels.Selector
	id         string
}

func (t rterm) matches(p *corev1.Pod) bool {
	return (t.namespaces == nil || t.namespaces[p.Namespace]) && t.sel.Matches(labels.Set(p.Labels))
}

func resolvePodTerm(owner *corev1.Pod, t corev1.PodAffinityTerm, nss []*corev1.Namespace) rterm {
	sel, _ := metav1.LabelSelectorAsSelector(t.LabelSelector) // in scope, so valid
	out := rterm{key: keyIndex(t.TopologyKey), sel: sel}
	ns := t.NamespaceSelector
	if ns == nil || len(ns.MatchLabels) > 0 || len(ns.MatchExpressions) > 0 {
		out.namespaces = map[string]bool{}
		for _, n := range t.Namespaces {
			out.namespaces[n] = true
		}
		if ns != nil {
			nsSel, _ := metav1.LabelSelectorAsSelector(ns)
			for _, n := range nss {
				if n != nil && nsSel.Matches(labels.Set(n.Labels)) {
					out.namespaces[n.Name] = true
				}
			}
		} else if len(t.Namespaces) == 0 {
			out.namespaces[owner.Namespace] = true
		}
	}
	all := "*"
	if out.namespaces != nil {
		all = strings.Join(slices.Sorted(maps.Keys(out.namespaces)), ",")
	}
	out.id = fmt.Sprintf("%s|%s|%s", all, sel.String(), t.TopologyKey)
	return out
}

type running struct {
	pod *corev1.Pod
	bin int
}

// topoSearch is the state of one exhaustive search. Targets are numbered bins first (existing
// nodes, by name), then new nodes in the order they are opened.
type topoSearch struct {
	in    *scheduling.Input
	rules TopologyRules
	m     *model
	pl    *mpool
	n, nb int
	pods  []*corev1.Pod
	sums  []vec // requests of each subset of pods

	classes  []tclass
	opening  [][]int // per pod: the classes it may open a node of, cheapest first
	binOK    []uint  // per bin: the pods it admits
	binFits  [][]bool
	binDom   [][numKeys]int // per bin: zone and host ids, -1 without the label
	nZones   int
	nHosts   int // host ids of bins; new node k has nHosts+k
	antiMask [numKeys][]uint
	forbid   [numKeys][][]bool // per pod: domain ids running pods' anti-affinity rules out
	spreads  [][]tspread
	// keyless are the pods with a DoNotSchedule spread over a key no node has: never placed.
	keyless uint
	affs    []taff

	order  []int
	same   []bool // same[pos]: order[pos] is interchangeable with order[pos-1]
	where  []int  // per pod: target, -1 unplaced
	set    []uint // per target
	class  []int  // per new node
	choice []int  // per position: the choice index taken (bins, new nodes, then unplaced)
	opened []bool // per position: the pod opened a new node

	counts  []int
	present []bool

	best struct {
		placed int
		cost   float64
		where  []int
		class  []int
	}
}

const (
	costEps         = 1e-12
	unplacedChoice  = math.MaxInt
	unplacedTarget  = -1
	undecidedTarget = -2
)

// newTopoSearch builds the search for in: the model, then in named steps the running pods,
// the domains, the pods' subsets, the bins and the classes of new nodes, the constraints, the
// order of the pods and the empty search state.
func newTopoSearch(in *scheduling.Input, rules TopologyRules) *topoSearch {
	m := newModel(in)
	s := &topoSearch{in: in, rules: rules, m: m, pl: &m.pools[0], n: len(m.pods), nb: len(m.bins)}
	for _, p := range m.pods {
		s.pods = append(s.pods, p.pod)
	}
	run := s.runningPods()
	zoneMatters := s.zoneMatters(run)
	zoneID := s.domains()
	s.subsetSums()
	s.binSets()
	s.newNodeClasses(zoneMatters, zoneID)
	s.openingOrder()
	s.anti(run)
	s.spread(run, zoneID)
	s.affinity(run)
	s.orderPods()
	s.startState()
	return s
}

// runningPods returns the pods running on the bins (not succeeded or failed).
func (s *topoSearch) runningPods() []running {
	nodeByName := map[string]*scheduling.Node{}
	for i := range s.in.Nodes {
		if s.in.Nodes[i].Node != nil {
			nodeByName[s.in.Nodes[i].Node.Name] = &s.in.Nodes[i]
		}
	}
	var run []running
	for b := range s.m.bins {
		for _, p := range nodeByName[s.m.bins[b].name].Pods {
			if p != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				run = append(run, running{p, b})
			}
		}
	}
	return run
}

// zoneMatters reports whether anything depends on zones: volume zones, a zone spread, or a
// pending pod's or running pod's affinity term over zones. If nothing does, new nodes in
// different zones are one class.
func (s *topoSearch) zoneMatters(run []running) bool {
	zoneMatters := len(s.in.VolumeZones) > 0
	for _, p := range s.pods {
		for _, c := range p.Spec.TopologySpreadConstraints {
			zoneMatters = zoneMatters || (c.WhenUnsatisfiable == corev1.DoNotSchedule && c.TopologyKey == nodeplan.LabelZone)
		}
		aff, anti := requiredPodTerms(p)
		for _, t := range append(slices.Clone(aff), anti...) {
			zoneMatters = zoneMatters || t.TopologyKey == nodeplan.LabelZone
		}
	}
	for _, r := range run {
		_, anti := requiredPodTerms(r.pod)
		for _, t := range anti {
			zoneMatters = zoneMatters || t.TopologyKey == nodeplan.LabelZone
		}
	}
	return zoneMatters
}

// domains numbers the zones and hostnames: the bins' (binDom), then the zones the pool's
// variants launch into. It returns the zone ids by name.
func (s *topoSearch) domains() map[string]int {
	zoneID, hostID := map[string]int{}, map[string]int{}
	id := func(ids map[string]int, v string) int {
		if i, ok := ids[v]; ok {
			return i
		}
		ids[v] = len(ids)
		return ids[v]
	}
	for b := range s.m.bins {
		d := [numKeys]int{-1, -1}
		if z, ok := s.m.bins[b].labels[nodeplan.LabelZone]; ok {
			d[keyZone] = id(zoneID, z)
		}
		if h, ok := s.m.bins[b].labels[nodeplan.LabelHostname]; ok {
			d[keyHost] = id(hostID, h)
		}
		s.binDom = append(s.binDom, d)
	}
	for _, v := range s.pl.variants {
		id(zoneID, v.off.Zone)
	}
	s.nZones, s.nHosts = len(zoneID), len(hostID)
	return zoneID
}

// full is the set of every pending pod.
func (s *topoSearch) full() uint { return uint(1)<<s.n - 1 }

// subsetSums sums the requests of every subset of the pending pods.
func (s *topoSearch) subsetSums() {
	s.sums = make([]vec, 1<<s.n)
	s.sums[0] = make(vec, len(s.m.names))
	for set := uint(1); set <= s.full(); set++ {
		low := bits.TrailingZeros(set)
		s.sums[set] = s.sums[set&(set-1)].plus(s.m.pods[low].req)
	}
}

// volumeOK reports whether pod i's volumes allow a node in zone (hasZone: the node has one).
func (s *topoSearch) volumeOK(i int, zone string, hasZone bool) bool {
	zs := s.in.VolumeZones[nodeplan.PodKey(s.pods[i])]
	return len(zs) == 0 || (hasZone && slices.Contains(zs, zone))
}

// binSets settles, per bin, the pods it admits (binOK) and the subsets of them that fit
// (binFits).
func (s *topoSearch) binSets() {
	for b := range s.m.bins {
		bin := &s.m.bins[b]
		var ok uint
		for i := range s.m.pods {
			z, hasZone := bin.labels[nodeplan.LabelZone]
			if bin.admits(&s.m.pods[i]) && s.volumeOK(i, z, hasZone) {
				ok |= 1 << i
			}
		}
		s.binOK = append(s.binOK, ok)
		fits := make([]bool, 1<<s.n)
		for set := uint(0); set <= s.full(); set++ {
			fits[set] = set&^ok == 0 && s.sums[set].fits(bin.room)
		}
		s.binFits = append(s.binFits, fits)
	}
}

// newNodeClasses groups the pool's variants into classes (a zone where zones matter, and the
// pods whose node selectors match), with each class's cheapest variant for every subset of pods.
func (s *topoSearch) newNodeClasses(zoneMatters bool, zoneID map[string]int) {
	poolPods := uint(0)
	for i, p := range s.m.pods {
		if p.pool == 0 {
			poolPods |= 1 << i
		}
	}
	index := map[[2]int]int{}
	for vi, v := range s.pl.variants {
		zone := -1
		if zoneMatters {
			zone = zoneID[v.off.Zone]
		}
		var match uint
		for i, p := range s.pods {
			if matchNode(p, "", v.labels) {
				match |= 1 << i
			}
		}
		k := [2]int{zone, int(match)}
		ci, seen := index[k]
		if !seen {
			ci = len(s.classes)
			index[k] = ci
			s.classes = append(s.classes, s.newClass(zone, match, poolPods, v.off.Zone, zoneMatters))
		}
		c := &s.classes[ci]
		for set := uint(1); set <= s.full(); set++ {
			if set&^c.ok == 0 && v.off.Price < c.cost[set] && s.sums[set].fits(v.room) {
				c.cost[set], c.pick[set] = v.off.Price, vi
			}
		}
	}
}

// newClass is a class of new nodes in zone (id; -1: zones do not matter) whose node selectors
// match the pods in match, with no variant yet: of the pool's pods (poolPods) that match, those
// whose volumes allow the first variant's zone (varZone) may run there.
func (s *topoSearch) newClass(zone int, match, poolPods uint, varZone string, zoneMatters bool) tclass {
	c := tclass{zone: zone, match: match, cost: make([]float64, 1<<s.n), pick: make([]int, 1<<s.n)}
	for i := range s.m.pods {
		if match&poolPods&(1<<i) != 0 && s.volumeOK(i, varZone, zoneMatters) {
			c.ok |= 1 << i
		}
	}
	for set := range c.cost {
		c.cost[set], c.pick[set] = math.Inf(1), -1
	}
	return c
}

// openingOrder lists, per pod, the classes it may open a new node of, cheapest first.
func (s *topoSearch) openingOrder() {
	s.opening = make([][]int, s.n)
	for i := range s.n {
		for ci, c := range s.classes {
			if !math.IsInf(c.cost[1<<i], 1) {
				s.opening[i] = append(s.opening[i], ci)
			}
		}
		slices.SortStableFunc(s.opening[i], func(a, b int) int { return cmp.Compare(s.classes[a].cost[1<<i], s.classes[b].cost[1<<i]) })
	}
}

// startState sets the search at its start: every pod undecided, no new node, no best plan.
func (s *topoSearch) startState() {
	s.where = slices.Repeat([]int{undecidedTarget}, s.n)
	s.set = make([]uint, s.nb, s.nb+s.n)
	s.choice = make([]int, s.n)
	s.opened = make([]bool, s.n)
	size := max(s.nZones, s.nHosts+s.n)
	s.counts, s.present = make([]int, size), make([]bool, size)
	s.best.placed, s.best.cost = -1, math.Inf(1)
}

// anti fills antiMask and forbid from required anti-affinity, pending pods' and running ones'.
func (s *topoSearch) anti(run []running) {
	for k := range numKeys {
		s.antiMask[k] = make([]uint, s.n)
		s.forbid[k] = make([][]bool, s.n)
		size := s.nZones
		if k == keyHost {
			size = s.nHosts
		}
		for i := range s.n {
			s.forbid[k][i] = make([]bool, size)
		}
	}
	for i, p := range s.pods {
		_, anti := requiredPodTerms(p)
		for _, raw := range anti {
			t := resolvePodTerm(p, raw, s.in.Namespaces)
			for j, q := range s.pods {
				if j != i && t.matches(q) {
					s.antiMask[t.key][i] |= 1 << j
					s.antiMask[t.key][j] |= 1 << i
				}
			}
			for _, r := range run {
				if d := s.binDom[r.bin][t.key]; d >= 0 && t.matches(r.pod) {
					s.forbid[t.key][i][d] = true
				}
			}
		}
	}
	for _, r := range run {
		_, anti := requiredPodTerms(r.pod)
		for _, raw := range anti {
			t := resolvePodTerm(r.pod, raw, s.in.Namespaces)
			d := s.binDom[r.bin][t.key]
			if d < 0 {
				continue
			}
			for i, p := range s.pods {
				if t.matches(p) {
					s.forbid[t.key][i][d] = true
				}
			}
		}
	}
}

// spread fills spreads: every pending pod's DoNotSchedule spread constraints, each with the
// pods it counts and the bins, classes and zones it counts over.
func (s *topoSearch) spread(run []running, zoneID map[string]int) {
	s.spreads = make([][]tspread, s.n)
	for i, p := range s.pods {
		for _, c := range p.Spec.TopologySpreadConstraints {
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				continue
			}
			if !topologyKey(c.TopologyKey) {
				s.keyless |= 1 << i // in scope: no node has the key
				continue
			}
			sel, _ := metav1.LabelSelectorAsSelector(c.LabelSelector) // in scope, so valid
			s.spreads[i] = append(s.spreads[i], s.newSpread(i, c, sel, run, zoneID))
		}
	}
}

// newSpread is pending pod i's spread constraint c, selecting sel: the pending pods it counts,
// the bins eligible for it and the running pods it counts there, the classes of new nodes
// eligible for it, and, over zones, the zones the pool can launch an eligible node into.
func (s *topoSearch) newSpread(i int, c corev1.TopologySpreadConstraint, sel labels.Selector, run []running, zoneID map[string]int) tspread {
	p := s.pods[i]
	honorAff := c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	honorTaints := c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	sp := tspread{key: keyIndex(c.TopologyKey), maxSkew: int(c.MaxSkew), minDomains: 1,
		selfMatch: sel.Matches(labels.Set(p.Labels))}
	if c.MinDomains != nil {
		sp.minDomains = int(*c.MinDomains)
	}
	for j, q := range s.pods {
		if q.Namespace == p.Namespace && sel.Matches(labels.Set(q.Labels)) {
			sp.countable |= 1 << j
		}
	}
	sp.binCount = make([]int, s.nb)
	for b := range s.m.bins {
		bin := &s.m.bins[b]
		sp.binElig = append(sp.binElig, spreadEligible(p, c.TopologyKey, honorAff, honorTaints, bin.name, bin.labels, bin.taints))
	}
	for _, r := range run {
		q := r.pod
		if q.DeletionTimestamp == nil && q.Namespace == p.Namespace && sel.Matches(labels.Set(q.Labels)) {
			sp.binCount[r.bin]++
		}
	}
	tolerated := true
	if honorTaints {
		_, bad := nodeplan.UntoleratedTaint(p.Spec.Tolerations, s.pl.np.Template.Taints)
		tolerated = !bad
	}
	for _, cl := range s.classes {
		sp.classElig = append(sp.classElig, tolerated && (!honorAff || cl.match&(1<<i) != 0))
	}
	if sp.key == keyZone && tolerated {
		seen := map[int]bool{}
		for _, v := range s.pl.variants {
			z := zoneID[v.off.Zone]
			if !seen[z] && (!honorAff || matchNode(p, "", v.labels)) {
				seen[z] = true
				sp.launch = append(sp.launch, z)
			}
		}
	}
	sp.view = fmt.Sprint(p.Namespace, c.TopologyKey, sp.maxSkew, sp.minDomains, sel, sp.binElig, sp.classElig, sp.launch)
	return sp
}

// spreadEligible reports whether a node (name, labels, taints) counts for p's spread over key:
// it has the key, and, as the constraint's policies say, p's node affinity accepts it and p
// tolerates its taints.
func spreadEligible(p *corev1.Pod, key string, honorAff, honorTaints bool, name string, lbls map[string]string, taints []corev1.Taint) bool {
	if _, ok := lbls[key]; !ok {
		return false
	}
	if honorAff && !matchNode(p, name, lbls) {
		return false
	}
	if honorTaints {
		if _, bad := nodeplan.UntoleratedTaint(p.Spec.Tolerations, taints); bad {
			return false
		}
	}
	return true
}

func (s *topoSearch) affinity(run []running) {
	byID := map[string]int{}
	for i, p := range s.pods {
		aff, _ := requiredPodTerms(p)
		for _, raw := range aff {
			t := resolvePodTerm(p, raw, s.in.Namespaces)
			gi, ok := byID[t.id]
			if !ok {
				gi = len(s.affs)
				byID[t.id] = gi
				a := taff{key: t.key}
				for j, q := range s.pods {
					if t.matches(q) {
						a.matches |= 1 << j
					}
				}
				size := s.nZones
				if t.key == keyHost {
					size = s.nHosts + s.n
				}
				a.runningDom = make([]bool, size)
				for _, r := range run {
					if t.matches(r.pod) {
						a.anyRunning = true
						if d := s.binDom[r.bin][t.key]; d >= 0 {
							a.runningDom[d] = true
						}
					}
				}
				s.affs = append(s.affs, a)
			}
			s.affs[gi].carriers |= 1 << i
		}
	}
}

// orderPods orders the search, largest pods first, each with the pods interchangeable with it
// next to it: of those, the search only tries assignments that are sorted by target.
func (s *topoSearch) orderPods() {
	cpu := slices.Index(s.m.names, corev1.ResourceCPU)
	mem := slices.Index(s.m.names, corev1.ResourceMemory)
	get := func(i, r int) int64 {
		if r < 0 {
			return 0
		}
		return s.m.pods[i].req[r]
	}
	byd := make([]int, s.n)
	for i := range byd {
		byd[i] = i
	}
	slices.SortStableFunc(byd, func(a, b int) int {
		if c := cmp.Compare(get(b, cpu), get(a, cpu)); c != 0 {
			return c
		}
		return cmp.Compare(get(b, mem), get(a, mem))
	})
	done := make([]bool, s.n)
	for _, i := range byd {
		if done[i] {
			continue
		}
		for _, j := range byd {
			if !done[j] && (j == i || s.interchangeable(i, j)) {
				done[j] = true
				s.same = append(s.same, j != i)
				s.order = append(s.order, j)
			}
		}
	}
}

func (s *topoSearch) interchangeable(i, j int) bool {
	p, q := s.pods[i], s.pods[j]
	return p.Namespace == q.Namespace && maps.Equal(p.Labels, q.Labels) && reflect.DeepEqual(p.Spec, q.Spec) &&
		slices.Equal(s.in.VolumeZones[nodeplan.PodKey(p)], s.in.VolumeZones[nodeplan.PodKey(q)])
}

// dom is target t's domain id for key k, or -1.
func (s *topoSearch) dom(t, k int) int {
	if t < s.nb {
		return s.binDom[t][k]
	}
	if k == keyZone {
		return s.classes[s.class[t-s.nb]].zone
	}
	return s.nHosts + t - s.nb
}

// antiOK reports whether pod i may join target t as far as anti-affinity goes.
func (s *topoSearch) antiOK(i, t int) bool {
	for k := range numKeys {
		d := s.dom(t, k)
		if d < 0 {
			continue
		}
		if d < len(s.forbid[k][i]) && s.forbid[k][i][d] {
			return false
		}
		mask := s.antiMask[k][i]
		if mask == 0 {
			continue
		}
		for u := range s.set {
			if s.set[u]&mask != 0 && s.dom(u, k) == d {
				return false
			}
		}
	}
	return true
}

func (s *topoSearch) nodeCost(k int, set uint) float64 { return s.classes[s.class[k]].cost[set] }

// dfs decides the pod at position pos of the order and searches on: onto each bin, each new
// node opened so far, a new node of each class it may open, or nowhere. Of interchangeable pods
// (same[pos]) it tries only choices no lower than the previous one's. Branches that cannot
// beat the best plan (more pods placed, then cheaper) are cut.
func (s *topoSearch) dfs(pos, placed int, cost float64) {
	remaining := s.n - pos
	if placed+remaining < s.best.placed || (placed+remaining == s.best.placed && cost >= s.best.cost-costEps) {
		return
	}
	if pos == s.n {
		s.leaf(placed)
		return
	}
	i := s.order[pos]
	lo := 0
	if s.same[pos] {
		lo = s.choice[pos-1]
	}
	s.opened[pos] = false
	s.tryBins(pos, lo, placed, cost)
	s.tryNewNodes(pos, lo, placed, cost)
	if lo <= s.nb+len(s.class) {
		s.tryOpening(pos, placed, cost)
	}
	s.where[i], s.choice[pos] = unplacedTarget, unplacedChoice
	s.dfs(pos+1, placed, cost)
	s.where[i] = undecidedTarget
}

// try puts the pod at position pos on target t (choice: its index among the choices), adding
// delta to the cost, searches on, and takes it off again.
func (s *topoSearch) try(pos, t, choice, placed int, cost, delta float64) {
	i := s.order[pos]
	bit := uint(1) << i
	s.where[i], s.choice[pos] = t, choice
	s.set[t] |= bit
	s.dfs(pos+1, placed+1, cost+delta)
	s.set[t] &^= bit
}

// tryBins tries the pod at pos on each bin from lo on that holds it.
func (s *topoSearch) tryBins(pos, lo, placed int, cost float64) {
	i := s.order[pos]
	bit := uint(1) << i
	for b := lo; b < s.nb; b++ {
		if s.binFits[b][s.set[b]|bit] && s.antiOK(i, b) {
			s.try(pos, b, b, placed, cost, 0)
		}
	}
}

// tryNewNodes tries the pod at pos on each new node opened so far (from choice lo on) whose
// class holds it, at the difference it makes to the node's cost.
func (s *topoSearch) tryNewNodes(pos, lo, placed int, cost float64) {
	i := s.order[pos]
	bit := uint(1) << i
	nNew := len(s.class)
	for k := max(lo-s.nb, 0); k < nNew; k++ {
		t := s.nb + k
		c := s.nodeCost(k, s.set[t]|bit)
		if !math.IsInf(c, 1) && s.antiOK(i, t) {
			s.try(pos, t, t, placed, cost, c-s.nodeCost(k, s.set[t]))
		}
	}
}

// tryOpening tries the pod at pos on a new node of each class it may open, cheapest first; after
// an interchangeable pod that opened one, only classes from that one's on.
func (s *topoSearch) tryOpening(pos, placed int, cost float64) {
	i := s.order[pos]
	bit := uint(1) << i
	nNew := len(s.class)
	minClass := 0
	if s.same[pos] && s.opened[pos-1] {
		minClass = s.class[nNew-1]
	}
	t := s.nb + nNew
	s.set = append(s.set, 0)
	s.class = append(s.class, 0)
	for _, ci := range s.opening[i] {
		if ci < minClass {
			continue
		}
		s.class[nNew] = ci
		if !s.antiOK(i, t) {
			continue
		}
		s.opened[pos] = true
		s.try(pos, t, t, placed, cost, s.classes[ci].cost[bit])
	}
	s.opened[pos] = false
	s.set = s.set[:len(s.set)-1]
	s.class = s.class[:len(s.class)-1]
}

func (s *topoSearch) leaf(placed int) {
	if !s.spreadOK() || !s.noSpreadWait() || !s.affinityOK() {
		return
	}
	cost := 0.0
	for k := range s.class {
		cost += s.nodeCost(k, s.set[s.nb+k])
	}
	if placed == s.best.placed && cost >= s.best.cost-costEps {
		return
	}
	s.best.placed, s.best.cost = placed, cost
	s.best.where, s.best.class = slices.Clone(s.where), slices.Clone(s.class)
}

func (s *topoSearch) spreadOK() bool {
	for i := range s.n {
		t := s.where[i]
		if t < 0 {
			continue
		}
		if s.keyless&(1<<i) != 0 {
			return false
		}
		for si := range s.spreads[i] {
			if !s.spreadHolds(&s.spreads[i][si], t) {
				return false
			}
		}
	}
	return true
}

// spreadHolds reports whether a carrier on target t is within maxSkew of the minimum.
func (s *topoSearch) spreadHolds(sp *tspread, t int) bool {
	d := s.dom(t, sp.key)
	if d < 0 {
		return false
	}
	self, domains := s.spreadCounts(sp, t, d, 0, s.counts, s.present)
	lowest := math.MaxInt
	for e, ok := range s.present {
		if ok {
			lowest = min(lowest, s.counts[e])
		}
	}
	if domains < sp.minDomains || (sp.key == keyHost && s.rules.EmptyHostnameDomain) {
		lowest = 0
	}
	return self-lowest <= sp.maxSkew
}

// spreadCounts fills counts and present per domain of sp for a carrier on target t in domain
// d, leaving out of every other domain (every domain when d is -1) the placed pods in held; it
// returns the carrier's own count (itself included, when d is its domain) and the number of
// domains.
func (s *topoSearch) spreadCounts(sp *tspread, t, d int, held uint, counts []int, present []bool) (own, domains int) {
	clear(counts)
	clear(present)
	eligT := false
	for u := range s.set {
		var elig bool
		n := bits.OnesCount(s.set[u] & sp.countable)
		without := n - bits.OnesCount(s.set[u]&sp.countable&held)
		if u < s.nb {
			elig = sp.binElig[u]
			n += sp.binCount[u]
			without += sp.binCount[u]
		} else {
			elig = sp.classElig[s.class[u-s.nb]]
		}
		if !elig {
			continue
		}
		eligT = eligT || u == t
		e := s.dom(u, sp.key)
		if e == d {
			counts[e] += n
		} else {
			counts[e] += without
		}
		present[e] = true
	}
	for _, z := range sp.launch {
		present[z] = true
	}
	if d >= 0 {
		own = counts[d]
	}
	if !eligT && sp.selfMatch {
		own++
	}
	for _, ok := range present {
		if ok {
			domains++
		}
	}
	return own, domains
}

// noSpreadWait reports whether no carriers may wait on each other forever, package check's
// rule: a carrier is refused only while its constraint's least filled other domain holds
// pending matching pods that another of their constraints refuses. Starting from every pair
// (placed pod, constraint), it drops the pairs that stay within maxSkew even with the pods of
// the other pairs left pending, until none drops, and settles what is left. When nothing is
// left so, it tries again once for each view and domain of a pair left, with the pods the view
// counts there that do not carry it taken as bound (their pairs dropped): the plan passes when
// every try leaves nothing.
func (s *topoSearch) noSpreadWait() bool {
	var all []spreadPair
	for i := range s.n {
		if s.where[i] >= 0 {
			for si := range s.spreads[i] {
				all = append(all, spreadPair{i, si})
			}
		}
	}
	live := s.shrinkWaits(all)
	if s.settle(slices.Clone(live)) > 0 {
		return false
	}
	type seed struct {
		view string
		d    int
	}
	tried := map[seed]bool{}
	for _, pr := range live {
		sp := &s.spreads[pr.i][pr.si]
		d := s.dom(s.where[pr.i], sp.key)
		if tried[seed{sp.view, d}] {
			continue
		}
		tried[seed{sp.view, d}] = true
		bound := s.countedApart(sp, d)
		var next []spreadPair
		for _, q := range live {
			if bound&(1<<q.i) == 0 {
				next = append(next, q)
			}
		}
		if s.settle(s.shrinkWaits(next)) > 0 {
			return false
		}
	}
	return true
}

// shrinkWaits drops from live the pairs that stay within maxSkew even with the pods of the other
// pairs left pending, until none drops.
func (s *topoSearch) shrinkWaits(live []spreadPair) []spreadPair {
	for len(live) > 0 {
		var next []spreadPair
		for _, pr := range live {
			sp := &s.spreads[pr.i][pr.si]
			var held uint
			for _, q := range live {
				if s.spreads[q.i][q.si].view != sp.view {
					held |= 1 << q.i
				}
			}
			if s.spreadWaits(sp, s.where[pr.i], held) {
				next = append(next, pr)
			}
		}
		if len(next) == len(live) {
			break
		}
		live = next
	}
	return live
}

// countedApart returns the placed pods sp counts in domain d (on targets eligible for it) that
// carry no constraint of sp's view.
func (s *topoSearch) countedApart(sp *tspread, d int) uint {
	var out uint
	for u := range s.set {
		elig := u >= s.nb && sp.classElig[s.class[u-s.nb]] || u < s.nb && sp.binElig[u]
		if !elig || s.dom(u, sp.key) != d {
			continue
		}
		for j := range s.n {
			if s.set[u]&sp.countable&(1<<j) != 0 && !slices.ContainsFunc(s.spreads[j], func(o tspread) bool { return o.view == sp.view }) {
				out |= 1 << j
			}
		}
	}
	return out
}

// spreadPair is a placed pod (index i) and one of its spread constraints (s.spreads[i][si]).
type spreadPair struct{ i, si int }

// settle keeps, of the pairs left (index pairs of pod and spread), those refused while every
// pod of a pair kept is pending, own domain included, and returns how many are kept.
func (s *topoSearch) settle(live []spreadPair) int {
	for len(live) > 0 {
		var pending uint
		for _, pr := range live {
			pending |= 1 << pr.i
		}
		var next []spreadPair
		for _, pr := range live {
			sp := &s.spreads[pr.i][pr.si]
			if sp.key == keyHost && s.rules.EmptyHostnameDomain {
				continue
			}
			d := s.dom(s.where[pr.i], sp.key)
			counts, present := make([]int, len(s.counts)), make([]bool, len(s.present))
			_, domains := s.spreadCounts(sp, s.where[pr.i], -1, pending, counts, present)
			own := counts[d]
			if sp.selfMatch {
				own++
			}
			lowest := own
			for e, ok := range present {
				if ok {
					lowest = min(lowest, counts[e])
				}
			}
			if domains < sp.minDomains {
				lowest = 0
			}
			if own-lowest > sp.maxSkew {
				next = append(next, pr)
			}
		}
		if len(next) == len(live) {
			break
		}
		live = next
	}
	return len(live)
}

// spreadWaits reports whether a carrier on target t exceeds maxSkew over the smallest count of
// the other domains when the pods in held are pending.
func (s *topoSearch) spreadWaits(sp *tspread, t int, held uint) bool {
	if sp.key == keyHost && s.rules.EmptyHostnameDomain {
		return false
	}
	d := s.dom(t, sp.key)
	counts, present := make([]int, len(s.counts)), make([]bool, len(s.present))
	own, domains := s.spreadCounts(sp, t, d, held, counts, present)
	lowest, other := math.MaxInt, false
	for e, ok := range present {
		if ok && e != d {
			lowest, other = min(lowest, counts[e]), true
		}
	}
	return domains >= sp.minDomains && other && own-lowest > sp.maxSkew
}

func (s *topoSearch) affinityOK() bool {
	var supported []bool
	for ai := range s.affs {
		a := &s.affs[ai]
		supported = append(supported[:0], a.runningDom...)
		otherMatch := a.anyRunning
		for j := range s.n {
			if t := s.where[j]; t >= 0 && a.matches&^a.carriers&(1<<j) != 0 {
				if d := s.dom(t, a.key); d >= 0 {
					supported[d] = true
					otherMatch = true
				}
			}
		}
		boot, bootSelf := -1, false
		for i := range s.n {
			t := s.where[i]
			if t < 0 || a.carriers&(1<<i) == 0 {
				continue
			}
			d := s.dom(t, a.key)
			switch {
			case d < 0:
				return false
			case supported[d]:
			case otherMatch:
				return false
			case boot >= 0 && boot != d:
				return false
			default:
				boot = d
				bootSelf = bootSelf || a.matches&(1<<i) != 0
			}
		}
		if boot >= 0 && !bootSelf {
			return false
		}
	}
	return true
}

// plan turns an assignment into a Result.
func (s *topoSearch) plan(where, class []int) scheduling.Result {
	var res scheduling.Result
	np := s.pl.np
	nodePods := make([][]string, s.nb+len(class))
	for i, t := range where {
		key := nodeplan.PodKey(s.pods[i])
		if t < 0 {
			res.Unschedulable = append(res.Unschedulable, scheduling.Unschedulable{Pod: key, Code: s.reason(i),
				Message: "no plan the exhaustive search found places it along with more pods"})
			continue
		}
		nodePods[t] = append(nodePods[t], key)
	}
	slices.SortFunc(res.Unschedulable, func(a, b scheduling.Unschedulable) int { return cmp.Compare(a.Pod, b.Pod) })
	for b := range s.nb {
		if len(nodePods[b]) > 0 {
			res.Existing = append(res.Existing, scheduling.Placement{Name: s.m.bins[b].name, Pods: slices.Sorted(slices.Values(nodePods[b]))})
		}
	}
	for k, ci := range class {
		var set uint
		requests := corev1.ResourceList{}
		for i, t := range where {
			if t == s.nb+k {
				set |= 1 << i
				requests = nodeplan.AddResources(requests, nodeplan.PodRequests(s.pods[i]))
			}
		}
		v := s.pl.variants[s.classes[ci].pick[set]]
		res.NodeClaims = append(res.NodeClaims, scheduling.NewNodeClaim{
			NodeClaim: nodeplan.NodeClaim{
				Name:     fmt.Sprintf("%s-oracle-%d", np.Name, k),
				NodePool: np.Name,
				Requirements: np.Template.Requirements.Add(nodeplan.In(nodeplan.LabelNodePool, np.Name)).
					Add(nodeplan.In(nodeplan.LabelInstanceType, v.typ)).
					Add(nodeplan.In(nodeplan.LabelZone, v.off.Zone)).
					Add(nodeplan.In(nodeplan.LabelCapacityType, string(v.off.CapacityType))),
				InstanceTypeOptions: []string{v.typ},
				Labels:              maps.Clone(np.Template.Labels),
				Taints:              slices.Clone(np.Template.Taints),
				Resources:           requests,
			},
			Pods:         slices.Sorted(slices.Values(nodePods[s.nb+k])),
			InstanceType: v.typ,
			Offering:     v.off,
		})
		res.Cost += v.off.Price
	}
	res.LowerBound = res.Cost
	return res
}

// reason guesses why a pod was left out, for Result.Unschedulable.
func (s *topoSearch) reason(i int) scheduling.Reason {
	p := s.pods[i]
	aff, anti := requiredPodTerms(p)
	switch {
	case s.m.pods[i].pool < 0:
		return scheduling.ReasonNoInstanceType
	case len(p.Spec.TopologySpreadConstraints) > 0:
		return scheduling.ReasonTopologySpread
	case len(anti) > 0:
		return scheduling.ReasonPodAntiAffinity
	case len(aff) > 0:
		return scheduling.ReasonPodAffinity
	}
	return scheduling.ReasonNoInstanceType
}
