package disruption

import (
	"context"
	"fmt"
	"math"
)

// singles simulates removing each viable candidate alone, in rank order pool by pool, within
// the pass's simulations (keeping a reserve for re-checks). Once a pool has twice as many
// feasible moves as its budget can take, its remaining candidates wait: they could only
// replace a better move.
func (m consolidation) singles(ctx context.Context, p *planner, viable []*nstate) ([]*option, error) {
	var opts []*option
	reserve := min(8, p.maxSims/4)
	found := map[string]int{}
	for _, s := range roundRobin(viable) {
		pool := s.in.NodePool
		if left := p.budgets.left(pool, m.reason()); left != math.MaxInt && found[pool] >= 2*left {
			s.blocked = p.budgets.blocked(pool, m.reason(), 1)
			s.blocked.Message += "; better-ranked moves are using it"
			continue
		}
		if p.sims >= p.maxSims-reserve {
			s.blocked = &Blocked{Code: CodeNotEvaluated, Message: fmt.Sprintf(
				"the pass reached its limit of %d simulations (Options.MaxSimulations) before evaluating the node; a later pass will", p.maxSims)}
			continue
		}
		o, bl, err := m.evaluate(ctx, p, []*nstate{s})
		if err != nil {
			return nil, err
		}
		if bl != nil {
			s.blocked = bl
			continue
		}
		found[pool]++
		opts = append(opts, o)
	}
	return opts, nil
}
