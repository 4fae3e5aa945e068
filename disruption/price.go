package disruption

import (
	"fmt"
	"slices"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// pricer prices existing nodes and replacements from the catalog, for one pass.
type pricer struct {
	in      *Input
	opts    Options
	types   map[string]map[string]*nodeplan.InstanceType // by pool, then name; see typesFor
	lbCPU   float64                                      // least $/h per allocatable core in the catalog
	lbMem   float64                                      // least $/h per allocatable GiB
	largest vec                                          // the most cpu, memory and pods any instance type offers, each
}

func newPricer(in *Input) *pricer {
	pc := &pricer{in: in, opts: in.Options, types: map[string]map[string]*nodeplan.InstanceType{}}
	pc.lbCPU, pc.lbMem, pc.largest = pc.resourcePrices()
	return pc
}

// typesFor returns pool's instance types by name.
func (pc *pricer) typesFor(pool string) map[string]*nodeplan.InstanceType {
	if m, ok := pc.types[pool]; ok {
		return m
	}
	list := pc.in.InstanceTypes
	if l, ok := pc.in.PoolInstanceTypes[pool]; ok {
		list = l
	}
	m := make(map[string]*nodeplan.InstanceType, len(list))
	for i := range list {
		m[list[i].Name] = &list[i]
	}
	pc.types[pool] = m
	return m
}

// nodePrice is the node's own price, or the catalog's for its type, zone and capacity type.
func (pc *pricer) nodePrice(n *Node) float64 {
	if n.Price > 0 {
		return n.Price
	}
	it := pc.typesFor(n.NodePool)[n.InstanceType]
	if it == nil {
		return 0
	}
	for _, o := range it.Offerings {
		if o.Zone == n.Zone && o.CapacityType == n.CapacityType {
			return o.Price
		}
	}
	return 0
}

// resourcePrices returns the least $/h any instance type in the catalog charges per
// allocatable core and per allocatable GiB. A replacement for pods needing c cores and m GiB
// cannot cost less than max(c·cpu, m·mem), whatever the packing: the screen that spares a
// simulation when no replacement can be cheap enough. largest is the most of each resource
// any instance type offers, available or not: a pod asking more fits no new node.
func (pc *pricer) resourcePrices() (cpu, mem float64, largest vec) {
	lists := [][]nodeplan.InstanceType{pc.in.InstanceTypes}
	for _, name := range sortedMapKeys(pc.in.PoolInstanceTypes) {
		lists = append(lists, pc.in.PoolInstanceTypes[name])
	}
	first := true
	for _, list := range lists {
		for i := range list {
			it := &list[i]
			a := toVec(it.Allocatable())
			largest = vec{max(largest.cpu, a.cpu), max(largest.mem, a.mem), max(largest.pods, a.pods)}
			best := 0.0
			for _, o := range it.Offerings {
				if o.Available && o.Price > 0 && (best == 0 || o.Price < best) {
					best = o.Price
				}
			}
			if best == 0 {
				continue
			}
			c, m := 0.0, 0.0
			if a.cpu > 0 {
				c = best / a.cpuCores()
			}
			if a.mem > 0 {
				m = best / a.memGiB()
			}
			if first {
				cpu, mem, first = c, m, false
				continue
			}
			cpu, mem = min(cpu, c), min(mem, m)
		}
	}
	return cpu, mem, largest
}

// lowerBound is the least any set of new nodes for pods needing v could cost.
func (pc *pricer) lowerBound(v vec) float64 {
	return max(v.cpuCores()*pc.lbCPU, v.memGiB()*pc.lbMem)
}

// band trims each claim's options to those whose worst launch price is within
// launchFlexibility of its cheapest option's, so a replacement made for drift, expiry or an
// interruption costs about what the solver chose, whatever the cloud launches.
func (pc *pricer) band(claims []scheduling.NewNodeClaim) []scheduling.NewNodeClaim {
	out := make([]scheduling.NewNodeClaim, len(claims))
	for i, c := range claims {
		types := pc.typesFor(c.NodePool)
		var opts []pricedOption
		for _, name := range c.InstanceTypeOptions {
			if it := types[name]; it != nil {
				if w, ok := worstPrice(it, c.Requirements); ok {
					opts = append(opts, pricedOption{name, w})
				}
			}
		}
		if len(opts) == 0 {
			out[i] = c
			continue
		}
		least := opts[0].worst
		for _, o := range opts {
			least = min(least, o.worst)
		}
		var kept []pricedOption
		for _, o := range opts {
			if o.worst <= least*(1+launchFlexibility) {
				kept = append(kept, o)
			}
		}
		out[i] = pc.trimClaim(c, kept)
	}
	return out
}

// worstPrice is the most a node of type it could cost when launched under rs: the dearest
// available offering rs accepts. A cloud may pick any of them (the zone with capacity, spot or
// on-demand), so a saving is only certain at this price. ok is false when rs accepts none.
func worstPrice(it *nodeplan.InstanceType, rs nodeplan.Requirements) (price float64, ok bool) {
	for _, o := range it.Offerings {
		if o.Available && o.Accepts(rs) && (!ok || o.Price > price) {
			price, ok = o.Price, true
		}
	}
	return price, ok
}

// judgedPrice is the $/h a set of claims is judged at: each at the worst price of its dearest
// option. Claims for forceful and drift commands are not trimmed, so this can exceed what the
// solver expects to pay.
func (pc *pricer) judgedPrice(claims []scheduling.NewNodeClaim) float64 {
	total := 0.0
	for i := range claims {
		c := &claims[i]
		types := pc.typesFor(c.NodePool)
		worst := c.Offering.Price
		for _, name := range c.InstanceTypeOptions {
			if it := types[name]; it != nil {
				if w, ok := worstPrice(it, c.Requirements); ok && w > worst {
					worst = w
				}
			}
		}
		total += worst + pc.nodeCost(c.NodePool)
	}
	return total
}

// nodeCost is what a node of the pool costs beyond its instance's price
// (Options.Scheduling.NodeCost): added to the price of every node the planner weighs, existing
// or replacement, as the solver adds it to every offering.
func (pc *pricer) nodeCost(pool string) float64 { return pc.opts.Scheduling.NodeCost.For(pool) }

// launchFlexibility is how much dearer than the cheapest a replacement's other instance-type
// options may be: room for the cloud to find capacity, at a bounded cost to the saving.
const launchFlexibility = 0.10

type pricedOption struct {
	name  string
	worst float64
}

// judgeReplacement decides whether replacing set (costing price) by claims saves enough, and
// trims the claims so it does whatever the cloud launches:
//
//  1. A claim that accepts both spot and on-demand is pinned to spot (as Karpenter does), so a
//     spot shortage cannot fall back to a dearer on-demand node.
//  2. A 1→1 replacement may not launch as the node's own instance type and capacity type
//     (like-for-like churn).
//  3. Each option is judged at its worst launch price; the claims' cheapest options must save
//     at least the threshold. The slack left over is shared among the claims, and options
//     dearer than their share are dropped.
//  4. A spot→spot replacement of one node needs Options.SpotFlexibility options strictly
//     cheaper than the node, and is cut to that many cheapest.
//
// It returns the trimmed claims and the price they are judged at, or why the move is refused.
func (pc *pricer) judgeReplacement(set []*nstate, price float64, claims []scheduling.NewNodeClaim) ([]scheduling.NewNodeClaim, float64, *Blocked) {
	if price <= 0 {
		return nil, 0, &Blocked{Code: CodeUnknownPrice, Message: fmt.Sprintf(
			"its pods need %d new node(s) and the price of %s is unknown, so no replacement can be judged cheaper", len(claims), names(set))}
	}
	allSpot := true
	for _, s := range set {
		if s.in.CapacityType != nodeplan.CapacityTypeSpot {
			allSpot = false
		}
	}
	oneToOne := len(set) == 1 && len(claims) == 1
	out := make([]scheduling.NewNodeClaim, len(claims))
	opts := make([][]pricedOption, len(claims))
	spotOnly := make([]bool, len(claims))
	likeForLike := ""
	sumMin := 0.0
	for i, c := range claims {
		types := pc.typesFor(c.NodePool)
		rs := c.Requirements
		if pc.acceptsBoth(c, types) {
			rs = rs.Add(nodeplan.In(nodeplan.LabelCapacityType, string(nodeplan.CapacityTypeSpot)))
		}
		spotOnly[i] = onlySpot(c, rs, types)
		for _, name := range c.InstanceTypeOptions {
			it := types[name]
			if it == nil {
				continue
			}
			w, ok := worstPrice(it, rs)
			if !ok {
				continue
			}
			w += pc.nodeCost(c.NodePool)
			if oneToOne && name == set[0].in.InstanceType && offersCapacityType(it, rs, set[0].in.CapacityType) {
				likeForLike = name
				continue
			}
			opts[i] = append(opts[i], pricedOption{name, w})
		}
		slices.SortStableFunc(opts[i], func(a, b pricedOption) int {
			switch {
			case a.worst < b.worst:
				return -1
			case a.worst > b.worst:
				return 1
			}
			return 0
		})
		if len(opts[i]) == 0 {
			if likeForLike != "" {
				return nil, 0, &Blocked{Code: CodeLikeForLike, Object: likeForLike, Message: fmt.Sprintf(
					"the only replacement for %s is another %s %s node; replacing like for like would be churn",
					set[0].name, set[0].in.CapacityType, likeForLike)}
			}
			return nil, 0, &Blocked{Code: CodeNotCheaper, Message: fmt.Sprintf(
				"no instance type for replacement %d has an offering its requirements allow", i)}
		}
		c.Requirements = rs
		out[i] = c
		sumMin += opts[i][0].worst
	}
	thr := pc.opts.savingsThreshold()
	limit := price * (1 - thr)
	if sumMin >= price {
		return nil, 0, &Blocked{Code: CodeNotCheaper, Object: opts[0][0].name, Message: fmt.Sprintf(
			"its pods do not all fit on other nodes, and the cheapest replacement (%s) would cost up to $%.4f/h, not less than the $%.4f/h of %s now",
			describe(opts), sumMin, price, names(set))}
	}
	if sumMin > limit {
		return nil, 0, &Blocked{Code: CodeBelowThreshold, Object: opts[0][0].name, Message: fmt.Sprintf(
			"replacing %s ($%.4f/h) by %s would save only $%.4f/h (%.1f%%), below the %.0f%% savings threshold",
			names(set), price, describe(opts), price-sumMin, 100*(price-sumMin)/price, 100*thr)}
	}
	share := (limit - sumMin) / float64(len(out))
	judged := 0.0
	for i := range out {
		// Options that keep the saving whichever the cloud picks; of those, a spot→spot
		// replacement keeps the cheapest SpotFlexibility, anything else those within
		// launchFlexibility of the cheapest.
		ceiling := opts[i][0].worst + share
		var kept []pricedOption
		if allSpot && spotOnly[i] && len(set) == 1 {
			flex := pc.opts.spotFlexibility()
			if flex < 0 {
				return nil, 0, &Blocked{Code: CodeSpotFlexibility, Message: fmt.Sprintf(
					"%s is spot and its replacement would be spot too; spot-to-spot replacement is turned off (Options.SpotFlexibility < 0)", set[0].name)}
			}
			for _, o := range opts[i] {
				if o.worst <= ceiling && o.worst < price {
					kept = append(kept, o)
				}
			}
			if len(kept) < flex {
				return nil, 0, &Blocked{Code: CodeSpotFlexibility, Message: fmt.Sprintf(
					"spot-to-spot replacement of %s needs %d instance types that save at least %.0f%% of its $%.4f/h to launch from, and found %d",
					set[0].name, flex, 100*thr, price, len(kept))}
			}
			kept = kept[:flex]
		} else {
			ceiling = min(ceiling, opts[i][0].worst*(1+launchFlexibility))
			for _, o := range opts[i] {
				if o.worst <= ceiling || len(kept) == 0 {
					kept = append(kept, o)
				}
			}
		}
		judged += kept[len(kept)-1].worst
		out[i] = pc.trimClaim(out[i], kept)
	}
	return out, judged, nil
}

// acceptsBoth reports whether the claim could launch as spot or on-demand.
func (pc *pricer) acceptsBoth(c scheduling.NewNodeClaim, types map[string]*nodeplan.InstanceType) bool {
	spot, od := false, false
	for _, name := range c.InstanceTypeOptions {
		it := types[name]
		if it == nil {
			continue
		}
		for _, o := range it.Offerings {
			if !o.Available || !o.Accepts(c.Requirements) {
				continue
			}
			spot = spot || o.CapacityType == nodeplan.CapacityTypeSpot
			od = od || o.CapacityType == nodeplan.CapacityTypeOnDemand
		}
	}
	return spot && od
}

// onlySpot reports whether every offering rs lets the claim launch as is spot.
func onlySpot(c scheduling.NewNodeClaim, rs nodeplan.Requirements, types map[string]*nodeplan.InstanceType) bool {
	any := false
	for _, name := range c.InstanceTypeOptions {
		it := types[name]
		if it == nil {
			continue
		}
		for _, o := range it.Offerings {
			if o.Available && o.Accepts(rs) {
				if o.CapacityType != nodeplan.CapacityTypeSpot {
					return false
				}
				any = true
			}
		}
	}
	return any
}

func offersCapacityType(it *nodeplan.InstanceType, rs nodeplan.Requirements, ct nodeplan.CapacityType) bool {
	for _, o := range it.Offerings {
		if o.Available && o.CapacityType == ct && o.Accepts(rs) {
			return true
		}
	}
	return false
}

// trimClaim narrows a claim to the kept options, cheapest first, and re-costs it at the
// cheapest offering of the first.
func (pc *pricer) trimClaim(c scheduling.NewNodeClaim, kept []pricedOption) scheduling.NewNodeClaim {
	types := pc.typesFor(c.NodePool)
	namesKept := make([]string, len(kept))
	for i, o := range kept {
		namesKept[i] = o.name
	}
	c.Requirements = c.Requirements.Add(nodeplan.In(nodeplan.LabelInstanceType, namesKept...))
	cheapest := make(map[string]nodeplan.Offering, len(kept))
	for _, name := range namesKept {
		cheapest[name], _ = types[name].Cheapest(c.Requirements)
	}
	// Options go cheapest first by their best offering, as the solver orders them.
	slices.SortStableFunc(namesKept, func(a, b string) int {
		switch pa, pb := cheapest[a].Price, cheapest[b].Price; {
		case pa < pb:
			return -1
		case pa > pb:
			return 1
		}
		return 0
	})
	c.InstanceTypeOptions = namesKept
	c.InstanceType, c.Offering = namesKept[0], cheapest[namesKept[0]]
	return c
}

func describe(opts [][]pricedOption) string {
	if len(opts) == 1 {
		return "1 " + opts[0][0].name
	}
	s := fmt.Sprintf("%d nodes:", len(opts))
	for i, o := range opts {
		if i > 0 {
			s += ","
		}
		s += " " + o[0].name
	}
	return s
}

func formatVec(v vec) string {
	return fmt.Sprintf("%.3g cpu, %.3gGiB memory, %d pods", v.cpuCores(), v.memGiB(), v.pods)
}
