package disruption

import (
	"context"
	"slices"

	"github.com/nodeplan/nodeplan"
)

// MethodExpiration replaces nodes past their pool's expireAfter.
const MethodExpiration Methods = 1 << 1

// expiration replaces nodes older than their pool's expireAfter, oldest first: at once, like
// Karpenter, or within budgets and their schedules when Options.ExpirationHonorsBudgets is set.
// Unlike Karpenter it pre-launches replacements and waits for them.
type expiration struct{}

func (expiration) name() string                      { return "expiration" }
func (expiration) kind() Methods                     { return MethodExpiration }
func (expiration) reason() nodeplan.DisruptionReason { return nodeplan.ReasonExpired }
func (expiration) stage() stage                      { return stageManaged }
func (expiration) mode(*nstate) Mode                 { return ModeForceful }

func (expiration) take(p *planner, s *nstate) (bool, *Blocked) {
	ea := s.pool.Template.ExpireAfter
	if ea <= 0 || ea == nodeplan.Never || s.in.Created.IsZero() || p.now.Before(s.in.Created.Add(ea)) {
		return false, nil
	}
	s.dest = false
	return true, nil
}

func (m expiration) plan(ctx context.Context, p *planner, nodes []*nstate) error {
	list := slices.Clone(nodes)
	slices.SortStableFunc(list, func(x, y *nstate) int { return x.in.Created.Compare(y.in.Created) })
	if !p.opts.ExpirationHonorsBudgets {
		return forceful(ctx, p, m, list)
	}
	var ok []*nstate
	for _, s := range list {
		if bl := p.budgets.fits(map[string]int{s.in.NodePool: 1}, m.reason()); bl != nil {
			s.blocked = bl
			s.dest = false
			continue
		}
		p.budgets.take(map[string]int{s.in.NodePool: 1})
		ok = append(ok, s)
	}
	return forcefulAdmitted(ctx, p, m, ok)
}
