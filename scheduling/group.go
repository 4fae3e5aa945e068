package scheduling

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeplan/nodeplan"
)

// group is a set of pending pods the solver cannot tell apart: same namespace, same requests,
// same node selection, tolerations, spread, affinity, host ports, volume zones and priority, and
// the same values for every label some selector looks at. A group of 5,000 replicas costs the
// solver about what one pod costs.
type group struct {
	id int
	// constraints encode the pods' affinity and spread constraints exactly (the last field of
	// their group key): groups of one namespace with equal constraints parse them alike, unless
	// matchLabelKeys read the pods' labels (parseGroups).
	constraints string
	// origin is 1 + the index in the build's base grouping of the group this one was split
	// from (or is): its subgroups share its pods' labels, node selection, tolerations and
	// constraints, so what depends only on those is worked out once per origin (spreadFam.rels).
	// 0: a group from elsewhere, for which nothing is kept.
	origin int
	rep    *corev1.Pod
	pods   []*corev1.Pod // sorted by key
	keys   []string      // pod keys, sorted

	req vec // requests per pod (nodeplan.PodRequests), milli-units
	// alts are the alternatives the pod accepts: nodeSelector ∩ one required node-affinity term
	// (terms are ORed) ∩ volume zones. Never empty; an alternative may be unsatisfiable.
	alts []nodeplan.Requirements
	// nodeAlts are the alternatives from node selection alone (no volume zones, no topology
	// pins): the nodes a spread counts as its domains.
	nodeAlts    []nodeplan.Requirements
	tolerations []corev1.Toleration
	ports       []nodeplan.HostPort
	priority    int32

	// perNode caps how many of the group's pods one node may hold (hostname spread or
	// anti-affinity, host ports); 0 means no cap.
	perNode int64
	// conflicts are groups that may not share a node with this one (anti-affinity, host ports).
	conflicts []int

	// Topology (see topology.go): existing nodes to avoid, the only existing nodes allowed, how
	// many more pods existing nodes may take, whether new nodes are allowed, whether all pods
	// must share one node, a group whose nodes this one must share, and pods that cannot be
	// placed at all.
	avoid  map[string]bool
	onlyOn map[string]bool
	caps   []*nodeCap
	noNew  bool
	// single, when set, is shared by every subgroup of a group whose pods must all share one
	// node (hostname affinity with itself): once placed (packState.singlePlaced), the rest
	// cannot go elsewhere.
	single  *singleState
	with    *group
	partner *partnerReq
	blocked *blockInfo
	// countedSure are spread families whose counted node selection g's alternatives were
	// narrowed to (resolveUncertain, spread.go): they count its pods surely.
	countedSure []*spreadFam

	// value is the pod's worth under the lower bound's resource prices: what it must cost at
	// least wherever it goes. The packer maximises value per dollar.
	value float64
	// size orders groups largest first when a node is filled.
	size float64
}

// partnerReq says a group must share a domain with pods of another pending group.
type partnerReq struct {
	group      *group
	key, value string
}

// singleState names the pods that must share one node: the subgroups of one group (and its
// co-carriers), by the representative pod of the first. Whether they have their node is
// packing state (packState.singlePlaced).
type singleState struct{ rep *corev1.Pod }

