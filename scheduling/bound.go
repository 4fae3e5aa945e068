package scheduling

import "math"

// lowerBound returns a $/h no plan placing counts[g] pods of every group can beat, the pod
// values behind it, and the column-generation result it came from (see patterns.go for the
// configuration LP and why its bound is valid at every iteration).
//
// Existing room is free but finite: a bin can hold at most the value of the pods that may go
// there, and at most its free capacity times the best value per unit of each resource that
// every such pod needs; the smaller of the two is subtracted.
func (p *problem) lowerBound(counts []int64) (float64, cgResult) {
	cg := p.columnGeneration(counts, p.shapes)
	total := cg.lb
	for _, b := range p.bins {
		podValue, capValue := 0.0, math.Inf(1)
		var admitted []*group
		for _, g := range p.groups {
			if counts[g.id] > 0 && cg.values[g.id] > 0 && b.mayHold(g) {
				admitted = append(admitted, g)
				podValue += float64(counts[g.id]) * cg.values[g.id]
			}
		}
		if len(admitted) == 0 {
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
