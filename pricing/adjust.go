package pricing

import "github.com/nodeplan/nodeplan"

// Adjust prices types as the user pays for them and as Karpenter's NodeOverlays say: the cost
// model first (what is really paid: discounts, Savings Plan and Reserved Instance rates), then
// the overlays (nodeplan.ApplyNodeOverlays), which adjust that price and add extended
// resources as in Karpenter, so overlays written for Karpenter keep meaning what they meant
// there. A nil model and no overlays return types unchanged. types is not modified; an
// offering the model cannot price becomes unavailable, never free. The what-if tool and the
// controller both price through this one function.
func Adjust(types []nodeplan.InstanceType, model *CostModel, overlays []nodeplan.NodeOverlay) ([]nodeplan.InstanceType, []nodeplan.OverlayConflict, error) {
	if model != nil {
		eff, err := model.Wrap(FromCatalog(types))
		if err != nil {
			return nil, nil, err
		}
		types = Apply(eff, types)
	}
	var conflicts []nodeplan.OverlayConflict
	if len(overlays) > 0 {
		types, conflicts = nodeplan.ApplyNodeOverlays(types, overlays)
	}
	return types, conflicts, nil
}