// groupPods sorts pending pods into groups: pods with the same group key (groupKeyer.key) are
// one group. The key holds only the facts scheduling looks at, each in a canonical form, so
// everything else the API server, its admission plugins and controllers add to a pod (default
// tolerations with their tolerationSeconds, priority 0, schedulerName, managed fields, uids,
// owner references, generated names, status…) leaves the grouping — and so the plan, its cost
// and the solver's speed — as for the bare pods.
//
// taints are every taint the solver may hold against a pod's tolerations (inputTaints).
func groupPods(pods []*corev1.Pod, selectorKeys []string, volumeZones map[string][]string, taints []corev1.Taint) []*group {
	keys := nodeplan.PodKeys(pods)
	byKey := map[string]int{} // the index in groups
	var groups []*group
	of, sizes := make([]int, len(pods)), []int(nil)
	var k groupKeyer
	for i, p := range pods {
		enc := k.key(p, selectorKeys, volumeZones[keys[i]], taints)
		gi, ok := byKey[string(enc)]
		if !ok {
			gi = len(groups)
			key := string(enc)
			groups, sizes = append(groups, &group{constraints: key[k.topoAt:]}), append(sizes, 0)
			byKey[key] = gi
		}
		of[i] = gi
		sizes[gi]++
	}
	// Each group's pods and keys are cut from one array of each, at their exact size.
	allPods, allKeys := make([]*corev1.Pod, len(pods)), make([]string, len(pods))
	for gi, g := range groups {
		n := sizes[gi]
		g.pods, g.keys, allPods, allKeys = allPods[:0:n], allKeys[:0:n], allPods[n:], allKeys[n:]
	}
	for i, p := range pods {
		g := groups[of[i]]
		g.pods, g.keys = append(g.pods, p), append(g.keys, keys[i])
	}
	var byName nameSorter
	for _, g := range groups {
		byName.sort(g.pods, g.keys)
		g.rep = g.pods[0]
	}
	// Groups are numbered in the order of their keys, not of their pods' names: names the API
	// server generates (or any renaming) then cannot change the order the solver sees them in.
	order := slices.Sorted(maps.Keys(byKey))
	for i, key := range order {
		groups[byKey[key]].id = i
	}
	slices.SortFunc(groups, func(a, b *group) int { return cmp.Compare(a.id, b.id) })
	return groups
}

// nameSorter sorts each group's pods by name, and their keys (nodeplan.PodKeys) with them,
// reusing its buffers from group to group. A group's pods share their namespace (it is part of
// the group key), so their keys — the namespace, a separator, the name — sort as their names.
// Pods are grouped first and sorted within their group, as which pods a group holds does not
// depend on their order: a group of one costs nothing. The keys mostly differ only after a long
// common prefix ("default/web-7d9f8b-"), so each is sorted by the eight bytes after it, as a
// number, and compared in full only on a tie.
type nameSorter struct {
	order []namePrefix
	pods  []*corev1.Pod
	keys  []string
}

// namePrefix is a key's eight bytes after its group's common prefix, big-endian and padded
// with zeros (so a key that ends first sorts first, as it does as a string), and its index.
type namePrefix struct {
	prefix uint64
	i      int32
}

func (s *nameSorter) sort(pods []*corev1.Pod, keys []string) {
	if len(pods) < 2 {
		return
	}
	common := len(keys[0])
	for _, k := range keys[1:] {
		i, n := 0, min(common, len(k))
		for i < n && k[i] == keys[0][i] {
			i++
		}
		common = i
	}
	s.order = s.order[:0]
	for i, k := range keys {
		var b [8]byte
		copy(b[:], k[common:])
		s.order = append(s.order, namePrefix{prefix: binary.BigEndian.Uint64(b[:]), i: int32(i)})
	}
	slices.SortFunc(s.order, func(a, b namePrefix) int {
		if c := cmp.Compare(a.prefix, b.prefix); c != 0 {
			return c
		}
		return strings.Compare(keys[a.i], keys[b.i])
	})
	s.pods, s.keys = append(s.pods[:0], pods...), append(s.keys[:0], keys...)
	for i, o := range s.order {
		pods[i], keys[i] = s.pods[o.i], s.keys[o.i]
	}
}

// groupKeyer builds group keys, reusing its buffers from pod to pod.
type groupKeyer struct {
	buf    []byte
	names  []corev1.ResourceName
	labels []string
	// topoAt is where the last key's affinity and spread constraints start (its last field).
	topoAt int
}

// key returns an exact, canonical encoding of what the solver reads from a pending pod: its
// namespace; the values of the labels some selector looks at; its requests (compared by value:
// "1" and "1000m" are equal) — the containers' requests and limits when they alone decide
// nodeplan.PodRequests, else its result —; its nodeSelector; its
// tolerations as what they tolerate: for each taint of the input (inputTaints), whether the pod
// tolerates it — so order, duplicates, tolerationSeconds (which only delays a NoExecute
// eviction) and tolerations of taints no node has do not matter;
// its priority (none counts as 0, as kube-scheduler counts it); its host ports (defaulted and
// sorted); its volume zones; and, last, its affinity and spread constraints (topoAt and
// group.constraints cut them off the end, so they must stay last). Fields are length-prefixed,
// so distinct facts never encode alike. The result is valid until the next call.
func (k *groupKeyer) key(p *corev1.Pod, selectorKeys []string, vz []string, taints []corev1.Taint) []byte {
	b := appendStr(k.buf[:0], p.Namespace)
	for _, key := range selectorKeys {
		if v, ok := p.Labels[key]; ok {
			b = appendStr(append(b, 1), v)
		} else {
			b = append(b, 0)
		}
	}
	b = k.appendRequests(b, p)
	b = k.appendPlacement(b, p, taints)
	b = appendPortsAndVolumes(b, p, vz)
	b = append(b, 'A')
	k.topoAt = len(b)
	b = appendTopologyEncoding(b, p)
	k.buf = b
	return b
}

