package check

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeplan/nodeplan"
)

// The rules here judge the final placement. A plan is valid when kube-scheduler, placing its
// pods one at a time in an order the plan does not choose, binds them all; for spread and
// affinity that comes down to the final counts and to which pods may bind without the others,
// as each function's comment explains.

func minDomainsOf(tsc corev1.TopologySpreadConstraint) int32 {
	if tsc.MinDomains != nil {
		return *tsc.MinDomains
	}
	return 1
}

// spreadID identifies equal constraints of pods in one namespace.
func spreadID(ns string, tsc corev1.TopologySpreadConstraint, sel labels.Selector) string {
	minDomains := minDomainsOf(tsc)
	aff, taints := corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore
	if tsc.NodeAffinityPolicy != nil {
		aff = *tsc.NodeAffinityPolicy
	}
	if tsc.NodeTaintsPolicy != nil {
		taints = *tsc.NodeTaintsPolicy
	}
	return fmt.Sprintf("%s|%s|%d|%d|%s|%s|%s", ns, tsc.TopologyKey, tsc.MaxSkew, minDomains, aff, taints, sel.String())
}

// topologySpread checks DoNotSchedule constraints with kube-scheduler's semantics: a domain
// is a value of the topology key on an eligible node (nodeAffinityPolicy Honor and
// nodeTaintsPolicy Ignore by default) — and, for zones, also a zone some pool could launch an
// eligible node into; the global minimum is 0 when there are fewer domains than minDomains.
//
// Counted is every pod the selector matches in the pod's namespace on an eligible node: running,
// or placed by the plan — whether or not it carries the constraint, as kube-scheduler counts
// them. kube-scheduler binds the pending pods in an order the plan does not choose and judges
// each carrier against the pods bound so far (the carrier itself not yet counted in the
// minimum), retrying a refused one whenever a matching pod binds. Two rules make every order
// end with every pod bound:
//
//   - the final state: every domain holding a carrier ends within maxSkew of the final minimum
//     (checkSpread);
//   - no set of pending pods can hold each other back (spreadWaits): a carrier refused by a
//     constraint needs the constraint's least filled domain to hold pending matching pods, and
//     those, in that domain, are never refused by this constraint but may be by another one
//     they carry. With the final state held, pods stay pending forever only as such a cycle.
func (c *checker) topologySpread() {
	st := &spreadState{reported: map[string]bool{}, views: map[string]*spreadView{}, nodes: map[string]*eligibleNodes{}}
	var waits []spreadWait
	for _, t := range c.all {
		for _, p := range t.pods {
			for _, tsc := range p.Spec.TopologySpreadConstraints {
				if tsc.WhenUnsatisfiable != corev1.DoNotSchedule {
					continue
				}
				if w, ok := c.checkSpread(p, t, tsc, st); ok {
					waits = append(waits, w)
				}
			}
		}
	}
	c.spreadWaits(waits)
}

// spreadView is what kube-scheduler counts for one constraint of the carriers that share its
// selector, namespace, parameters and eligible nodes: the final count of each domain and the
// pending pods among them.
type spreadView struct {
	id         string
	key        string
	maxSkew    int
	minDomains int
	counts     map[string]int
	pending    map[string][]*corev1.Pod
	// domains are the keys of counts, sorted; lowest is the least count, in lowestAt (the first
	// such domain by name), or 0 and "" with fewer domains than minDomains. The counts are final,
	// so these are found once per view, not per carrier (a hostname view has a domain per node).
	domains  []string
	lowest   int
	lowestAt string
}

// spreadState is what topologySpread shares between carriers: the (constraint, domain) pairs
// already reported, the views by signature, and the eligible nodes by eligibilityKey.
type spreadState struct {
	reported map[string]bool
	views    map[string]*spreadView
	nodes    map[string]*eligibleNodes
}

// eligibleNodes are the nodes a constraint counts, as one byte per target of c.all ('1' when
// eligible), and for zone spreads the zones some pool could launch an eligible node into
// (found when first asked for).
type eligibleNodes struct {
	bits      string
	zones     []string
	zonesDone bool
}

// spreadWait is one carrier's constraint for spreadWaits: its domain, and its count there with
// itself included.
type spreadWait struct {
	pod    *corev1.Pod
	t      *target
	view   *spreadView
	domain string
	own    int
	// failed: the final state already breaks the constraint (reported as such).
	failed bool
	// matches: its own selector matches it.
	matches bool
}

