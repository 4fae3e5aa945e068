package scheduling

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/nodeplan/nodeplan"
)

// groupsByValue returns the groups, most valuable pod first (ties by id).
func (p *problem) groupsByValue() []*group {
	gs := slices.Clone(p.groups)
	slices.SortStableFunc(gs, func(a, b *group) int { return cmp.Or(cmp.Compare(b.value, a.value), cmp.Compare(a.id, b.id)) })
	return gs
}

// result turns the packing state into a Result, with requests[i] the launch request of
// st.claims[i] (see rejectMinValues): pods are handed out to bins and claims in group order, so
// equal inputs give equal results. It only reads st, and decides nothing.
func (p *problem) result(st *packState, requests []NewNodeClaim) Result {
	var res Result
	cursor := make([]int, len(p.groups))
	take := func(g int, k int64) []string {
		keys := p.groups[g].keys[cursor[g] : cursor[g]+int(k)]
		cursor[g] += int(k)
		return keys
	}
	for i, b := range p.bins {
		placed := st.bins[i].placed
		if len(placed) == 0 {
			continue
		}
		pl := Placement{Name: b.name}
		for _, x := range placed {
			pl.Pods = append(pl.Pods, take(x.g, x.k)...)
		}
		slices.Sort(pl.Pods)
		if b.inflight {
			res.InFlight = append(res.InFlight, pl)
		} else {
			res.Existing = append(res.Existing, pl)
		}
	}
	byName := func(a, b Placement) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(res.Existing, byName)
	slices.SortFunc(res.InFlight, byName)

	for i, c := range st.claims {
		nc := requests[i]
		for _, x := range c.placed {
			nc.Pods = append(nc.Pods, take(x.g, x.k)...)
		}
		slices.Sort(nc.Pods)
		res.NodeClaims = append(res.NodeClaims, nc)
		res.Cost += nc.Offering.Price + c.shape.pool.nodeCost
		res.NodeCost += c.shape.pool.nodeCost
	}
	for _, g := range p.groups {
		n := st.remaining[g.id]
		if n == 0 {
			continue
		}
		code, pools := p.explain(st, g)
		msg := make([]string, len(pools))
		for i, r := range pools {
			msg[i] = r.Message
		}
		for _, key := range take(g.id, n) {
			res.Unschedulable = append(res.Unschedulable, Unschedulable{Pod: key, Code: code, Message: strings.Join(msg, "; "), Pools: pools})
		}
	}
	slices.SortFunc(res.Unschedulable, func(a, b Unschedulable) int { return strings.Compare(a.Pod, b.Pod) })
	return res
}

// rejectMinValues builds every planned claim's launch request and takes back the pods of the
// claims whose instance-type options cannot meet their pool's minValues together: those pods
// return to st.remaining with their groups marked in st.minValuesHit (ReasonMinValues), and the
// claims leave st.claims. It returns the requests of the claims kept, in st.claims order.
func (p *problem) rejectMinValues(st *packState) []NewNodeClaim {
	growth := p.claimGrowth(st.claims, st.usage)
	// Claims with the same shape, offerings and pods get the same launch request: build it once.
	memo := map[string]memoClaim{}
	requests := make([]NewNodeClaim, 0, len(st.claims))
	kept := st.claims[:0]
	for _, c := range st.claims {
		key := claimKey(c)
		mc, seen := memo[key]
		if !seen {
			mc.nc, mc.ok = p.newNodeClaim(c, growth[c.shape.pool.idx])
			memo[key] = mc
		}
		if !mc.ok {
			for _, x := range c.placed {
				st.remaining[x.g] += x.k
				st.minValuesHit[x.g] = true
			}
			continue
		}
		kept = append(kept, c)
		requests = append(requests, mc.nc.clone())
	}
	st.claims = kept
	return requests
}

type memoClaim struct {
	nc NewNodeClaim
	ok bool
}

func claimKey(c *claim) string {
	b := make([]byte, 0, 16+8*len(c.placed))
	b = strconv.AppendInt(b, int64(c.shape.idx), 36)
	b = append(b, '/')
	b = strconv.AppendUint(b, c.mask, 36)
	for _, x := range c.placed {
		b = append(b, '/')
		b = strconv.AppendInt(b, int64(x.g), 36)
		b = append(b, ':')
		b = strconv.AppendInt(b, x.k, 36)
	}
	return string(b)
}