// appendStr encodes s, length first.
func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendRequests encodes what decides the pod's requests.
func (k *groupKeyer) appendRequests(b []byte, p *corev1.Pod) []byte {
	if len(p.Spec.InitContainers) == 0 && len(p.Spec.Overhead) == 0 && p.Spec.Resources == nil && nodeplan.StatusRequestsMatchSpec(p) {
		// Most pods: the requests follow from the containers' requests (and limits standing in
		// for missing ones) alone; encoding those is exact and saves building the sum. Pods
		// whose containers split the same total differently land in different groups.
		b = append(b, 'C')
		b = binary.AppendUvarint(b, uint64(len(p.Spec.Containers)))
		for i := range p.Spec.Containers {
			r := &p.Spec.Containers[i].Resources
			b = k.appendList(b, r.Requests, nil)
			b = k.appendList(b, r.Limits, r.Requests)
		}
		return b
	}
	b = append(b, 'R')
	return k.appendList(b, nodeplan.PodRequests(p), nil)
}

// appendPlacement encodes the pod's nodeSelector, its tolerations as what they tolerate and its
// priority.
func (k *groupKeyer) appendPlacement(b []byte, p *corev1.Pod, taints []corev1.Taint) []byte {
	b = append(b, 'N')
	b = binary.AppendUvarint(b, uint64(len(p.Spec.NodeSelector)))
	if len(p.Spec.NodeSelector) > 0 {
		k.labels = k.labels[:0]
		for key := range p.Spec.NodeSelector {
			k.labels = append(k.labels, key)
		}
		slices.Sort(k.labels)
		for _, key := range k.labels {
			b = appendStr(b, key)
			b = appendStr(b, p.Spec.NodeSelector[key])
		}
	}
	// Tolerations by what they tolerate among the taints the input can show a pod: the
	// not-ready and unreachable NoExecute tolerations every API-server pod carries tolerate
	// nothing here unless some node or pool has such a taint.
	b = append(b, 'T')
	for i := range taints {
		if nodeplan.Tolerates(p.Spec.Tolerations, taints[i]) {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	b = append(b, 'P')
	var prio int32
	if p.Spec.Priority != nil {
		prio = *p.Spec.Priority
	}
	return binary.BigEndian.AppendUint32(b, uint32(prio))
}

// appendPortsAndVolumes encodes the pod's host ports and its volumes' zones.
func appendPortsAndVolumes(b []byte, p *corev1.Pod, vz []string) []byte {
	b = append(b, 'H')
	ports := nodeplan.PodHostPorts(p)
	b = binary.AppendUvarint(b, uint64(len(ports)))
	for _, hp := range ports {
		b = appendStr(b, hp.IP)
		b = binary.BigEndian.AppendUint32(b, uint32(hp.Port))
		b = appendStr(b, string(hp.Protocol))
	}
	b = append(b, 'V')
	b = binary.AppendUvarint(b, uint64(len(vz)))
	if vz == nil {
		b = append(b, 0) // no volume zones (nil) differs from an empty list (no zone at all)
	} else {
		b = append(b, 1)
	}
	for _, z := range vz {
		b = appendStr(b, z)
	}
	return b
}

// appendList encodes the amounts of l by name, leaving out the names in skip: how many, then
// each name and amount, by name.
func (k *groupKeyer) appendList(b []byte, l, skip corev1.ResourceList) []byte {
	if b, ok := appendCommonList(b, l, skip); ok {
		return b
	}
	k.names = k.names[:0]
	for name := range l {
		if _, skipped := skip[name]; !skipped {
			k.names = append(k.names, name)
		}
	}
	slices.Sort(k.names)
	b = binary.AppendUvarint(b, uint64(len(k.names)))
	for _, name := range k.names {
		b = appendEntry(b, name, l[name])
	}
	return b
}

// commonResources are the names nearly every pod's requests use, sorted.
var commonResources = [...]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceEphemeralStorage, corev1.ResourceMemory}

// appendCommonList is appendList for a list of common names only (most pods'), read by looking
// each one up: starting an iteration over a map and sorting what it yields cost several times as
// much. ok is false, and b as it was, for any other list.
func appendCommonList(b []byte, l, skip corev1.ResourceList) (_ []byte, ok bool) {
	if len(l) > len(commonResources) {
		return b, false
	}
	at := len(b)
	b = append(b, 0) // how many: at most three, one byte as a uvarint
	found, kept := 0, 0
	for _, name := range commonResources {
		q, ok := l[name]
		if !ok {
			continue
		}
		found++
		if _, skipped := skip[name]; !skipped {
			b = appendEntry(b, name, q)
			kept++
		}
	}
	if found != len(l) {
		return b[:at], false
	}
	b[at] = byte(kept)
	return b, true
}

// appendEntry encodes one resource's name and amount.
func appendEntry(b []byte, name corev1.ResourceName, q resource.Quantity) []byte {
	return appendQuantity(appendStr(b, string(name)), q)
}

// appendQuantity encodes a quantity by value, whatever its format: "512Mi" and "536870912" are
// equal. Whole milli-units (every quantity the API server stores) are encoded as such; anything
// else falls back to its exact decimal form.
func appendQuantity(b []byte, q resource.Quantity) []byte {
	if m := q.MilliValue(); resource.NewMilliQuantity(m, resource.DecimalSI).Cmp(q) == 0 {
		b = append(b, 'm')
		return binary.BigEndian.AppendUint64(b, uint64(m))
	}
	d := q.AsDec().String()
	b = append(b, 'd')
	b = binary.AppendUvarint(b, uint64(len(d)))
	return append(b, d...)
}

// inputTaints returns, deduplicated and sorted, every taint a pending pod's tolerations are held
// against: existing nodes', in-flight claims' and NodePool templates' taints, startup taints
// included. A new source of taints in Input must be added here, or pods that differ in
// tolerating it would share a group.
func inputTaints(in *Input) []corev1.Taint {
	var out []corev1.Taint
	add := func(ts []corev1.Taint) {
		for _, t := range ts {
			out = append(out, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
		}
	}
	for _, n := range in.Nodes {
		if n.Node != nil {
			add(n.Node.Spec.Taints)
		}
	}
	for i := range in.NodeClaims {
		add(in.NodeClaims[i].Taints)
		add(in.NodeClaims[i].StartupTaints)
	}
	for i := range in.NodePools {
		add(in.NodePools[i].Template.Taints)
		add(in.NodePools[i].Template.StartupTaints)
	}
	slices.SortFunc(out, func(a, b corev1.Taint) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), strings.Compare(a.Value, b.Value), strings.Compare(string(a.Effect), string(b.Effect)))
	})
	return slices.Compact(out)
}