func (c *checker) checkSpread(p *corev1.Pod, t *target, tsc corev1.TopologySpreadConstraint, st *spreadState) (spreadWait, bool) {
	who := podDesc(nodeplan.PodKey(p))
	sel, err := selectorWithKeys(tsc.LabelSelector, p, tsc.MatchLabelKeys, nil)
	if err != nil {
		c.fail(RuleTopologySpread, who, "has an invalid selector: %v", err)
		return spreadWait{}, false
	}
	id := spreadID(p.Namespace, tsc, sel)
	key := tsc.TopologyKey
	d, ok := t.labels[key]
	if !ok {
		c.fail(RuleTopologySpread, who, "is on %s, which has no %s label for its spread constraint", t.desc, key)
		return spreadWait{}, false
	}
	if sel.Empty() {
		// kube-scheduler counts no pods for an empty selector ({}): the skew is at most 1.
		return spreadWait{}, false
	}
	v, eligible := c.spreadViewFor(p, tsc, id, sel, st)
	self := v.counts[d]
	if !eligible(t.labels, t.name, t.taints) && sel.Matches(labels.Set(p.Labels)) {
		self++
	}
	lowest, lowestAt := v.lowest, v.lowestAt
	w := spreadWait{pod: p, t: t, view: v, domain: d, own: self, matches: sel.Matches(labels.Set(p.Labels))}
	if skew := self - lowest; skew > int(tsc.MaxSkew) {
		w.failed = true
		if st.reported[id+"\x00"+d] {
			return w, true
		}
		st.reported[id+"\x00"+d] = true
		at := "fewer domains than minDomains"
		if lowestAt != "" {
			at = fmt.Sprintf("%s=%s", key, lowestAt)
		}
		c.fail(RuleTopologySpread, who, "on %s: %s=%s has %d matching pods, the minimum is %d (%s): skew %d > maxSkew %d (domains %v)",
			t.desc, key, d, self, lowest, at, skew, tsc.MaxSkew, fmtCounts(v.counts))
	}
	return w, true
}

// spreadViewFor returns the view of p's constraint tsc (shared with the carriers that count the
// same pods on the same nodes) and whether a node is eligible for it.
func (c *checker) spreadViewFor(p *corev1.Pod, tsc corev1.TopologySpreadConstraint, id string, sel labels.Selector,
	st *spreadState) (*spreadView, func(map[string]string, string, []corev1.Taint) bool) {
	key := tsc.TopologyKey
	honorAff := tsc.NodeAffinityPolicy == nil || *tsc.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	honorTaints := tsc.NodeTaintsPolicy != nil && *tsc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	eligible := spreadEligible(p, honorAff, honorTaints)
	nodes := c.eligibleNodesFor(p, honorAff, honorTaints, eligible, st)
	var zones []string
	if key == nodeplan.LabelZone {
		if !nodes.zonesDone {
			nodes.zones, nodes.zonesDone = c.launchableZones(p, honorAff, honorTaints), true
		}
		zones = nodes.zones
	}
	// Carriers that count the same pods on the same nodes share one view, whatever policies
	// chose those nodes.
	sig := fmt.Sprintf("%s|%s|%d|%d|%s|%s|%s", p.Namespace, key, tsc.MaxSkew, minDomainsOf(tsc), sel, nodes.bits, strings.Join(zones, ","))
	v := st.views[sig]
	if v == nil {
		v = c.countSpread(p, tsc, id, sel, nodes.bits, zones)
		st.views[sig] = v
	}
	return v, eligible
}

// spreadEligible says whether p's constraint (with these policies) counts a node with these
// labels, name and taints.
func spreadEligible(p *corev1.Pod, honorAff, honorTaints bool) func(map[string]string, string, []corev1.Taint) bool {
	return func(lbls map[string]string, name string, taints []corev1.Taint) bool {
		// kube-scheduler counts only nodes with the keys of all the pod's DoNotSchedule
		// constraints.
		for _, other := range p.Spec.TopologySpreadConstraints {
			if _, ok := lbls[other.TopologyKey]; !ok && other.WhenUnsatisfiable == corev1.DoNotSchedule {
				return false
			}
		}
		if honorAff {
			if ok, _ := matchNode(p, name, lbls); !ok {
				return false
			}
		}
		if honorTaints {
			if _, bad := untolerated(p.Spec.Tolerations, taints); bad {
				return false
			}
		}
		return true
	}
}

// eligibleNodesFor returns the nodes eligible for p's constraint, judged once per
// eligibilityKey: judging every node per carrier was carriers × nodes.
func (c *checker) eligibleNodesFor(p *corev1.Pod, honorAff, honorTaints bool, eligible func(map[string]string, string, []corev1.Taint) bool,
	st *spreadState) *eligibleNodes {
	k := eligibilityKey(p, honorAff, honorTaints)
	if n := st.nodes[k]; n != nil {
		return n
	}
	bits := make([]byte, len(c.all))
	for i, t := range c.all {
		bits[i] = '0'
		if eligible(t.labels, t.name, t.taints) {
			bits[i] = '1'
		}
	}
	n := &eligibleNodes{bits: string(bits)}
	st.nodes[k] = n
	return n
}

