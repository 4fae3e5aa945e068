package scheduling

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeplan/nodeplan"
)

// reasonRank orders reasons by how far the pod got: the further, the more telling.
var reasonRank = map[Reason]int{
	ReasonNoNodePool: 0, ReasonNodePoolUnavailable: 0, ReasonTaint: 1, ReasonRequirements: 2, ReasonNoInstanceType: 3, ReasonNoOffering: 4,
	ReasonHostPort: 5, ReasonVolumeZone: 5, ReasonMinValues: 6, ReasonTopologySpread: 7, ReasonPodAffinity: 7,
	ReasonPodAntiAffinity: 7, ReasonLimit: 8,
}

// explain says why group g's remaining pods were not placed: one reason per NodePool, the most
// telling first, and the code of the most telling. Of the packing state it reads only
// st.singlePlaced, st.minValuesHit and st.usage.
func (p *problem) explain(st *packState, g *group) (Reason, []PoolReason) {
	if len(p.pools) == 0 {
		r := PoolReason{Code: ReasonNoNodePool, Message: "no NodePool exists, and no existing node has room"}
		return r.Code, []PoolReason{r}
	}
	if r, ok := p.topologyReason(st, g); ok {
		return r.Code, []PoolReason{r}
	}
	var out []PoolReason
	for _, pl := range p.pools {
		code, msg := p.explainPool(st, g, pl)
		out = append(out, PoolReason{NodePool: pl.np.Name, Code: code, Message: "nodepool " + pl.np.Name + ": " + msg})
	}
	slices.SortStableFunc(out, func(a, b PoolReason) int { return cmp.Compare(reasonRank[b.Code], reasonRank[a.Code]) })
	return out[0].Code, out
}

// topologyReason explains pods held back by a pod-level constraint, whatever the pools.
func (p *problem) topologyReason(st *packState, g *group) (PoolReason, bool) {
	switch {
	case g.blocked != nil:
		return PoolReason{Code: g.blocked.code, Message: g.blocked.msg}, true
	case g.single != nil && st.singlePlaced[g.single]:
		return PoolReason{Code: ReasonPodAffinity, Message: "pod affinity on " + nodeplan.LabelHostname +
			" with its own group: every pod must share the node the first one goes to, and it is full"}, true
	case g.noNew:
		return PoolReason{Code: ReasonPodAffinity, Message: fmt.Sprintf("pod affinity on %s requires a node already running a matching pod (%s), and none has room",
			nodeplan.LabelHostname, joinKeys(g.onlyOn))}, true
	case g.with != nil:
		return PoolReason{Code: ReasonPodAffinity, Message: fmt.Sprintf("pod affinity on %s requires sharing a node with %s, and none of its nodes has room",
			nodeplan.LabelHostname, g.with.keys[0])}, true
	}
	return PoolReason{}, false
}

// explainPool says why pool pl places none of the group's pods, checking in the order a
// newcomer would: taints, the pool's own requirements, instance-type labels, room for one pod
// net of DaemonSets, host ports, and offerings.
func (p *problem) explainPool(st *packState, g *group, pl *pool) (Reason, string) {
	if ok, why := pl.np.CanLaunch(); !ok {
		return ReasonNodePoolUnavailable, why
	}
	if t, blocked := nodeplan.UntoleratedTaint(g.tolerations, pl.np.Template.Taints); blocked {
		return ReasonTaint, fmt.Sprintf("taint %s not tolerated", nodeplan.TaintString(t))
	}
	if p.poolOK[g.id][pl.idx] {
		return p.explainStopped(st, g, pl)
	}
	if r, msg, ok := poolRequirementsMiss(g, pl); ok {
		return r, msg
	}
	labelOK, r, msg := typesMatchingLabels(g, pl)
	if len(labelOK) == 0 {
		return r, msg
	}
	// Resources, net of DaemonSets, on the types whose labels match.
	shapes := map[string]*shape{}
	for _, s := range pl.shapes {
		shapes[s.it.Name] = s
	}
	cands := p.roomCandidates(labelOK, shapes)
	var fitting []roomCand
	for _, c := range cands {
		if g.req.fitsIn(c.alloc) {
			fitting = append(fitting, c)
		}
	}
	if len(fitting) == 0 {
		return p.explainNoRoom(g, cands)
	}
	// Host ports against the pool's DaemonSets.
	for _, c := range fitting {
		if s, ok := shapes[c.it.Name]; ok {
			if hp, clash := portsConflict(g.ports, s.dsPorts); clash {
				return ReasonHostPort, fmt.Sprintf("host port %d/%s is taken by a DaemonSet on the pool's nodes", hp.Port, hp.Protocol)
			}
		}
	}
	return p.explainOfferings(g, pl, fitting)
}

