package main

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/examples/plan/internal/load"
	"github.com/nodeplan/nodeplan/pricing"
	"github.com/nodeplan/nodeplan/scheduling"
)

// Prices as the user pays them: a cost model (discounts, Savings Plan and Reserved Instance
// rates) first, then Karpenter's NodeOverlays, which adjust the price Karpenter would see —
// so overlays written for Karpenter keep meaning what they meant there. Both apply to every
// catalog the command uses, given or built, the same way the controller applies them.

// priceFlags name the cost model and the overlays.
type priceFlags struct {
	costModel string
}

func (p *priceFlags) register(f *flags, files *inputFiles) {
	f.StringVar(&p.costModel, "cost-model", "", "`FILE` of what you pay (YAML or JSON: discounts by family or capacity type, explicit prices for Savings Plans and Reserved Instances); see package pricing's CostModel")
	f.StringVar(&files.nodeOverlays, "nodeoverlays", "", "`FILE` of Karpenter NodeOverlays (karpenter.sh/v1alpha1) whose prices and extended resources apply to the catalog")
}

// applyPrices applies the cost model and the NodeOverlays to the snapshot's catalogs.
func applyPrices(snap *snapshot, p priceFlags) error {
	var model *pricing.CostModel
	if p.costModel != "" {
		data, err := os.ReadFile(p.costModel)
		if err != nil {
			return badInput{&load.Error{File: p.costModel, Err: fmt.Errorf("cannot read: %w", err)}}
		}
		if model, err = pricing.ParseCostModel(data); err != nil {
			return badInput{&load.Error{File: p.costModel, Err: err}}
		}
	}
	apply := func(types []nodeplan.InstanceType) ([]nodeplan.InstanceType, error) {
		types, conflicts, err := pricing.Adjust(types, model, snap.overlays)
		if err != nil {
			return nil, badInput{&load.Error{File: p.costModel, Err: err}}
		}
		snap.notices = appendConflicts(snap.notices, conflicts)
		return types, nil
	}
	var err error
	if snap.catalog, err = apply(snap.catalog); err != nil {
		return err
	}
	for pool, types := range snap.poolCatalog {
		if snap.poolCatalog[pool], err = apply(types); err != nil {
			return err
		}
	}
	if model != nil {
		snap.notices = append(snap.notices, "prices: the cost model in "+p.costModel+" applies")
	}
	if n := len(snap.overlays); n > 0 {
		snap.notices = append(snap.notices, fmt.Sprintf("prices and capacity: %d NodeOverlays apply", n))
	}
	return priceVolumes(snap)
}

// priceVolumes prices the EBS volumes each pool's EC2NodeClass attaches to every node
// (spec.blockDeviceMappings, 20Gi gp3 when it has none) at us-east-1 list prices
// (pricing.USEast1EBS): the per-pool part of the node cost every plan weighs and reports. A
// pool whose class is not in the snapshot is not priced, with a notice; a volume type without
// a price is an error naming the class and the mapping, never a free volume.
func priceVolumes(snap *snapshot) error {
	classes := map[string]*ec2.NodeClass{}
	for i := range snap.classes {
		classes[snap.classes[i].Name] = &snap.classes[i]
	}
	snap.volumeCost = map[string]float64{}
	var unknown, priced []string
	for _, p := range snap.pools {
		class, ok := classes[p.Template.NodeClassRef.Name]
		if !ok {
			unknown = append(unknown, p.Name)
			continue
		}
		cost, err := class.VolumeCost(pricing.USEast1EBS)
		if err != nil {
			return badInput{fmt.Errorf("NodePool %s: %w", p.Name, err)}
		}
		snap.volumeCost[p.Name] = cost
		priced = append(priced, fmt.Sprintf("%s %s/h", p.Name, dollars(cost)))
	}
	if len(priced) > 0 {
		snap.notices = append(snap.notices, "node cost: the EBS volumes of each pool's EC2NodeClass, at us-east-1 list prices, are part of every node's cost: "+
			strings.Join(priced, ", "))
	}
	if len(unknown) > 0 {
		snap.notices = append(snap.notices, fmt.Sprintf("node cost: the root volumes of NodePools %s are not priced: their EC2NodeClasses were not given (--ec2nodeclasses)",
			strings.Join(unknown, ", ")))
	}
	return nil
}

// nodeCostFlag registers --node-cost, what each node costs beyond its instance and its class's
// volumes.
func nodeCostFlag(f *flags) *float64 {
	return f.Float64("node-cost", 0, "`$/h` each node costs beyond its instance and its EC2NodeClass's EBS volumes (those are priced from --ec2nodeclasses): a public IPv4 address, per-host licences; weighed by the plan and included in its cost")
}

// nodeCost is what a node of each pool costs beyond its instance: perNode (--node-cost) and
// its class's volumes.
func (s *snapshot) nodeCost(perNode float64) scheduling.NodeCost {
	return scheduling.NodeCost{PerNode: perNode, Pools: s.volumeCost}
}

// appendConflicts adds one notice per pair of conflicting overlays, naming the types involved.
func appendConflicts(notices []string, conflicts []nodeplan.OverlayConflict) []string {
	type pair struct{ winner, loser string }
	var order []pair
	byPair := map[pair][]string{}
	for _, c := range conflicts {
		k := pair{c.Winner, c.Loser}
		if _, ok := byPair[k]; !ok {
			order = append(order, k)
		}
		byPair[k] = append(byPair[k], c.InstanceType)
	}
	for _, k := range order {
		n := fmt.Sprintf("NodeOverlays %s and %s have the same weight and both price %d instance types (%s); %s applies, as in Karpenter — give one a higher weight",
			k.winner, k.loser, len(byPair[k]), abbreviate(byPair[k], 3), k.winner)
		if !slices.Contains(notices, n) {
			notices = append(notices, n)
		}
	}
	return notices
}