// appendTopologyEncoding appends an exact encoding of the pod's affinity and topology spread
// constraints: their protobuf wire form, which Kubernetes generates deterministically (map keys
// sorted) and which, like equality.Semantic, does not tell a nil slice from an empty one. Pods
// with equal encodings have equal terms; comparing bytes is much cheaper than a reflective
// DeepEqual per pod. Should marshalling ever fail, a per-pod marker keeps the pod apart.
func appendTopologyEncoding(b []byte, p *corev1.Pod) []byte {
	if a := p.Spec.Affinity; a != nil {
		b = append(b, 'A')
		var ok bool
		if b, ok = appendMarshalled(b, a); !ok {
			return fmt.Appendf(b, "\x00unencodable %p", p)
		}
	}
	for i := range p.Spec.TopologySpreadConstraints {
		b = append(b, 'T')
		var ok bool
		if b, ok = appendMarshalled(b, &p.Spec.TopologySpreadConstraints[i]); !ok {
			return fmt.Appendf(b, "\x00unencodable %p", p)
		}
	}
	return b
}

// wireMessage is a Kubernetes API type's protobuf encoding, as generated for it.
type wireMessage interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// appendMarshalled appends m's protobuf encoding, length first, written straight into b (Marshal
// would allocate it apart, once per pod); ok is false when it cannot be encoded.
func appendMarshalled(b []byte, m wireMessage) (_ []byte, ok bool) {
	n := m.Size()
	b = binary.AppendUvarint(b, uint64(n))
	b = slices.Grow(b, n)
	if w, err := m.MarshalToSizedBuffer(b[len(b) : len(b)+n]); err != nil || w != n {
		return b, false
	}
	return b[:len(b)+n], true
}

