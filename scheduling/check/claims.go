package check

import (
	"fmt"
	"maps"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// relTol is the relative tolerance on prices and costs.
const relTol = 1e-9

func priceLess(a, b float64) bool { return a < b-relTol*math.Max(1, math.Abs(b)) }

// claims checks each new claim on its own: pool, requirements, options and chosen offering.
func (c *checker) claims() {
	names := map[string]string{}
	for _, nc := range c.in.NodeClaims {
		if nc.Name != "" {
			names[nc.Name] = fmt.Sprintf("in-flight claim %q", nc.Name)
		}
	}
	for i := range c.res.NodeClaims {
		nc := &c.res.NodeClaims[i]
		t := c.newClaims[i]
		if len(nc.Pods) == 0 {
			c.fail(RuleClaim, t.desc, "has no pods; a claim is launched only for pods")
		}
		if nc.Name != "" {
			if other, dup := names[nc.Name]; dup {
				c.fail(RuleClaim, t.desc, "has the name of %s", other)
			}
			names[nc.Name] = t.desc
		}
		np := c.pools[nc.NodePool]
		if np == nil {
			c.fail(RuleClaim, t.desc, "names NodePool %q, which is not in the input", nc.NodePool)
			continue
		}
		if why := closed(np); why != "" {
			c.fail(RuleClaim, t.desc, "is launched for NodePool %q, which %s", nc.NodePool, why)
		}
		if len(nc.InstanceTypeOptions) == 0 {
			c.fail(RuleClaim, t.desc, "has no instance-type options")
		}
		c.claimRequirements(t, nc, np)
		c.claimOptions(t, nc)
		c.claimOffering(t, nc)
	}
}

// minValuesOf checks Karpenter's launch flexibility (claimOptions): for each requirement of
// the pool with minValues, the claim's options have that many distinct values of its key —
// unless the policy is BestEffort and the claim says it was relaxed. It returns what is wrong.
func minValuesOf(c *checker, nc *scheduling.NewNodeClaim, np *nodeplan.NodePool) []string {
	var wrong []string
	for _, r := range np.Template.Requirements.All() {
		if r.MinValues <= 0 {
			continue
		}
		values := map[string]bool{}
		for _, name := range nc.InstanceTypeOptions {
			if it := c.instanceType(nc.NodePool, name); it != nil {
				v, ok := it.Labels[r.Key]
				if r.Key == nodeplan.LabelInstanceType {
					v, ok = it.Name, true
				}
				if ok {
					values[v] = true
				}
			}
		}
		if len(values) >= r.MinValues {
			continue
		}
		relaxed := nc.Annotations[nodeplan.AnnotationMinValuesRelaxed] == "true"
		if c.in.Options.MinValues != scheduling.MinValuesBestEffort || !relaxed {
			wrong = append(wrong, fmt.Sprintf("offers %d values of %s, fewer than its pool's minValues %d", len(values), r.Key, r.MinValues))
		}
	}
	return wrong
}

// closed says why nothing may be launched for a NodePool, or "" when it may: Karpenter's
// provisioner leaves out a static pool (spec.replicas), one with a deletion timestamp, or one
// whose Ready condition is reported and is anything but True.
func closed(np *nodeplan.NodePool) string {
	switch {
	case np.Replicas != nil:
		return "is static (replicas)"
	case np.DeletionTimestamp != nil:
		return "is being deleted"
	case np.Ready.Status == "True" || np.Ready.Status == "":
		return ""
	}
	return "is not ready (Ready=" + string(np.Ready.Status) + ")"
}

// subset reports whether every label that satisfies a also satisfies b (MinValues aside).
func subset(a, b nodeplan.Requirement) bool {
	a.MinValues, b.MinValues = 0, 0
	if a.Intersect(b).Equal(a) {
		return true
	}
	// The algebra may spell the same set two ways; decide finite sets by their members.
	if a.Operator() == corev1.NodeSelectorOpIn || a.Operator() == corev1.NodeSelectorOpDoesNotExist {
		for _, v := range a.Values() {
			if !b.Accepts(v, true) {
				return false
			}
		}
		return !a.Accepts("", false) || b.Accepts("", false)
	}
	return false
}

func (c *checker) claimRequirements(t *target, nc *scheduling.NewNodeClaim, np *nodeplan.NodePool) {
	for _, r := range np.Template.Requirements.All() {
		cr, ok := nc.Requirements.Get(r.Key)
		if !ok {
			cr = nodeplan.Requirement{Key: r.Key}
		}
		if !subset(cr, r) {
			c.fail(RuleRequirements, t.desc, "requirement %s does not stay within pool %s's %s", cr, np.Name, r)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(np.Template.Labels)) {
		if v, ok := nc.Labels[k]; !ok || v != np.Template.Labels[k] {
			c.fail(RuleRequirements, t.desc, "lacks pool %s's label %s=%s", np.Name, k, np.Template.Labels[k])
		}
	}
	if v, ok := nc.Labels[nodeplan.LabelNodePool]; ok && v != np.Name {
		c.fail(RuleRequirements, t.desc, "has label %s=%s but belongs to pool %s", nodeplan.LabelNodePool, v, np.Name)
	}
	if it := c.instanceType(nc.NodePool, nc.InstanceType); it != nil {
		fixed := maps.Clone(it.Labels)
		if fixed == nil {
			fixed = map[string]string{}
		}
		fixed[nodeplan.LabelZone] = nc.Offering.Zone
		fixed[nodeplan.LabelCapacityType] = string(nc.Offering.CapacityType)
		for _, k := range slices.Sorted(maps.Keys(nc.Labels)) {
			if v, ok := fixed[k]; ok && v != nc.Labels[k] {
				c.fail(RuleRequirements, t.desc, "has label %s=%s but its %s in %s %s would be %s=%s",
					k, nc.Labels[k], it.Name, nc.Offering.Zone, nc.Offering.CapacityType, k, v)
			}
		}
	}
}

// optionRequirements describes completely a node of the claim launched as it.
func optionRequirements(nc *scheduling.NewNodeClaim, it *nodeplan.InstanceType) nodeplan.Requirements {
	lbls := maps.Clone(nc.Labels)
	if lbls == nil {
		lbls = map[string]string{}
	}
	maps.Copy(lbls, it.Labels)
	lbls[nodeplan.LabelInstanceType] = it.Name
	lbls[nodeplan.LabelNodePool] = nc.NodePool
	var zones, cts []string
	for _, o := range it.Offerings {
		if o.Available {
			zones = append(zones, o.Zone)
			cts = append(cts, string(o.CapacityType))
		}
	}
	return nodeplan.RequirementsFromLabels(lbls).Add(nodeplan.In(nodeplan.LabelZone, zones...)).
		Add(nodeplan.In(nodeplan.LabelCapacityType, cts...))
}

func (c *checker) claimOptions(t *target, nc *scheduling.NewNodeClaim) {
	seen := map[string]bool{}
	prev, prevName := math.Inf(-1), ""
	for _, name := range nc.InstanceTypeOptions {
		if seen[name] {
			c.fail(RuleClaim, t.desc, "lists option %s twice", name)
			continue
		}
		seen[name] = true
		it := c.instanceType(nc.NodePool, name)
		if it == nil {
			c.fail(RuleRequirements, t.desc, "option %s is not in pool %s's instance types", name, nc.NodePool)
			continue
		}
		if err := optionRequirements(nc, it).Compatible(nc.Requirements); err != nil {
			c.fail(RuleRequirements, t.desc, "option %s is incompatible with the claim's requirements: %v", name, err)
		}
		if what, ok := nodeplan.Fits(nc.Resources, it.Allocatable()); !ok {
			q, a := nc.Resources[what], it.Allocatable()[what]
			c.fail(RuleResources, t.desc, "option %s has %s %s allocatable, less than the claim's Resources %s", name, what, a.String(), q.String())
		}
		o, ok := it.Cheapest(nc.Requirements)
		if !ok {
			c.fail(RuleRequirements, t.desc, "option %s has no available offering the claim's requirements accept", name)
			continue
		}
		if priceLess(o.Price, prev) {
			c.fail(RuleOrder, t.desc, "option %s ($%g) comes after %s ($%g); options go cheapest first", name, o.Price, prevName, prev)
		}
		prev, prevName = o.Price, name
	}
	if np := c.pools[nc.NodePool]; np != nil {
		for _, w := range minValuesOf(c, nc, np) {
			c.fail(RuleClaim, t.desc, "%s", w)
		}
	}
	sum := corev1.ResourceList{}
	for _, k := range nc.Pods {
		if p := c.pending[k]; p != nil {
			sum = nodeplan.AddResources(sum, podRequests(p))
		}
	}
	if what, ok := nodeplan.Fits(sum, nc.Resources); !ok {
		q, a := sum[what], nc.Resources[what]
		c.fail(RuleResources, t.desc, "Resources %s=%s do not cover its pods' requests %s", what, a.String(), q.String())
	}
}

func (c *checker) claimOffering(t *target, nc *scheduling.NewNodeClaim) {
	o := nc.Offering
	if !slices.Contains(nc.InstanceTypeOptions, nc.InstanceType) {
		c.fail(RuleOffering, t.desc, "chosen type %q is not among its options %v", nc.InstanceType, nc.InstanceTypeOptions)
	}
	it := c.instanceType(nc.NodePool, nc.InstanceType)
	if it == nil {
		c.fail(RuleOffering, t.desc, "chosen type %q is not in pool %s's instance types", nc.InstanceType, nc.NodePool)
		return
	}
	i := slices.IndexFunc(it.Offerings, func(x nodeplan.Offering) bool {
		return x.Zone == o.Zone && x.CapacityType == o.CapacityType && x.ReservationID == o.ReservationID &&
			!priceLess(x.Price, o.Price) && !priceLess(o.Price, x.Price)
	})
	switch {
	case i < 0:
		c.fail(RuleOffering, t.desc, "offering %s %s at $%g is not an offering of %s", o.Zone, o.CapacityType, o.Price, it.Name)
	case !it.Offerings[i].Available:
		c.fail(RuleOffering, t.desc, "offering %s %s of %s is not available", o.Zone, o.CapacityType, it.Name)
	}
	if !o.Accepts(nc.Requirements) {
		c.fail(RuleOffering, t.desc, "offering %s %s is outside the claim's requirements", o.Zone, o.CapacityType)
	}
	for _, name := range nc.InstanceTypeOptions {
		alt := c.instanceType(nc.NodePool, name)
		if alt == nil {
			continue
		}
		if a, ok := alt.Cheapest(nc.Requirements); ok && priceLess(a.Price, o.Price) {
			c.fail(RuleOffering, t.desc, "costed at %s %s %s for $%g, but option %s in %s %s costs $%g",
				it.Name, o.Zone, o.CapacityType, o.Price, name, a.Zone, a.CapacityType, a.Price)
			break
		}
	}
}

// limits checks each pool's limits over its existing nodes, in-flight claims and new claims,
// each counted at its capacity. A pool without new claims is not checked: it may already be
// over its limits, but the result did not put it there.
func (c *checker) limits() {
	for i := range c.in.NodePools {
		np := &c.in.NodePools[i]
		if len(np.Limits) == 0 {
			continue
		}
		var existing, inflight, planned corev1.ResourceList
		var nExisting, nInflight, nPlanned int64
		for _, t := range c.all {
			switch {
			case t.kind == kindExisting && t.labels[nodeplan.LabelNodePool] == np.Name:
				capacity := t.node.Node.Status.Capacity
				if len(capacity) == 0 {
					capacity = t.node.Node.Status.Allocatable
				}
				existing = nodeplan.AddResources(existing, capacity)
				nExisting++
			case t.kind == kindInFlight && t.pool == np.Name:
				inflight = nodeplan.AddResources(inflight, c.inFlightCapacity(t.name))
				nInflight++
			}
		}
		for _, nc := range c.res.NodeClaims {
			if nc.NodePool != np.Name {
				continue
			}
			if it := c.instanceType(np.Name, nc.InstanceType); it != nil {
				planned = nodeplan.AddResources(planned, it.Capacity)
			}
			nPlanned++
		}
		if nPlanned == 0 {
			continue
		}
		total := nodeplan.AddResources(nodeplan.AddResources(existing, inflight), planned)
		for _, k := range slices.Sorted(maps.Keys(np.Limits)) {
			lim := np.Limits[k]
			if k == nodeplan.ResourceNodes {
				if n := nExisting + nInflight + nPlanned; n > lim.Value() {
					c.fail(RuleLimits, "pool "+np.Name, "has %d nodes (%d existing + %d in flight + %d new), over its limit of %s",
						n, nExisting, nInflight, nPlanned, lim.String())
				}
				continue
			}
			if got := total[k]; got.Cmp(lim) > 0 {
				c.fail(RuleLimits, "pool "+np.Name, "has %s %s (%s existing + %s in flight + %s new), over its limit of %s",
					k, got.String(), qty(existing, k), qty(inflight, k), qty(planned, k), lim.String())
			}
		}
	}
}

func qty(rl corev1.ResourceList, k corev1.ResourceName) string {
	q, ok := rl[k]
	if !ok {
		return "0"
	}
	return q.String()
}

// inFlightCapacity is an in-flight claim's capacity: what launched, or before launch the least
// of each resource across its options (the most lenient reading).
func (c *checker) inFlightCapacity(name string) corev1.ResourceList {
	for i := range c.in.NodeClaims {
		nc := &c.in.NodeClaims[i]
		if nc.Name != name {
			continue
		}
		if len(nc.Status.Capacity) > 0 {
			return nc.Status.Capacity
		}
		var out corev1.ResourceList
		for _, o := range nc.InstanceTypeOptions {
			it := c.instanceType(nc.NodePool, o)
			if it == nil {
				continue
			}
			if out == nil {
				out = maps.Clone(it.Capacity)
				continue
			}
			for k, q := range out {
				if v, ok := it.Capacity[k]; !ok {
					out[k] = resource.Quantity{}
				} else if v.Cmp(q) < 0 {
					out[k] = v
				}
			}
		}
		return out
	}
	return nil
}

// cost checks Cost, NodeCost and LowerBound. Cost is the chosen offerings' prices plus, per new
// node, what Options.NodeCost adds for its pool (NodeCost is that part). LowerBound ≤ Cost is
// checked only when every pending pod is placed: with pods left unschedulable, the bound may
// count pods the plan does not pay for.
func (c *checker) cost() {
	sum, extra := 0.0, 0.0
	nc := c.in.Options.NodeCost
	for _, claim := range c.res.NodeClaims {
		sum += claim.Offering.Price
		extra += nc.PerNode + nc.Pools[claim.NodePool]
	}
	tol := relTol * math.Max(1, math.Abs(sum+extra))
	if math.IsNaN(c.res.NodeCost) || math.Abs(c.res.NodeCost-extra) > tol {
		c.fail(RuleCost, "NodeCost", "is $%g but Options.NodeCost adds $%g over %d new nodes", c.res.NodeCost, extra, len(c.res.NodeClaims))
	}
	sum += extra
	if math.IsNaN(c.res.Cost) || math.Abs(c.res.Cost-sum) > tol {
		c.fail(RuleCost, "Cost", "is $%g but the chosen offerings (and Options.NodeCost) sum to $%g", c.res.Cost, sum)
	}
	lb := c.res.LowerBound
	switch {
	case math.IsNaN(lb) || math.IsInf(lb, 0) || lb < 0:
		c.fail(RuleLowerBound, "LowerBound", "is %g; it must be a finite number ≥ 0", lb)
	case len(c.res.Unschedulable) == 0 && lb > sum+tol:
		c.fail(RuleLowerBound, "LowerBound", "$%g is above the plan's cost $%g", lb, sum)
	}
}
