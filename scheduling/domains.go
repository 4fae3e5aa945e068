package scheduling

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	"github.com/nodeplan/nodeplan"
)

// Domains are the values of a topology key (zones, or any node label) a group's pods could be
// placed in, each with the cheapest price seen there: a spread splits a group over them, an
// affinity pins a group to the cheapest, anti-affinity hands them out.
//
// What the pools' shapes offer on a key depends only on the group's node alternatives and which
// pools its taints rule out, and the drawn mixes have hundreds of groups with the same ones: it
// is worked out once per distinct (key, pools, alternatives) as per-domain lists of shapes,
// cheapest first (shapeDomains), and a group's domains are then the first shape in each list
// its requests fit. Existing nodes are read per group (they are few, and admit by group).

// domains returns the values of key the group could be placed in — from the shapes of pools
// it may use and from existing nodes it may use — each with the cheapest price seen there.
func (p *problem) domains(g *group, key string) map[string]float64 {
	return p.domainsFor(g, g.alts, key, true, true, true)
}

// domainsFor is domains for the given alternatives; with honorTaints false, pools whose taints
// the group does not tolerate count too (a spread's domains under nodeTaintsPolicy Ignore).
// withBins adds existing nodes: with mustFit, those the group may go to; without, every node
// a spread counts (its labels match the alternatives; its taints matter only if honoured).
func (p *problem) domainsFor(g *group, alts []nodeplan.Requirements, key string, honorTaints, mustFit, withBins bool) map[string]float64 {
	out := &domainPrices{}
	sd := p.shapeDomainsFor(g, alts, key, honorTaints)
	for i, v := range sd.vals {
		for _, c := range sd.cands[i] {
			if !mustFit || g.req.fitsIn(c.shape.alloc) {
				out.note(v, c.price)
				break
			}
		}
	}
	switch {
	case withBins && !mustFit:
		p.noteCountedBins(out, g, alts, key, honorTaints)
	case withBins || len(out.vals) == 0:
		for _, b := range p.bins {
			if v, ok := b.labels[key]; ok && b.admits(g, nil) {
				out.note(v, 0)
			}
		}
	}
	return out.asMap()
}

// shapeDomains is what the shapes of some pools offer on one key under one list of
// alternatives: each domain (vals[i]) with the shapes a node of which can have it (a shape's
// first alternative compatible with it, key aside, decides), cheapest first (cands[i]).
type shapeDomains struct {
	alts  []nodeplan.Requirements // what it was worked out for: a copy
	vals  []string
	cands [][]domainCand
}

// domainCand is a shape that can have a domain, at the cheapest price it has there: its
// offerings' in a zone, its cheapest for another key.
type domainCand struct {
	price float64
	shape *shape
}

// domainMemo holds the shapeDomains of one problem, by key, pools and the alternatives'
// text; entries whose text matches are told apart by comparing the alternatives.
type domainMemo struct {
	byKey map[string][]*shapeDomains
	buf   []byte
}

// shapeDomainsFor returns the shapeDomains of alts on key over the pools g may use (every pool
// when honorTaints is false), from the problem's memo.
func (p *problem) shapeDomainsFor(g *group, alts []nodeplan.Requirements, key string, honorTaints bool) *shapeDomains {
	m := &p.domainMemo
	if m.byKey == nil {
		m.byKey = map[string][]*shapeDomains{}
	}
	b := strconv.AppendInt(m.buf[:0], int64(len(key)), 10)
	b = append(append(b, ':'), key...)
	for _, pl := range p.pools {
		_, blocked := nodeplan.UntoleratedTaint(g.tolerations, pl.np.Template.Taints)
		b = strconv.AppendBool(b, blocked && honorTaints)
	}
	for _, alt := range alts {
		b = append(append(b, '|'), alt.String()...)
	}
	m.buf = b
	for _, sd := range m.byKey[string(b)] {
		if slices.EqualFunc(sd.alts, alts, nodeplan.Requirements.Equal) {
			return sd
		}
	}
	sd := p.newShapeDomains(g, alts, key, honorTaints)
	m.byKey[string(b)] = append(m.byKey[string(b)], sd)
	return sd
}

// newShapeDomains works out the shapeDomains of alts on key over the pools g may use (every
// pool when honorTaints is false).
func (p *problem) newShapeDomains(g *group, alts []nodeplan.Requirements, key string, honorTaints bool) *shapeDomains {
	sd := &shapeDomains{alts: slices.Clone(alts)}
	views := altViews(alts, key)
	for _, pl := range p.pools {
		if _, blocked := nodeplan.UntoleratedTaint(g.tolerations, pl.np.Template.Taints); blocked && honorTaints {
			continue
		}
		for _, s := range pl.shapes {
			if i := compatibleAlt(s, alts, key); i >= 0 {
				sd.addShape(s, &views[i], key)
			}
		}
	}
	for _, cands := range sd.cands {
		slices.SortStableFunc(cands, func(a, b domainCand) int { return cmp.Compare(a.price, b.price) })
	}
	return sd
}