// explainStopped explains a pool the group fits but that placed none of its pods: minValues or
// a limit.
func (p *problem) explainStopped(st *packState, g *group, pl *pool) (Reason, string) {
	if st.minValuesHit[g.id] {
		var mv []string
		for _, r := range pl.minValues {
			mv = append(mv, fmt.Sprintf("%s minValues %d", r.Key, r.MinValues))
		}
		return ReasonMinValues, fmt.Sprintf("too few instance types fit the pod to meet %s", strings.Join(mv, ", "))
	}
	return ReasonLimit, p.limitMessage(g, pl, st.usage[pl.idx])
}

// poolRequirementsMiss reports (ok) when no alternative of the group's requirements is
// compatible with what the pool itself sets (its requirements, labels and name).
func poolRequirementsMiss(g *group, pl *pool) (Reason, string, bool) {
	var reqErr error
	for _, alt := range g.alts {
		err := compatibleOnKeys(pl.desc, alt)
		if err == nil {
			return "", "", false
		}
		reqErr = cmp.Or(reqErr, err)
	}
	return ReasonRequirements, reqErr.Error(), true
}

// typesMatchingLabels returns, of the pool's own types (those its requirements admit, e.g. an
// instance-type list), the ones the group's requirements admit; when there are none, the
// reason and message why.
func typesMatchingLabels(g *group, pl *pool) ([]*nodeplan.InstanceType, Reason, string) {
	var own, labelOK []*nodeplan.InstanceType
	var typeErr error
	for _, it := range pl.types {
		typeReqs := nodeplan.RequirementsFromLabels(it.Labels)
		if _, ok := it.Labels[nodeplan.LabelInstanceType]; !ok {
			typeReqs = typeReqs.Add(nodeplan.In(nodeplan.LabelInstanceType, it.Name))
		}
		desc := pl.desc.Intersect(typeReqs)
		if desc.IsEmpty() {
			continue
		}
		own = append(own, it)
		for _, alt := range g.alts {
			if err := compatibleIgnoring(desc, alt, nodeplan.LabelZone, nodeplan.LabelCapacityType); err != nil {
				typeErr = cmp.Or(typeErr, err)
				continue
			}
			labelOK = append(labelOK, it)
			break
		}
	}
	switch {
	case len(pl.types) == 0:
		return nil, ReasonNoInstanceType, "the pool has no instance types"
	case len(own) == 0:
		return nil, ReasonNoInstanceType, fmt.Sprintf("the pool's requirements admit none of the %d instance types of its catalog", len(pl.types))
	case len(labelOK) == 0:
		var ie *nodeplan.IncompatibleError
		if errors.As(typeErr, &ie) {
			return nil, ReasonRequirements, fmt.Sprintf("no instance type matches %s (%s)", ie.Want, offeredValues(own, ie.Key))
		}
		return nil, ReasonRequirements, "no instance type matches the pod's requirements"
	}
	return labelOK, "", ""
}

// roomCand is an instance type whose labels admit the group, with its room for pods: net of
// DaemonSets (ds) where the pool has a shape for it.
type roomCand struct {
	it    *nodeplan.InstanceType
	alloc vec
	ds    bool
}

func (p *problem) roomCandidates(types []*nodeplan.InstanceType, shapes map[string]*shape) []roomCand {
	var cands []roomCand
	for _, it := range types {
		if s, ok := shapes[it.Name]; ok {
			cands = append(cands, roomCand{it, s.alloc, !isZero(s.ds)})
		} else {
			cands = append(cands, roomCand{it, p.dims.vec(it.Allocatable()), false})
		}
	}
	return cands
}

