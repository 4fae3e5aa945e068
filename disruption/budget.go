package disruption

import (
	"fmt"
	"math"
	"time"

	"github.com/nodeplan/nodeplan"
)

// budgets tracks, per NodePool, how many nodes are disrupting as commands are added in a pass.
// A budget caps nodes disrupting at once for any reason, so every command — whatever its
// reason — adds to the count every later check sees.
type budgets struct {
	now   time.Time
	pools map[string]*poolBudget
}

type poolBudget struct {
	pool       *nodeplan.NodePool
	total      int // initialized nodes of the pool: what percentages are of
	disrupting int // already disrupting at the start, plus planned this pass
	start      int // disrupting at the start of the pass
}

func newBudgets(now time.Time, pools map[string]*nodeplan.NodePool, nodes []Node) *budgets {
	b := &budgets{now: now, pools: map[string]*poolBudget{}}
	for name, p := range pools {
		b.pools[name] = &poolBudget{pool: p}
	}
	for i := range nodes {
		n := &nodes[i]
		pb := b.pools[n.NodePool]
		if pb == nil {
			continue
		}
		if !n.Initialized.IsZero() {
			pb.total++
		}
		if n.Disrupting {
			pb.disrupting++
			pb.start++
		}
	}
	return b
}

// left returns how many more of pool's nodes may be disrupted for reason now; math.MaxInt when
// no budget limits the reason.
func (b *budgets) left(pool string, reason nodeplan.DisruptionReason) int {
	pb := b.pools[pool]
	if pb == nil {
		return 0
	}
	allowed := pb.pool.Disruption.AllowedDisruptions(reason, pb.total, b.now)
	if allowed == math.MaxInt {
		return allowed
	}
	return max(allowed-pb.disrupting, 0)
}

// fits reports whether count nodes per pool may be disrupted for reason, and if not a blocker
// naming the budget.
func (b *budgets) fits(count map[string]int, reason nodeplan.DisruptionReason) *Blocked {
	for _, pool := range sortedPools(count) {
		if b.left(pool, reason) < count[pool] {
			return b.blocked(pool, reason, count[pool])
		}
	}
	return nil
}

func (b *budgets) take(count map[string]int) {
	for pool, c := range count {
		if pb := b.pools[pool]; pb != nil {
			pb.disrupting += c
		}
	}
}

// blocked explains why pool cannot disrupt want more nodes for reason.
func (b *budgets) blocked(pool string, reason nodeplan.DisruptionReason, want int) *Blocked {
	pb := b.pools[pool]
	bud, idx, _ := pb.pool.Disruption.ActiveBudget(reason, pb.total, b.now)
	object := fmt.Sprintf("%s/budgets[%d]", pool, idx)
	which := fmt.Sprintf("budget %d (nodes %q", idx, bud.Nodes.String())
	if pb.pool.Disruption.Budgets == nil {
		object = pool + "/budgets[default]"
		which = fmt.Sprintf("the default budget (nodes %q", bud.Nodes.String())
	}
	if bud.Schedule != nil {
		which += fmt.Sprintf(", schedule %q for %s", bud.Schedule.String(), bud.Duration)
	}
	which += ")"
	allowed := bud.Nodes.Of(pb.total)
	planned := pb.disrupting - pb.start
	msg := fmt.Sprintf("NodePool %s: %s allows %d of its %d nodes to be disrupted for %s now; %d already disrupting",
		pool, which, allowed, pb.total, reason, pb.start)
	if planned > 0 {
		msg += fmt.Sprintf(" and %d planned this pass", planned)
	}
	if want > 1 {
		msg += fmt.Sprintf("; the move needs %d", want)
	}
	return &Blocked{Code: CodeBudget, Object: object, Message: msg}
}

func sortedPools(count map[string]int) []string {
	out := make([]string, 0, len(count))
	for p := range count {
		out = append(out, p)
	}
	sortStrings(out)
	return out
}
