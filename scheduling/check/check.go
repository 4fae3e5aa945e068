package check

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// Result verifies res against in and returns every violation found, joined with errors.Join,
// or nil when res keeps every rule. Each joined error is a [*Violation]. Result never modifies
// its arguments and is safe for concurrent use.
func Result(in scheduling.Input, res scheduling.Result) error {
	c := &checker{in: in, res: res}
	c.index()
	c.accounting()
	c.order()
	c.claims()
	c.placements()
	c.limits()
	c.cost()
	c.topologySpread()
	c.podAffinity()
	return errors.Join(c.errs...)
}

// Violations returns the violations in an error returned by [Result], in the order found.
func Violations(err error) []*Violation {
	var out []*Violation
	var walk func(error)
	walk = func(err error) {
		if v, ok := err.(*Violation); ok {
			out = append(out, v)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}

type checker struct {
	in   scheduling.Input
	res  scheduling.Result
	errs []error

	pools   map[string]*nodeplan.NodePool
	pending map[string]*corev1.Pod
	// boundAt maps bound pods' keys to their node.
	boundAt map[string]string
	daemons []*daemon

	existing  map[string]*target
	inflight  map[string]*target
	newClaims []*target // parallel to res.NodeClaims
	// all is every target: existing nodes, in-flight claims, new claims.
	all []*target
	// where maps each placed pending pod to its target.
	where map[*corev1.Pod]*target
}

func (c *checker) fail(rule Rule, object, format string, args ...any) {
	c.errs = append(c.errs, &Violation{Rule: rule, Object: object, Detail: fmt.Sprintf(format, args...)})
}

func podDesc(key string) string { return "pod " + key }

func (c *checker) index() {
	c.pools = map[string]*nodeplan.NodePool{}
	for i := range c.in.NodePools {
		c.pools[c.in.NodePools[i].Name] = &c.in.NodePools[i]
	}
	c.pending = map[string]*corev1.Pod{}
	c.boundAt = map[string]string{}
	for _, p := range c.in.Pods {
		if p == nil {
			continue
		}
		if p.Spec.NodeName != "" {
			c.boundAt[nodeplan.PodKey(p)] = p.Spec.NodeName
			continue
		}
		c.pending[nodeplan.PodKey(p)] = p
	}
	for _, ds := range c.in.DaemonSets {
		if ds == nil {
			continue
		}
		pod := daemonPod(ds)
		c.daemons = append(c.daemons, &daemon{ds: ds, pod: pod, req: podRequests(pod), ports: hostPorts(pod)})
	}
	c.existing = map[string]*target{}
	for i := range c.in.Nodes {
		n := &c.in.Nodes[i]
		if n.Node == nil {
			continue
		}
		for _, p := range n.Pods {
			if p != nil {
				c.boundAt[nodeplan.PodKey(p)] = n.Node.Name
			}
		}
		t := c.existingTarget(n)
		c.existing[n.Node.Name] = t
		c.all = append(c.all, t)
	}
	c.inflight = map[string]*target{}
	for i := range c.in.NodeClaims {
		nc := &c.in.NodeClaims[i]
		// A claim whose node registered is counted as that node.
		if nc.Status.NodeName != "" && c.existing[nc.Status.NodeName] != nil {
			continue
		}
		t := c.inFlightTarget(i, nc)
		c.inflight[nc.Name] = t
		c.all = append(c.all, t)
	}
	for i := range c.res.NodeClaims {
		t := c.newTarget(i, &c.res.NodeClaims[i])
		c.newClaims = append(c.newClaims, t)
		c.all = append(c.all, t)
	}
}

// accounting checks that every pending pod appears exactly once and attaches placed pods to
// their targets.
func (c *checker) accounting() {
	c.where = map[*corev1.Pod]*target{}
	seen := map[string][]string{}
	for i, nc := range c.res.NodeClaims {
		for _, k := range nc.Pods {
			c.place(seen, k, c.newClaims[i].desc, c.newClaims[i])
		}
	}
	for _, pl := range c.res.Existing {
		t := c.existing[pl.Name]
		where := fmt.Sprintf("existing node %q", pl.Name)
		if t == nil {
			c.fail(RuleTarget, where, "is not a node of the input")
		} else {
			c.targetUsable(t, pl)
		}
		for _, k := range pl.Pods {
			c.place(seen, k, where, t)
		}
	}
	for _, pl := range c.res.InFlight {
		t := c.inflight[pl.Name]
		where := fmt.Sprintf("in-flight claim %q", pl.Name)
		if t == nil {
			c.fail(RuleTarget, where, "is not an in-flight NodeClaim of the input")
		} else if c.claimDeleting(pl.Name) && len(pl.Pods) > 0 {
			c.fail(RuleTarget, where, "is being deleted but gets pods %v", pl.Pods)
		}
		for _, k := range pl.Pods {
			c.place(seen, k, where, t)
		}
	}
	for _, u := range c.res.Unschedulable {
		c.place(seen, u.Pod, "Unschedulable", nil)
		if u.Code == "" || u.Message == "" {
			c.fail(RuleAccounted, podDesc(u.Pod), "is unschedulable without a reason (code %q, message %q)", u.Code, u.Message)
		}
	}
	c.placedOnce(seen)
}

// place records that the result puts pod key at where (target t, nil for Unschedulable) and
// attaches the pod to t the first time only: a pod listed twice is reported by placedOnce, and
// checking it twice would report its other rules twice.
func (c *checker) place(seen map[string][]string, key, where string, t *target) {
	seen[key] = append(seen[key], where)
	if node, ok := c.boundAt[key]; ok {
		c.fail(RuleBoundPod, podDesc(key), "is bound to node %q but the result places it on %s", node, where)
		return
	}
	p, ok := c.pending[key]
	if !ok {
		c.fail(RuleAccounted, podDesc(key), "is not a pending pod of the input but appears in %s", where)
		return
	}
	if t != nil && len(seen[key]) == 1 {
		t.pods = append(t.pods, p)
		c.where[p] = t
	}
}

// placedOnce fails each pending pod the result lists nowhere or more than once, by key.
func (c *checker) placedOnce(seen map[string][]string) {
	keys := slices.Sorted(maps.Keys(c.pending))
	for _, k := range keys {
		switch n := len(seen[k]); {
		case n == 0:
			c.fail(RuleAccounted, podDesc(k), "is pending but appears nowhere in the result")
		case n > 1:
			c.fail(RuleAccounted, podDesc(k), "appears %d times: %s", n, strings.Join(seen[k], ", "))
		}
	}
}

// targetUsable checks that an existing node may take new pods at all.
func (c *checker) targetUsable(t *target, pl scheduling.Placement) {
	n := t.node.Node
	if n.DeletionTimestamp != nil && len(pl.Pods) > 0 {
		c.fail(RuleTarget, t.desc, "is being deleted but gets pods %v", pl.Pods)
	}
	if t.node.NoNewPods && len(pl.Pods) > 0 {
		c.fail(RuleTarget, t.desc, "takes no new pods (NoNewPods) but gets pods %v", pl.Pods)
	}
}

// claimDeleting reports whether the input's in-flight claim of this name is being deleted.
func (c *checker) claimDeleting(name string) bool {
	for i := range c.in.NodeClaims {
		if c.in.NodeClaims[i].Name == name {
			return c.in.NodeClaims[i].DeletionTimestamp != nil
		}
	}
	return false
}

// order checks the documented order of every slice in the result.
func (c *checker) order() {
	r := c.res
	for i, nc := range r.NodeClaims {
		if !slices.IsSorted(nc.Pods) || len(slices.Compact(slices.Clone(nc.Pods))) != len(nc.Pods) {
			c.fail(RuleOrder, c.newClaims[i].desc, "pods %v are not sorted", nc.Pods)
		}
		if i == 0 {
			continue
		}
		prev, cur := c.pools[r.NodeClaims[i-1].NodePool], c.pools[nc.NodePool]
		if prev != nil && cur != nil && cur.Weight > prev.Weight {
			c.fail(RuleOrder, c.newClaims[i].desc, "pool %s (weight %d) comes after pool %s (weight %d); claims go in pool weight order",
				cur.Name, cur.Weight, prev.Name, prev.Weight)
		}
	}
	placements := func(what string, pls []scheduling.Placement) {
		for i, pl := range pls {
			if i > 0 && pls[i-1].Name >= pl.Name {
				c.fail(RuleOrder, what, "%q comes after %q; placements go by name, once each", pl.Name, pls[i-1].Name)
			}
			if !slices.IsSorted(pl.Pods) || len(slices.Compact(slices.Clone(pl.Pods))) != len(pl.Pods) {
				c.fail(RuleOrder, fmt.Sprintf("%s %q", what, pl.Name), "pods %v are not sorted", pl.Pods)
			}
		}
	}
	placements("Existing", r.Existing)
	placements("InFlight", r.InFlight)
	for i := 1; i < len(r.Unschedulable); i++ {
		if r.Unschedulable[i-1].Pod >= r.Unschedulable[i].Pod {
			c.fail(RuleOrder, "Unschedulable", "%s comes after %s; entries go by pod key", r.Unschedulable[i].Pod, r.Unschedulable[i-1].Pod)
		}
	}
}
