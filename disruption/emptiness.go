package disruption

import (
	"cmp"
	"context"
	"slices"

	"github.com/nodeplan/nodeplan"
)

// MethodEmptiness deletes nodes without reschedulable pods.
const MethodEmptiness Methods = 1 << 2

// emptiness deletes nodes with no pods but DaemonSet and mirror pods, under every consolidation
// policy, once consolidateAfter has passed: most expensive first, as far as budgets allow, with
// no simulation.
type emptiness struct{}

func (emptiness) name() string                      { return "emptiness" }
func (emptiness) kind() Methods                     { return MethodEmptiness }
func (emptiness) reason() nodeplan.DisruptionReason { return nodeplan.ReasonEmpty }
func (emptiness) stage() stage                      { return stageSettled }
func (emptiness) mode(*nstate) Mode                 { return ModeGraceful }

func (emptiness) take(_ *planner, s *nstate) (bool, *Blocked) { return len(s.movable) == 0, nil }

func (m emptiness) plan(_ context.Context, p *planner, nodes []*nstate) error {
	list := slices.Clone(nodes)
	slices.SortStableFunc(list, func(x, y *nstate) int { return cmp.Compare(y.price, x.price) })
	for _, s := range list {
		if s.gone {
			continue
		}
		if s.receives {
			s.blocked = receivesBlocker()
			continue
		}
		one := map[string]int{s.in.NodePool: 1}
		if bl := p.budgets.fits(one, m.reason()); bl != nil {
			s.blocked = bl
			continue
		}
		p.budgets.take(one)
		p.commit(p.command(m, []*nstate{s}, simulation{}), []*nstate{s})
	}
	return nil
}
