package pricing

import (
	"math"
	"testing"

	"github.com/nodeplan/nodeplan"
)

func TestCostModelOverACatalog(t *testing.T) {
	types := []nodeplan.InstanceType{{Name: "m7i.large", Labels: map[string]string{"karpenter.k8s.aws/instance-family": "m7i"}, Offerings: []nodeplan.Offering{
		{Zone: "us-east-1a", CapacityType: nodeplan.CapacityTypeOnDemand, Price: 0.1, Available: true},
		{Zone: "us-east-1a", CapacityType: nodeplan.CapacityTypeSpot, Price: 0.04, Available: true},
		{Zone: "us-east-1b", CapacityType: nodeplan.CapacityTypeSpot, Price: 0, Available: false},
	}}}
	model, err := ParseCostModel([]byte("discounts:\n- family: m7i\n  capacityType: on-demand\n  percent: 30\n"))
	if err != nil {
		t.Fatal(err)
	}
	eff, err := model.Wrap(FromCatalog(types))
	if err != nil {
		t.Fatal(err)
	}
	got := Apply(eff, types)[0].Offerings
	if math.Abs(got[0].Price-0.07) > 1e-12 || got[1].Price != 0.04 || got[2].Available {
		t.Errorf("Apply(cost model over catalog) = %+v, want on-demand 0.07, spot 0.04, the unpriced spot offering unavailable", got)
	}
}
