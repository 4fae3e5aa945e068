package scheduling

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
)

// NodeCost is what a node costs beyond its instance's price, in the same unit as offering
// prices ($/h): its root volume (ec2.NodeClass.VolumeCost prices an EC2NodeClass's), a public
// IPv4 address, per-host licences such as monitoring agents, the load every node adds to the
// control plane. With it the solver weighs one large node against several small ones at what
// they really cost.
//
// It is one mechanism: the solver adds the node's NodeCost to every offering price it weighs,
// so packing, the local search and the lower bound all see it, and Result.Cost includes it
// (Result.NodeCost says how much of Cost it is). NewNodeClaim.Offering keeps the list price.
// The zero value adds nothing.
type NodeCost struct {
	// PerNode is added to every new node of every pool.
	PerNode float64
	// Pools adds, by NodePool name, to PerNode for the nodes of that pool: e.g. the root
	// volume its node class's block device mappings ask for.
	Pools map[string]float64
}

// For returns the cost a node of the named pool adds beyond its instance's price.
func (c NodeCost) For(pool string) float64 { return c.PerNode + c.Pools[pool] }

// Validate reports every negative, NaN or infinite cost; Input.Validate calls it.
func (c NodeCost) Validate() error { return errors.Join(c.validate()...) }

func (c NodeCost) validate() []error {
	var errs []error
	bad := func(x float64) bool { return x < 0 || math.IsNaN(x) || math.IsInf(x, 0) }
	if bad(c.PerNode) {
		errs = append(errs, fmt.Errorf("scheduling: Options.NodeCost.PerNode is %v; want a non-negative $/h", c.PerNode))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Pools)) {
		if x := c.Pools[name]; bad(x) {
			errs = append(errs, fmt.Errorf("scheduling: Options.NodeCost.Pools[%q] is %v; want a non-negative $/h", name, x))
		}
	}
	return errs
}