// explainNoRoom explains why no candidate has room for one pod: a single resource no type has
// enough of, naming the largest; else the nearest miss.
func (p *problem) explainNoRoom(g *group, cands []roomCand) (Reason, string) {
	for d := range g.req {
		if g.req[d] <= 0 {
			continue
		}
		var largest roomCand
		for _, c := range cands {
			if largest.it == nil || c.alloc[d] > largest.alloc[d] {
				largest = c
			}
		}
		switch {
		case largest.alloc[d] <= 0:
			// An extended resource (pod-eni, a GPU) none of the types has at all.
			names := map[string]bool{}
			for _, c := range cands {
				names[c.it.Name] = true
			}
			return ReasonNoInstanceType, fmt.Sprintf("no instance type of the pool has %s; the pod asks for %s (the pool's types: %s)",
				p.dims.names[d], p.fmtDim(d, g.req[d]), joinKeys(names))
		case largest.alloc[d] < g.req[d]:
			return ReasonNoInstanceType, fmt.Sprintf("no instance type of the pool has %s %s allocatable (largest: %s, %s)",
				p.fmtDim(d, g.req[d]), p.dims.names[d], largest.it.Name, p.fmtDim(d, largest.alloc[d]))
		}
	}
	best, bestShort := cands[0], 1e300
	for _, c := range cands {
		short := 0.0
		for d := range g.req {
			if miss := g.req[d] - c.alloc[d]; miss > 0 {
				short += float64(miss) / float64(g.req[d])
			}
		}
		if short < bestShort {
			best, bestShort = c, short
		}
	}
	var more []string
	for d := range g.req {
		if miss := g.req[d] - best.alloc[d]; miss > 0 {
			more = append(more, fmt.Sprintf("%s more %s", p.fmtDim(d, miss), p.dims.names[d]))
		}
	}
	note := ""
	if best.ds {
		note = " after DaemonSets"
	}
	return ReasonNoInstanceType, fmt.Sprintf("no instance type of the pool has room for the pod's requests%s; %s would fit with %s", note, best.it.Name, strings.Join(more, " and "))
}

// explainOfferings explains why none of the fitting types has an offering the group accepts:
// zones and capacity types.
func (p *problem) explainOfferings(g *group, pl *pool, fitting []roomCand) (Reason, string) {
	zones, cts := map[string]bool{}, map[string]bool{}
	for _, c := range fitting {
		for _, o := range c.it.Offerings {
			if o.Available && o.Accepts(pl.desc) {
				zones[o.Zone] = true
				cts[string(o.CapacityType)] = true
			}
		}
	}
	if len(zones) == 0 {
		return ReasonNoOffering, unavailableMessage(pl, fitting)
	}
	alt := g.alts[0]
	if z, ok := alt.Get(nodeplan.LabelZone); ok && !anyAccepted(z, zones) {
		if g.rep != nil && p.in.VolumeZones[g.keys[0]] != nil {
			return ReasonVolumeZone, fmt.Sprintf("no offering in %s (the pod's volumes require it; pool offers %s)", z, joinKeys(zones))
		}
		if own, ok := g.nodeAlts[0].Get(nodeplan.LabelZone); !ok || anyAccepted(own, zones) {
			// The pod's own node selection allows an offered zone: its pod affinity,
			// anti-affinity or spread narrowed it.
			return zoneNarrowedMessage(g, z, zones)
		}
		return ReasonNoOffering, fmt.Sprintf("no offering in %s (pod requires it; pool offers %s)", z, joinKeys(zones))
	}
	if c, ok := alt.Get(nodeplan.LabelCapacityType); ok && !anyAccepted(c, cts) {
		return ReasonNoOffering, fmt.Sprintf("no offering with %s (pool offers %s)", c, joinKeys(cts))
	}
	return ReasonNoOffering, fmt.Sprintf("no available offering of a fitting instance type (%s) has a zone and capacity type the pod accepts together (available: zones %s, capacity types %s)",
		fitting[0].it.Name, joinKeys(zones), joinKeys(cts))
}

// unavailableMessage says that capacity, not the pod, is what is missing: every offering the
// pool allows of the instance types that fit the pod is unavailable (insufficient capacity).
func unavailableMessage(pl *pool, fitting []roomCand) string {
	var types []string
	offs := map[string]bool{}
	for _, c := range fitting {
		if !slices.Contains(types, c.it.Name) {
			types = append(types, c.it.Name)
		}
		for _, o := range c.it.Offerings {
			if o.Accepts(pl.desc) {
				offs[o.Zone+"/"+string(o.CapacityType)] = true
			}
		}
	}
	if len(types) > 3 {
		types = append(types[:3], fmt.Sprintf("%d more", len(types)-3))
	}
	if len(offs) == 0 {
		return fmt.Sprintf("the instance types that fit the pod (%s) have no offering the pool's requirements allow: allow more zones or capacity types, or other instance types",
			strings.Join(types, ", "))
	}
	return fmt.Sprintf("capacity is unavailable: every offering the pool allows of the instance types that fit the pod (%s) is unavailable (%s); allowing other instance types, zones or capacity types in the pool would widen the choice",
		strings.Join(types, ", "), joinKeys(offs))
}

