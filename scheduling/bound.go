package scheduling

import "math"

// lowerBound returns a $/h no plan placing counts[g] pods of every group can beat, the pod
// values behind it, and the column-generation result it came from (see colgen.go for the
// configuration LP and why its bound is valid at every iteration).
//
// Existing room is free but finite: a bin can hold at most the value of the pods that may go
// there, and at most its free capacity times the best value per unit of each resource that
// every such pod needs; the smaller of the two is subtracted.
func (p *problem) lowerBound(counts []int64) (float64, cgResult) {
	cg := p.columnGeneration(counts, p.shapes)
	if p.in.Options.SkipLowerBound || p.noProof {
		return 0, cg
	}
	total := cg.lb
	ks := &intKnapsack{p: p}
	for _, b := range p.bins {
		podValue, capValue := 0.0, math.Inf(1)
		var admitted []*group
		for _, g := range p.groups {
			if counts[g.id] > 0 && cg.values[g.id] > 0 && b.mayHold(g) && g.req.fitsIn(b.free0) {
				admitted = append(admitted, g)
				podValue += float64(counts[g.id]) * cg.values[g.id]
			}
		}
		if len(admitted) == 0 {
			continue
		}
		if len(p.bins) <= exactBins {
			// Few bins: bound what each can hold by the knapsack over its free room.
			total -= min(podValue, ks.binBound(b, admitted, cg.values, counts))
			continue
		}
		for d, free := range b.free0 {
			best, valid := 0.0, true
			for _, g := range admitted {
				if g.req[d] <= 0 {
					valid = false
					break
				}
				best = max(best, cg.values[g.id]/float64(g.req[d]))
			}
			if valid {
				capValue = min(capValue, float64(max(free, 0))*best)
			}
		}
		total -= min(podValue, capValue)
	}
	return max(total, 0), cg
}

// pureValues prices one pod of each group at the cheapest cost per pod of a node holding that
// group alone: a quick stand-in for the LP's values when no bound is wanted.
func (p *problem) pureValues() []float64 {
	values := make([]float64, len(p.groups))
	for _, s := range p.shapes {
		for _, f := range p.byShape[s.idx] {
			g := p.groups[f.g]
			k := maxCopies(g.req, s.alloc, g.room(nil, ""))
			if k <= 0 {
				continue
			}
			price, _ := s.priceFor(f.mask)
			if v := price / float64(k); values[f.g] == 0 || v < values[f.g] {
				values[f.g] = v
			}
		}
	}
	return values
}

// exactBins is the most existing nodes whose room the bound measures with a knapsack each;
// beyond it a per-resource bound is used (valid, looser, linear time).
const exactBins = 200

// binBound is an upper bound on the value of pods that fit in an existing node's free room.
func (k *intKnapsack) binBound(b *bin, admitted []*group, values []float64, counts []int64) float64 {
	s := &shape{alloc: b.free0.clone().nonNegative()}
	f := &colFamily{s: s, price: 1}
	v := make([]float64, len(admitted))
	for i, g := range admitted {
		if it, ok := k.p.newFamItem(s, i, g.id, fitEntry{g: g.id}, counts); ok {
			f.items = append(f.items, it)
		}
		v[i] = values[g.id]
	}
	_, _, upper := k.solve(f, v, counts, knapsackQuick, 0)
	return upper
}
