package disruption

import (
	"context"
	"slices"

	"github.com/nodeplan/nodeplan"
)

// MethodInterruption drains nodes with a spot interruption, rebalance or health notice.
const MethodInterruption Methods = 1 << 0

// interruption drains nodes with a provider notice (spot interruption, scheduled change) at
// once, outside budgets, soonest deadline first, with replacements launched for their pods in
// the same command. The drain does not wait for them: the instance is going away.
type interruption struct{}

func (interruption) name() string                      { return "interruption" }
func (interruption) kind() Methods                     { return MethodInterruption }
func (interruption) reason() nodeplan.DisruptionReason { return nodeplan.ReasonInterrupted }
func (interruption) stage() stage                      { return stageManaged }
func (interruption) mode(*nstate) Mode                 { return ModeImmediate }

func (interruption) take(_ *planner, s *nstate) (bool, *Blocked) {
	if s.in.Interruption == nil {
		return false, nil
	}
	s.dest = false
	return true, nil
}

func (m interruption) plan(ctx context.Context, p *planner, nodes []*nstate) error {
	list := slices.Clone(nodes)
	slices.SortStableFunc(list, func(x, y *nstate) int {
		return x.in.Interruption.Deadline.Compare(y.in.Interruption.Deadline)
	})
	return forceful(ctx, p, m, list)
}