// zoneNarrowedMessage explains a pod whose zones its pod affinity, anti-affinity or zone spread
// narrowed (z) to none the pool has an available offering in (zones).
func zoneNarrowedMessage(g *group, z nodeplan.Requirement, zones map[string]bool) (Reason, string) {
	left := "leaves no zone"
	if z.Len() > 0 && z.Operator() == corev1.NodeSelectorOpIn {
		left = "leaves only " + strings.Join(z.Values(), ", ")
	}
	over := func(terms []corev1.PodAffinityTerm) bool {
		return slices.ContainsFunc(terms, func(t corev1.PodAffinityTerm) bool { return t.TopologyKey == nodeplan.LabelZone })
	}
	var code Reason
	var what string
	if a := g.rep.Spec.Affinity; a != nil {
		switch {
		case a.PodAntiAffinity != nil && over(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution):
			code, what = ReasonPodAntiAffinity, "required pod anti-affinity on "+nodeplan.LabelZone
		case a.PodAffinity != nil && over(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution):
			code, what = ReasonPodAffinity, "required pod affinity on "+nodeplan.LabelZone
		}
	}
	if code == "" && slices.ContainsFunc(g.rep.Spec.TopologySpreadConstraints, func(c corev1.TopologySpreadConstraint) bool {
		return c.TopologyKey == nodeplan.LabelZone
	}) {
		code, what = ReasonTopologySpread, "topology spread on "+nodeplan.LabelZone
	}
	if code == "" {
		code, what = ReasonNoOffering, "the pod's zone constraints"
	}
	return code, fmt.Sprintf("%s %s, and the pool has available offerings only in %s", what, left, joinKeys(zones))
}

// limitMessage names the limit that stopped the pool, at usage u.
func (p *problem) limitMessage(g *group, pl *pool, u poolUsage) string {
	if pl.nodeLimit >= 0 && u.nodes >= pl.nodeLimit {
		return fmt.Sprintf("limit nodes=%d reached (%d in use)", pl.nodeLimit, u.nodes)
	}
	// The smallest shape that would take the pod, and the limit it breaks.
	for _, s := range pl.shapes {
		if _, ok := p.fit(s, g.id); !ok {
			continue
		}
		for d, lim := range pl.limited {
			if lim && u.used[d]+s.capacity[d] > pl.limit[d] {
				return fmt.Sprintf("limit %s=%s reached (%s in use, the smallest node for the pod, %s, has %s)",
					p.dims.names[d], p.fmtDim(d, pl.limit[d]), p.fmtDim(d, u.used[d]), s.it.Name, p.fmtDim(d, s.capacity[d]))
			}
		}
	}
	return "limits reached"
}

// compatibleOnKeys checks pod requirements only on the keys the pool description sets.
func compatibleOnKeys(desc, pod nodeplan.Requirements) error {
	for _, r := range pod.All() {
		if d, ok := desc.Get(r.Key); ok && !d.Intersects(r) {
			return &nodeplan.IncompatibleError{Key: r.Key, Want: r, Have: d}
		}
	}
	return nil
}

// compatibleIgnoring is Compatible, skipping keys offerings decide.
func compatibleIgnoring(desc, pod nodeplan.Requirements, skip ...string) error {
	var kept []nodeplan.Requirement
	for _, r := range pod.All() {
		if !slices.Contains(skip, r.Key) {
			kept = append(kept, r)
		}
	}
	return desc.Compatible(nodeplan.NewRequirements(kept...))
}

func offeredValues(types []*nodeplan.InstanceType, key string) string {
	vals := map[string]bool{}
	for _, it := range types {
		if v, ok := it.Labels[key]; ok {
			vals[v] = true
		}
	}
	if len(vals) == 0 {
		return "no instance type has the label " + key
	}
	return "types offer " + joinKeys(vals)
}

func anyAccepted(r nodeplan.Requirement, vals map[string]bool) bool {
	for v := range vals {
		if r.Accepts(v, true) {
			return true
		}
	}
	return false
}

func joinKeys(m map[string]bool) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) > 8 {
		keys = append(keys[:8], fmt.Sprintf("and %d more", len(keys)-8))
	}
	return strings.Join(keys, ", ")
}

// fmtDim formats an amount of dimension d the way kubectl would.
func (p *problem) fmtDim(d int, milli int64) string {
	n := p.dims.names[d]
	var q *resource.Quantity
	switch {
	case n == corev1.ResourceCPU && milli%1000 == 0:
		q = resource.NewQuantity(milli/1000, resource.DecimalSI)
	case n == corev1.ResourceCPU:
		q = resource.NewMilliQuantity(milli, resource.DecimalSI)
	case milli%1000 == 0 && (n == corev1.ResourceMemory || n == corev1.ResourceEphemeralStorage || isHugePages(n)):
		q = resource.NewQuantity(milli/1000, resource.BinarySI)
	case milli%1000 == 0:
		q = resource.NewQuantity(milli/1000, resource.DecimalSI)
	default:
		q = resource.NewMilliQuantity(milli, resource.DecimalSI)
	}
	return q.String()
}

func isZero(v vec) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}
