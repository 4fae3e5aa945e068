package scheduling

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

// group is a set of pending pods the solver cannot tell apart: same namespace, same requests,
// same node selection, tolerations, spread, affinity, host ports, volume zones and priority, and
// the same values for every label some selector looks at. A group of 5,000 replicas costs the
// solver about what one pod costs.
type group struct {
	id   int
	rep  *corev1.Pod
	pods []*corev1.Pod // sorted by key
	keys []string      // pod keys, sorted

	req vec // requests per pod (nodeplan.PodRequests), milli-units
	// alts are the alternatives the pod accepts: nodeSelector ∩ one required node-affinity term
	// (terms are ORed) ∩ volume zones. Never empty; an alternative may be unsatisfiable.
	alts []nodeplan.Requirements
	// nodeAlts are the alternatives from node selection alone (no volume zones, no topology
	// pins): the nodes a spread counts as its domains.
	nodeAlts    []nodeplan.Requirements
	tolerations []corev1.Toleration
	ports       []hostPort
	priority    int32

	// perNode caps how many of the group's pods one node may hold (hostname spread or
	// anti-affinity, host ports); 0 means no cap.
	perNode int64
	// conflicts are groups that may not share a node with this one (anti-affinity, host ports).
	conflicts      []int
	conflictGroups []*group

	// Topology (see topology.go): existing nodes to avoid, the only existing nodes allowed, how
	// many more pods existing nodes may take, whether new nodes are allowed, whether all pods
	// must share one node, a group whose nodes this one must share, and pods that cannot be
	// placed at all.
	avoid  map[string]bool
	onlyOn map[string]bool
	caps   []*nodeCap
	noNew  bool
	// single, when set, is shared by every subgroup of a group whose pods must all share one
	// node (hostname affinity with itself): once placed, the rest cannot go elsewhere.
	single  *singleState
	with    *group
	partner *partnerReq
	blocked *blockInfo

	// value is the pod's worth under the lower bound's resource prices: what it must cost at
	// least wherever it goes. The packer maximises value per dollar.
	value float64
	// size orders groups largest first when a node is filled.
	size float64
}

// groupPods sorts pending pods into groups. Pods are hashed on the fields that matter and
// compared field by field on a hash match, so grouping is exact and cheap.
// partnerReq says a group must share a domain with pods of another pending group.
type partnerReq struct {
	group      *group
	key, value string
}

// singleState records whether a one-node group has its node.
type singleState struct{ placed bool }

func groupPods(pods []*corev1.Pod, selectorKeys []string, volumeZones map[string][]string) []*group {
	seed := maphash.MakeSeed()
	byHash := map[uint64][]*group{}
	var groups []*group
	sorted := slices.Clone(pods)
	slices.SortFunc(sorted, func(a, b *corev1.Pod) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	var h maphash.Hash
	h.SetSeed(seed)
	encs := map[*group][]byte{}
	var enc []byte
	for _, p := range sorted {
		key := nodeplan.PodKey(p)
		vz := volumeZones[key]
		h.Reset()
		hashPod(&h, p, selectorKeys, vz)
		enc = appendTopologyEncoding(enc[:0], p)
		h.Write(enc)
		sum := h.Sum64()
		var g *group
		for _, c := range byHash[sum] {
			if bytes.Equal(encs[c], enc) && samePod(c.rep, p, selectorKeys) && slices.Equal(volumeZones[c.keys[0]], vz) {
				g = c
				break
			}
		}
		if g == nil {
			g = &group{id: len(groups), rep: p}
			groups = append(groups, g)
			byHash[sum] = append(byHash[sum], g)
			encs[g] = slices.Clone(enc)
		}
		g.pods = append(g.pods, p)
		g.keys = append(g.keys, key)
	}
	return groups
}

func hashPod(h *maphash.Hash, p *corev1.Pod, selectorKeys []string, vz []string) {
	w := func(s string) { h.WriteString(s); h.WriteByte(0) }
	w(p.Namespace)
	for _, k := range selectorKeys {
		if v, ok := p.Labels[k]; ok {
			w(k)
			w(v)
		}
	}
	for i := range p.Spec.Containers {
		hashContainer(h, &p.Spec.Containers[i])
	}
	h.WriteByte(1)
	for i := range p.Spec.InitContainers {
		hashContainer(h, &p.Spec.InitContainers[i])
	}
	h.WriteByte(2)
	for _, k := range slices.Sorted(maps.Keys(p.Spec.NodeSelector)) {
		w(k)
		w(p.Spec.NodeSelector[k])
	}
	h.WriteByte(3)
	for _, t := range p.Spec.Tolerations {
		w(t.Key)
		w(string(t.Operator))
		w(t.Value)
		w(string(t.Effect))
	}
	h.WriteByte(4)
	for _, c := range p.Spec.TopologySpreadConstraints {
		w(c.TopologyKey)
		w(string(c.WhenUnsatisfiable))
	}
	if a := p.Spec.Affinity; a != nil {
		h.WriteByte(5)
		if a.NodeAffinity != nil {
			h.WriteByte(6)
		}
		if a.PodAffinity != nil {
			h.WriteByte(7)
		}
		if a.PodAntiAffinity != nil {
			h.WriteByte(8)
		}
	}
	if p.Spec.Priority != nil {
		h.WriteByte(byte(*p.Spec.Priority))
	}
	for _, z := range vz {
		w(z)
	}
}

func hashContainer(h *maphash.Hash, c *corev1.Container) {
	for _, rl := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := rl[n]; ok {
				v := q.MilliValue()
				var b [8]byte
				for i := range b {
					b[i] = byte(v >> (8 * i))
				}
				h.Write(b[:])
			}
		}
		h.WriteByte(byte(len(rl)))
	}
	for _, p := range c.Ports {
		if p.HostPort != 0 {
			h.WriteByte(byte(p.HostPort))
		}
	}
}

