package disruption

import "context"

// forcefulBatches is how many simulations interruption and expiration each spend at most: their
// nodes are simulated in that many groups, whatever their number.
const forcefulBatches = 4

// forceful issues method m's commands for list outside budgets, though each node counts
// against its pool's budget, so graceful methods get only what is left.
func forceful(ctx context.Context, p *planner, m method, list []*nstate) error {
	for _, s := range list {
		p.budgets.take(map[string]int{s.in.NodePool: 1})
	}
	return forcefulAdmitted(ctx, p, m, list)
}

// forcefulAdmitted issues method m's commands for nodes whose budget is already taken. Their
// evictions use PDB allowances first, so graceful moves get only what is left.
func forcefulAdmitted(ctx context.Context, p *planner, m method, list []*nstate) error {
	for _, s := range list {
		s.dest = false
	}
	for _, batch := range chunk(list, forcefulBatches) {
		// A forceful command goes ahead even when its moves break an earlier one's: its
		// simulation's result is then made around the earlier moves as they are.
		sim, err := p.simulate(ctx, batch)
		if err != nil {
			return err
		}
		p.pdbs.take(p.pdbs.needForced(podsOf(batch)))
		p.commit(p.command(m, batch, sim), batch)
	}
	return nil
}
