package scheduling

// splitForMinValues splits claim c, whose instance-type options cannot meet its pool's
// minValues together, into claims whose options can: its pods one at a time, in its order,
// each joining the last new claim while that claim's options still meet minValues, else
// starting the next. Each new claim keeps c's shape and offerings (any subset of c's pods fits
// them) and is added to lb, its launch request costed at its own cheapest option. It returns
// the new claims and the pods none could take: a pod whose options alone miss minValues.
//
// Only a claim whose pods may go to separate nodes is split — no group in it must share a
// node with another (hostname self-affinity, a group that follows another onto its nodes, a
// pending partner) — and only in a pool without limits: every new node would take from the
// slack that claimGrowth already shared among the planned claims' fallbacks.
func (lb *launchBuilder) splitForMinValues(st *packState, c *claim) (parts []*claim, left []placement) {
	p := lb.p
	if !lb.splittable(c) {
		return nil, c.placed
	}
	var cur *claim
	for _, x := range c.placed {
		for range x.k {
			if cur != nil && lb.admits(cur, x.g, p.groups[x.g].req) {
				cur.put(x.g, p.groups[x.g].req)
				continue
			}
			if cur != nil {
				parts = append(parts, cur)
			}
			cur = &claim{shape: c.shape, mask: c.mask, used: make(vec, len(c.used))}
			if !lb.admits(cur, x.g, p.groups[x.g].req) {
				left = appendPlacement(left, x.g)
				cur = nil
				continue
			}
			cur.put(x.g, p.groups[x.g].req)
		}
	}
	if cur != nil {
		parts = append(parts, cur)
	}
	var out []*claim
	for _, part := range parts {
		if !lb.add(part) { // not expected: admits built this very claim
			left = append(left, part.placed...)
			continue
		}
		if len(out) > 0 { // the first keeps c's node; each other is one more
			st.usage[c.shape.pool.idx].nodes++
			st.usage[c.shape.pool.idx].used.add(c.shape.capacity)
		}
		out = append(out, part)
	}
	return out, left
}

// splittable reports whether c's pods may go to separate nodes of an unlimited pool (see
// splitForMinValues).
func (lb *launchBuilder) splittable(c *claim) bool {
	p := lb.p
	pl := c.shape.pool
	if pl.nodeLimit >= 0 || anyTrue(pl.limited) {
		return false
	}
	on := map[int]bool{}
	for _, x := range c.placed {
		on[x.g] = true
	}
	for _, x := range c.placed {
		g := p.groups[x.g]
		if g.single != nil || g.with != nil || g.partner != nil {
			return false
		}
	}
	for _, g := range p.groups {
		if g.with != nil && on[g.with.id] {
			return false
		}
	}
	return true
}

// admits reports whether claim c with one more pod of group g (requests req) has options that
// meet its pool's minValues. It builds the request and forgets it.
func (lb *launchBuilder) admits(c *claim, g int, req vec) bool {
	trial := &claim{shape: c.shape, mask: c.mask, used: c.used.clone(), placed: appendPlacement(append([]placement(nil), c.placed...), g)}
	trial.used.add(req)
	_, ok := lb.newNodeClaim(trial)
	return ok
}

// put adds one pod of group g (requests req) to c.
func (c *claim) put(g int, req vec) {
	c.used.add(req)
	c.placed = appendPlacement(c.placed, g)
}

// appendPlacement adds one pod of group g to placed, to its last entry when that is g's.
func appendPlacement(placed []placement, g int) []placement {
	if n := len(placed); n > 0 && placed[n-1].g == g {
		placed[n-1].k++
		return placed
	}
	return append(placed, placement{g: g, k: 1})
}