// podAlternatives returns the node requirements a pod accepts, one per required node-affinity
// term (ORed), each ANDed with the nodeSelector and the volume zones. matchFields on
// metadata.name become a requirement on the pseudo-label metadataName, which only existing nodes
// carry.
//
// With preferred, the pod's heaviest preferred node-affinity term is ANDed too, treated as
// required, after its dropped heaviest terms are set aside (see solveWithPreferences); a pod
// with no term left has no preference.
func podAlternatives(p *corev1.Pod, volumeZones []string, preferred bool, dropped int) ([]nodeplan.Requirements, error) {
	base := nodeSelectorRequirements(p.Spec.NodeSelector)
	if volumeZones != nil {
		base = base.Add(nodeplan.In(nodeplan.LabelZone, volumeZones...))
	}
	if preferred && p.Spec.Affinity != nil && p.Spec.Affinity.NodeAffinity != nil {
		if best := preferredNodeTerm(p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution, dropped); best != nil {
			rs, err := termRequirements(best.Preference)
			if err != nil {
				return nil, err
			}
			base = base.Intersect(rs)
		}
	}
	na := p.Spec.Affinity
	if na == nil || na.NodeAffinity == nil || na.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return []nodeplan.Requirements{base}, nil
	}
	terms := na.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	var alts []nodeplan.Requirements
	for _, t := range terms {
		rs, err := termRequirements(t)
		if err != nil {
			return nil, err
		}
		alts = append(alts, base.Intersect(rs))
	}
	if len(alts) == 0 {
		// An empty term list matches no node, as in kube-scheduler.
		alts = append(alts, base.Add(nodeplan.In(nodeplan.LabelHostname)))
	}
	return alts, nil
}

// nodeSelectorRequirements is a pod's nodeSelector as requirements, a deprecated beta key read
// as the stable key it means (nodeplan.NormalizedLabel).
func nodeSelectorRequirements(sel map[string]string) nodeplan.Requirements {
	var beta []string
	for k := range sel {
		if nodeplan.NormalizedLabel(k) != k {
			beta = append(beta, k)
		}
	}
	if len(beta) == 0 {
		return nodeplan.RequirementsFromLabels(sel)
	}
	stable := maps.Clone(sel)
	for _, k := range beta {
		delete(stable, k)
	}
	rs := nodeplan.RequirementsFromLabels(stable)
	slices.Sort(beta)
	for _, k := range beta {
		rs = rs.Add(nodeplan.In(nodeplan.NormalizedLabel(k), sel[k]))
	}
	return rs
}

// preferredNodeTerm returns the heaviest of terms once the dropped heaviest are set aside (the
// first on ties, as a stable sort by weight orders them), or nil when none is left. It is the
// term Karpenter treats as required after relaxing a pod dropped times: it removes the heaviest
// term each time.
func preferredNodeTerm(terms []corev1.PreferredSchedulingTerm, dropped int) *corev1.PreferredSchedulingTerm {
	if dropped >= len(terms) {
		return nil
	}
	order := make([]int, len(terms))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(terms[b].Weight, terms[a].Weight) })
	return &terms[order[dropped]]
}

// metadataName is the pseudo-label under which an existing node's name is matched by
// matchFields (metadata.name). New nodes do not have it: their names are not known yet.
const metadataName = "metadata.name"

func termRequirements(t corev1.NodeSelectorTerm) (nodeplan.Requirements, error) {
	rs, err := nodeplan.RequirementsFromNodeSelector(t.MatchExpressions)
	if err != nil {
		return rs, err
	}
	for _, f := range t.MatchFields {
		r, err := nodeplan.NewRequirement(metadataName, f.Operator, f.Values...)
		if err != nil {
			return rs, err
		}
		rs = rs.Add(r)
	}
	return rs, nil
}
