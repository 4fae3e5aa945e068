package main

import (
	"fmt"
	"os"
	"slices"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/examples/plan/internal/load"
	"github.com/nodeplan/nodeplan/pricing"
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
	return nil
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