// clone copies everything a caller might modify, so claims built from one memo entry share
// nothing mutable. Requirements are immutable values and are shared.
func (c NewNodeClaim) clone() NewNodeClaim {
	c.InstanceTypeOptions = slices.Clone(c.InstanceTypeOptions)
	c.Labels = maps.Clone(c.Labels)
	c.Annotations = maps.Clone(c.Annotations)
	c.Taints = slices.Clone(c.Taints)
	c.StartupTaints = slices.Clone(c.StartupTaints)
	c.Resources = c.Resources.DeepCopy()
	c.Pods = nil
	return c
}

// claimGrowth returns, per pool, how far each of the planned claims may grow past the type it
// is costed at, per limited dimension (-1: unlimited), if the provider falls back to a bigger
// option: an equal share of the slack the limits leave at usage (per pool), so that even if
// every claim fell back, the limits would hold.
func (p *problem) claimGrowth(claims []*claim, usage []poolUsage) []vec {
	count := make([]int64, len(p.pools))
	for _, c := range claims {
		count[c.shape.pool.idx]++
	}
	growth := make([]vec, len(p.pools))
	for _, pl := range p.pools {
		g := make(vec, len(p.dims.names))
		for i, lim := range pl.limited {
			if !lim {
				g[i] = -1
				continue
			}
			if n := count[pl.idx]; n > 0 {
				g[i] = max(0, (pl.limit[i]-usage[pl.idx].used[i])/n)
			}
		}
		growth[pl.idx] = g
	}
	return growth
}

// newNodeClaim builds the launch request for a planned node: its requirements, its instance-type
// options cheapest first (within limits: no option grows past the claim's type by more than
// growth; honouring minValues), labels, taints and resources.
func (p *problem) newNodeClaim(c *claim, growth vec) (NewNodeClaim, bool) {
	pl := c.shape.pool
	np := pl.np
	cands := p.claimCandidates(c)
	opts, ok := p.claimOptions(c, cands, growth)
	if !ok {
		return NewNodeClaim{}, false
	}
	names := make([]string, len(opts))
	for i, o := range opts {
		names[i] = o.s.it.Name
	}
	reqs := cands.reqs.Add(nodeplan.In(nodeplan.LabelInstanceType, names...))
	chosen := opts[0]
	// The options' DaemonSet overheads differ where a DaemonSet runs on some types only (an
	// arch selector): Resources adds the smallest, per resource, as Karpenter's
	// FinalizeScheduling does, so every option fits all of Resources (providers filter the
	// options by it) while each option was chosen because its own overhead fits.
	resources := c.used.clone()
	overhead := chosen.s.ds.clone()
	for _, o := range opts[1:] {
		for d, x := range o.s.ds {
			overhead[d] = min(overhead[d], x)
		}
	}
	resources.add(overhead)
	labels := map[string]string{}
	for k, v := range np.Template.Labels {
		labels[k] = v
	}
	for k, v := range reqs.Labels() {
		labels[k] = v
	}
	delete(labels, metadataName)
	out := NewNodeClaim{
		NodeClaim: nodeplan.NodeClaim{
			NodePool:               np.Name,
			NodeClassRef:           np.Template.NodeClassRef,
			Requirements:           reqs,
			InstanceTypeOptions:    names,
			Labels:                 labels,
			Annotations:            maps.Clone(np.Template.Annotations),
			Taints:                 slices.Clone(np.Template.Taints),
			StartupTaints:          slices.Clone(np.Template.StartupTaints),
			Resources:              p.dims.list(resources),
			ExpireAfter:            np.Template.ExpireAfter,
			TerminationGracePeriod: np.Template.TerminationGracePeriod,
		},
		InstanceType: chosen.s.it.Name,
		Offering:     chosen.s.offerings[chosen.off],
	}
	out.Offering.Price = chosen.s.listPrices[chosen.off]
	return out, true
}

// claimOption is one instance type a claim may launch as, at its cheapest allowed offering.
type claimOption struct {
	s     *shape
	price float64
	off   int // offering index
}