// appendTopologyEncoding appends an exact encoding of the pod's affinity and topology spread
// constraints: their protobuf wire form, which Kubernetes generates deterministically (map keys
// sorted) and which, like equality.Semantic, does not tell a nil slice from an empty one. Pods
// with equal encodings have equal terms; comparing bytes is much cheaper than a reflective
// DeepEqual per pod. Should marshalling ever fail, a per-pod marker keeps the pod apart.
func appendTopologyEncoding(b []byte, p *corev1.Pod) []byte {
	fail := func() []byte { return fmt.Appendf(b, "\x00unencodable %p", p) }
	if a := p.Spec.Affinity; a != nil {
		b = append(b, 'A')
		data, err := a.Marshal()
		if err != nil {
			return fail()
		}
		b = binary.AppendUvarint(b, uint64(len(data)))
		b = append(b, data...)
	}
	for i := range p.Spec.TopologySpreadConstraints {
		b = append(b, 'T')
		data, err := p.Spec.TopologySpreadConstraints[i].Marshal()
		if err != nil {
			return fail()
		}
		b = binary.AppendUvarint(b, uint64(len(data)))
		b = append(b, data...)
	}
	return b
}

// samePod reports whether two pods are interchangeable for scheduling. Equal hashes make it
// likely; this makes it certain.
func samePod(a, b *corev1.Pod, selectorKeys []string) bool {
	if a.Namespace != b.Namespace {
		return false
	}
	for _, k := range selectorKeys {
		va, oka := a.Labels[k]
		vb, okb := b.Labels[k]
		if va != vb || oka != okb {
			return false
		}
	}
	sa, sb := &a.Spec, &b.Spec
	if !sameContainers(sa.Containers, sb.Containers) || !sameContainers(sa.InitContainers, sb.InitContainers) {
		return false
	}
	if !resourcesEqual(sa.Overhead, sb.Overhead) || !maps.Equal(sa.NodeSelector, sb.NodeSelector) {
		return false
	}
	// The reflective comparisons only where there is something to compare: most pods have no
	// affinity or spread, and 100,000 DeepEquals of nil would show in the profile.
	if (len(sa.Tolerations) > 0 || len(sb.Tolerations) > 0) && !slices.Equal(sa.Tolerations, sb.Tolerations) {
		return false
	}
	// Affinity and spread constraints are compared by appendTopologyEncoding, before this.
	if (sa.Priority == nil) != (sb.Priority == nil) || (sa.Priority != nil && *sa.Priority != *sb.Priority) {
		return false
	}
	return true
}

func sameContainers(a, b []corev1.Container) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !resourcesEqual(a[i].Resources.Requests, b[i].Resources.Requests) ||
			!resourcesEqual(a[i].Resources.Limits, b[i].Resources.Limits) ||
			!slices.EqualFunc(a[i].Ports, b[i].Ports, func(x, y corev1.ContainerPort) bool {
				return x.HostPort == y.HostPort && x.HostIP == y.HostIP && x.Protocol == y.Protocol && (x.HostPort == 0 || x.ContainerPort == y.ContainerPort)
			}) {
			return false
		}
		pa, pb := a[i].RestartPolicy, b[i].RestartPolicy
		if (pa == nil) != (pb == nil) || (pa != nil && *pa != *pb) {
			return false
		}
	}
	return true
}

func resourcesEqual(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, q := range a {
		r, ok := b[k]
		if !ok || q.Cmp(r) != 0 {
			return false
		}
	}
	return true
}

// podAlternatives returns the node requirements a pod accepts, one per required node-affinity
// term (ORed), each ANDed with the nodeSelector and the volume zones. matchFields on
// metadata.name become a requirement on the pseudo-label metadataName, which only existing nodes
// carry.
func podAlternatives(p *corev1.Pod, volumeZones []string, preferred bool) ([]nodeplan.Requirements, error) {
	base := nodeplan.RequirementsFromLabels(p.Spec.NodeSelector)
	if volumeZones != nil {
		base = base.Add(nodeplan.In(nodeplan.LabelZone, volumeZones...))
	}
	if preferred && p.Spec.Affinity != nil && p.Spec.Affinity.NodeAffinity != nil {
		// The heaviest preferred term, treated as required (first on ties).
		var best *corev1.PreferredSchedulingTerm
		for i, t := range p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			if best == nil || t.Weight > best.Weight {
				best = &p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i]
			}
		}
		if best != nil {
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