// addShape notes the domains of key a node of shape s can have under alt: zones and capacity
// types from its offerings (at their prices), other keys from its requirements (at its
// cheapest price).
func (sd *shapeDomains) addShape(s *shape, alt *altView, key string) {
	switch key {
	case nodeplan.LabelZone, nodeplan.LabelCapacityType:
		// Offerings decide both: a zone may offer only some capacity types (a shape's
		// requirements list every capacity type of any of its zones).
		for _, o := range s.offerings {
			v := o.Zone
			if key == nodeplan.LabelCapacityType {
				v = string(o.CapacityType)
			}
			if (!alt.has || alt.want.Accepts(v, true)) && alt.accepts(o) {
				sd.add(v, o.Price, s)
			}
		}
		return
	}
	r, ok := s.reqs.get(key)
	if !ok || r.Len() == math.MaxInt {
		return
	}
	for _, v := range r.Values() {
		if !alt.has || alt.want.Accepts(v, true) {
			sd.add(v, s.minPrice, s)
		}
	}
}

// add notes shape s in domain v at price, keeping one entry per shape (its cheapest).
func (sd *shapeDomains) add(v string, price float64, s *shape) {
	i := slices.Index(sd.vals, v)
	if i < 0 {
		i = len(sd.vals)
		sd.vals = append(sd.vals, v)
		sd.cands = append(sd.cands, nil)
	}
	c := sd.cands[i]
	if n := len(c); n > 0 && c[n-1].shape == s {
		c[n-1].price = min(c[n-1].price, price)
		return
	}
	sd.cands[i] = append(c, domainCand{price: price, shape: s})
}

// domainPrices collects domains (values of a topology key) with the cheapest price seen in
// each. A key has few values (zones): a short list searched in order costs less than a map.
type domainPrices struct {
	vals   []string
	prices []float64
}

func (d *domainPrices) note(v string, price float64) {
	for i, u := range d.vals {
		if u == v {
			d.prices[i] = min(d.prices[i], price)
			return
		}
	}
	d.vals = append(d.vals, v)
	d.prices = append(d.prices, price)
}

// asMap returns the domains noted, each with its cheapest price.
func (d *domainPrices) asMap() map[string]float64 {
	out := make(map[string]float64, len(d.vals))
	for i, v := range d.vals {
		out[v] = d.prices[i]
	}
	return out
}

// compatibleAlt returns the index of the first of alts the shape s can satisfy, key aside, or -1.
func compatibleAlt(s *shape, alts []nodeplan.Requirements, key string) int {
	for i := range alts {
		if s.reqs.compatibleIgnoring(alts[i], key) {
			return i
		}
	}
	return -1
}

// altView is what noteShape reads of an alternative: its requirements on the key and, as
// Offering.Accepts reads them, on zone and capacity type — looked up once per domainsFor, not
// once per shape and offering.
type altView struct {
	want nodeplan.Requirement
	has  bool
	offeringReqs
}

func altViews(alts []nodeplan.Requirements, key string) []altView {
	views := make([]altView, len(alts))
	for i, a := range alts {
		v := &views[i]
		v.want, v.has = a.Get(key)
		v.zone, v.hasZone = a.Get(nodeplan.LabelZone)
		v.ct, v.hasCT = a.Get(nodeplan.LabelCapacityType)
	}
	return views
}

// noteCountedBins notes the domains of the existing nodes a spread counts, as kube-scheduler
// does: every node with the key whose labels the pod's node affinity (alts) accepts, and, only
// when the policy honours taints, that the pod tolerates — whether or not the pod fits there
// or may go there today.
func (p *problem) noteCountedBins(d *domainPrices, g *group, alts []nodeplan.Requirements, key string, honorTaints bool) {
	for _, b := range p.bins {
		v, ok := b.labels[key]
		if !ok {
			continue
		}
		if _, blocked := nodeplan.UntoleratedTaint(g.tolerations, b.taints); blocked && honorTaints {
			continue
		}
		for _, alt := range alts {
			if b.reqs.Compatible(alt) == nil {
				d.note(v, 0)
				break
			}
		}
	}
}

// domainRoom is, for each of vals (values of key), the most pods of g that a split may send
// there: no limit (-1) where a pool g may use can launch a node in the domain that takes one
// of its pods; else what the existing nodes of the domain it may use hold in their free room.
// A share given to a domain nothing can take would only come back unplaced, explained by the
// pin rather than by the spread.
func (p *problem) domainRoom(g *group, key string, vals []string) []int {
	room := make([]int, len(vals))
	sd := p.shapeDomainsFor(g, g.alts, key, true)
	for i, v := range vals {
		if j := slices.Index(sd.vals, v); j >= 0 && slices.ContainsFunc(sd.cands[j], func(c domainCand) bool {
			return g.req.fitsIn(c.shape.alloc)
		}) {
			room[i] = -1
		}
	}
	for _, b := range p.bins {
		v, ok := b.labels[key]
		i := slices.Index(vals, v)
		if !ok || i < 0 || room[i] < 0 || !b.admits(g, nil) {
			continue
		}
		room[i] = min(room[i]+int(maxCopies(g.req, b.free0, g.room(nil, b.name))), len(g.pods))
	}
	return room
}
