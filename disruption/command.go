package disruption

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// command builds the command of method m that removes set, given what the simulation found.
// Its reason and mode are the method's.
func (p *planner) command(m method, set []*nstate, sim simulation) Command {
	c := Command{Action: ActionDelete, Reason: m.reason(), Mode: m.mode(set[0])}
	pools := map[string]int{}
	for _, s := range set {
		c.Nodes = append(c.Nodes, s.name)
		pools[s.in.NodePool]++
		c.Price += s.price
		c.Disruption += s.disruption
		for _, pod := range s.movable {
			c.Pods = append(c.Pods, nodeplan.PodKey(pod))
		}
	}
	sortStrings(c.Nodes)
	sortStrings(c.Pods)
	c.NodePools = sortedPools(pools)
	c.OneAtATime = p.pdbs.oneAtATime(set)
	c.Moves = sim.result.Existing
	c.Replacements = p.nameClaims(c.Nodes[0], p.prices.band(sim.result.NodeClaims))
	for _, u := range sim.result.Unschedulable {
		c.Unplaced = append(c.Unplaced, u.Pod)
	}
	if !sim.done && len(c.Pods) > 0 {
		c.Unplaced = slices.Clone(c.Pods) // never simulated
	}
	if len(c.Replacements) > 0 {
		c.Action = ActionReplace
	}
	c.ReplacementPrice = p.prices.judgedPrice(c.Replacements)
	c.Savings = c.Price - c.ReplacementPrice
	return c
}

// nameClaims gives replacement claims names unique within the plan: the first node replaced,
// "-replacement-", and the claim's index.
func (p *planner) nameClaims(first string, claims []scheduling.NewNodeClaim) []scheduling.NewNodeClaim {
	if len(claims) == 0 {
		return nil
	}
	out := slices.Clone(claims)
	for i := range out {
		out[i].Name = fmt.Sprintf("%s-replacement-%d", first, i)
	}
	return out
}

func podsOf(set []*nstate) []*corev1.Pod {
	var out []*corev1.Pod
	for _, s := range set {
		out = append(out, s.movable...)
	}
	return out
}

// chunk splits list into at most n groups of near-equal size, in order.
func chunk(list []*nstate, n int) [][]*nstate {
	var out [][]*nstate
	for _, g := range chunkN(len(list), n) {
		out = append(out, list[g[0]:g[1]])
	}
	return out
}

// chunkN splits [0, total) into at most n contiguous ranges of near-equal size.
func chunkN(total, n int) [][2]int {
	if total == 0 {
		return nil
	}
	n = min(max(n, 1), total)
	var out [][2]int
	for i := range n {
		out = append(out, [2]int{i * total / n, (i + 1) * total / n})
	}
	return out
}

func negate(n pdbNeed) pdbNeed {
	out := make(pdbNeed, len(n))
	for k, v := range n {
		out[k] = -v
	}
	return out
}