// eligibilityKey is everything spreadEligible and launchableZones read of p under these
// policies: its DoNotSchedule keys and, as the policies say, its node selection and
// tolerations. Carriers with equal keys are eligible on the same nodes.
func eligibilityKey(p *corev1.Pod, honorAff, honorTaints bool) string {
	var k struct {
		HonorAff, HonorTaints bool
		Keys                  []string
		Selector              map[string]string    `json:",omitempty"`
		Required              *corev1.NodeSelector `json:",omitempty"`
		Tolerations           []corev1.Toleration  `json:",omitempty"`
	}
	k.HonorAff, k.HonorTaints = honorAff, honorTaints
	for _, tsc := range p.Spec.TopologySpreadConstraints {
		if tsc.WhenUnsatisfiable == corev1.DoNotSchedule {
			k.Keys = append(k.Keys, tsc.TopologyKey)
		}
	}
	if honorAff {
		k.Selector = p.Spec.NodeSelector
		if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
			k.Required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		}
	}
	if honorTaints {
		k.Tolerations = p.Spec.Tolerations
	}
	b, err := json.Marshal(k)
	if err != nil {
		// Plain API types always marshal; should one not, judge this carrier on its own.
		return fmt.Sprintf("%p", p)
	}
	return string(b)
}

// countSpread counts, per domain of the eligible nodes (and the launchable zones), the pods
// p's constraint tsc matches.
func (c *checker) countSpread(p *corev1.Pod, tsc corev1.TopologySpreadConstraint, id string, sel labels.Selector,
	eligible string, zones []string) *spreadView {
	v := &spreadView{id: id, key: tsc.TopologyKey, maxSkew: int(tsc.MaxSkew), minDomains: 1,
		counts: map[string]int{}, pending: map[string][]*corev1.Pod{}}
	if tsc.MinDomains != nil {
		v.minDomains = int(*tsc.MinDomains)
	}
	for i, t2 := range c.all {
		if eligible[i] != '1' {
			continue
		}
		dom := t2.labels[v.key]
		n := v.counts[dom]
		for _, q := range t2.bound {
			if q.DeletionTimestamp == nil && q.Namespace == p.Namespace && sel.Matches(labels.Set(q.Labels)) {
				n++
			}
		}
		for _, q := range t2.pods {
			if q.Namespace == p.Namespace && sel.Matches(labels.Set(q.Labels)) {
				n++
				v.pending[dom] = append(v.pending[dom], q)
			}
		}
		v.counts[dom] = n
	}
	for _, z := range zones {
		v.counts[z] += 0
	}
	v.domains = slices.Sorted(maps.Keys(v.counts))
	if len(v.counts) >= v.minDomains {
		for i, dom := range v.domains {
			if i == 0 || v.counts[dom] < v.lowest {
				v.lowest, v.lowestAt = v.counts[dom], dom
			}
		}
	}
	return v
}

func fmtCounts(counts map[string]int) string {
	s := ""
	for i, k := range slices.Sorted(maps.Keys(counts)) {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%s:%d", k, counts[k])
	}
	return "[" + s + "]"
}

// launchableZones are the zones some pool could launch a node into that is eligible for the
// pod's spread: an available offering of a type in the pool's catalog that the pool's
// requirements allow — and, as the policies say, the pod's node affinity and tolerations.
func (c *checker) launchableZones(p *corev1.Pod, honorAff, honorTaints bool) []string {
	zones := map[string]bool{}
	for i := range c.in.NodePools {
		np := &c.in.NodePools[i]
		if closed(np) != "" {
			continue
		}
		if honorTaints {
			if _, bad := untolerated(p.Spec.Tolerations, np.Template.Taints); bad {
				continue
			}
		}
		its := c.catalog(np.Name)
		for j := range its {
			it := &its[j]
			for _, o := range it.Offerings {
				if !o.Available || zones[o.Zone] {
					continue
				}
				lbls := maps.Clone(np.Template.Labels)
				if lbls == nil {
					lbls = map[string]string{}
				}
				maps.Copy(lbls, it.Labels)
				lbls[nodeplan.LabelInstanceType] = it.Name
				lbls[nodeplan.LabelZone] = o.Zone
				lbls[nodeplan.LabelCapacityType] = string(o.CapacityType)
				lbls[nodeplan.LabelNodePool] = np.Name
				if !np.Template.Requirements.Matches(lbls) {
					continue
				}
				if honorAff {
					if ok, _ := matchNode(p, "", lbls); !ok {
						continue
					}
				}
				zones[o.Zone] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(zones))
}