// claimOptions lists the claim's instance-type options, cheapest first: the candidate shapes
// that hold its pods and grow past its type by at most growth (the pool's limits), cut to
// Options.MaxInstanceTypes (60) but extended until the pool's minValues are met; ok is false
// when they cannot be.
func (p *problem) claimOptions(c *claim, cands *candidates, growth vec) ([]claimOption, bool) {
	pl := c.shape.pool
	opts := make([]claimOption, 0, len(cands.shapes))
	for _, cs := range cands.shapes {
		s := cs.s
		if !c.used.fitsIn(s.alloc) {
			continue
		}
		if s != c.shape && !withinGrowth(growth, c.shape.capacity, s.capacity) {
			continue
		}
		price, i := s.priceFor(cs.mask)
		opts = append(opts, claimOption{s: s, price: price, off: i})
	}
	slices.SortStableFunc(opts, func(a, b claimOption) int {
		return cmp.Or(cmp.Compare(a.price, b.price), strings.Compare(a.s.it.Name, b.s.it.Name))
	})
	maxTypes := p.in.Options.MaxInstanceTypes
	if maxTypes <= 0 {
		maxTypes = 60
	}
	n := min(maxTypes, len(opts))
	for _, mv := range pl.minValues {
		// Extend the list until it has enough distinct values of the key; fail if all the
		// options together do not.
		for distinctValues(opts[:n], mv.Key, func(o claimOption) map[string]string { return o.s.it.Labels }) < mv.MinValues {
			if n == len(opts) {
				return nil, false
			}
			n++
		}
	}
	return opts[:n], n > 0
}

// candidates are what a claim's pods allow whatever their counts: the requirements they put
// on the node, and the shapes of the pool that take them all, with the offerings left.
type candidates struct {
	reqs   nodeplan.Requirements
	shapes []candidateShape
}

type candidateShape struct {
	s    *shape
	mask uint64
}

// claimCandidates returns the candidates for c's shape and groups, computed once per distinct
// set (many claims differ only in how many pods of each group they hold).
func (p *problem) claimCandidates(c *claim) *candidates {
	b := strconv.AppendInt(nil, int64(c.shape.idx), 36)
	for _, g := range slices.Sorted(func(yield func(int) bool) {
		for _, x := range c.placed {
			if !yield(x.g) {
				return
			}
		}
	}) {
		b = append(b, '/')
		b = strconv.AppendInt(b, int64(g), 36)
	}
	if cs, ok := p.candMemo[string(b)]; ok {
		return cs
	}
	cs := &candidates{reqs: p.claimReqs(c)}
	// A shape's labels have one value each except zone and capacity type (which the offering
	// mask checks) and its narrow keys. So when every group has a single alternative, a shape
	// that fits each group fits them together, and the requirements need no check of their own.
	single := true
	for _, x := range c.placed {
		single = single && len(p.groups[x.g].alts) == 1
	}
	for _, s := range c.shape.pool.shapes {
		fits := true
		for _, x := range c.placed {
			if !p.fitsAny(s, x.g) {
				fits = false
				break
			}
		}
		if !fits || ((!single || len(s.narrowKeys) > 0) && s.reqs.Compatible(cs.reqs) != nil) {
			continue
		}
		if m := offeringMask(s, cs.reqs); m != 0 {
			cs.shapes = append(cs.shapes, candidateShape{s: s, mask: m})
		}
	}
	if p.candMemo == nil {
		p.candMemo = map[string]*candidates{}
	}
	p.candMemo[string(b)] = cs
	return cs
}

// fitAny is fit, or, for groups the packer never fits itself (those placed with a partner
// group by placeWith), the check fitOnShape makes.
func (p *problem) fitAny(s *shape, g int) (fitEntry, bool) {
	if e, ok := p.fit(s, g); ok {
		return e, true
	}
	if p.groups[g].with != nil {
		return p.fitOnShape(p.groups[g], s)
	}
	return fitEntry{}, false
}

func withinGrowth(growth, from, to vec) bool {
	for i, g := range growth {
		if g >= 0 && to[i]-from[i] > g {
			return false
		}
	}
	return true
}

func distinctValues[T any](opts []T, key string, labels func(T) map[string]string) int {
	seen := map[string]bool{}
	for _, o := range opts {
		if v, ok := labels(o)[key]; ok {
			seen[v] = true
		}
	}
	return len(seen)
}
