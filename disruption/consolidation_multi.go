package disruption

import "context"

// multiNode searches prefixes of the ranked candidates, as Karpenter does, by bisection on the
// prefix length — but keeps the feasible prefix that saves the most per unit of disruption
// instead of the last one found, and takes M→N replacements. Candidates are admitted in rank order only while their
// pools' budgets and the PDBs can take them all together.
func (m consolidation) multiNode(ctx context.Context, p *planner, viable []*nstate) (*option, error) {
	var list []*nstate
	count := map[string]int{}
	var need pdbNeed
	for _, s := range viable {
		if len(list) == p.opts.maxCandidates() {
			break
		}
		if count[s.in.NodePool] >= p.budgets.left(s.in.NodePool, m.reason()) {
			continue
		}
		n, bl := p.pdbs.need(s.movable)
		if bl != nil {
			continue
		}
		if p.pdbs.check(need.add(n)) != nil {
			continue
		}
		need = need.add(n)
		count[s.in.NodePool]++
		list = append(list, s)
	}
	if len(list) < 2 {
		return nil, nil
	}
	var best *option
	lo, hi := 1, len(list)-1
	for lo <= hi && p.canSimulate() {
		mid := (lo + hi) / 2
		o, bl, err := m.evaluate(ctx, p, list[:mid+1])
		if err != nil {
			return nil, err
		}
		if bl != nil {
			hi = mid - 1
			continue
		}
		if best == nil || better(o, best) {
			best = o
		}
		lo = mid + 1
	}
	return best, nil
}
