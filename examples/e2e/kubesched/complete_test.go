package kubesched

import (
	"testing"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
	"github.com/nodeplan/nodeplan/scheduling"
)

// A candidate is a node the pool could launch: an instance type its requirements refuse is no
// candidate, though the pool's single-valued requirements (category In [t]) are written over
// the type's labels as a claim's are. Before, a pool asking for category t got c6i candidates
// labelled category t, and kube-scheduler bound pods the plan had rightly refused (seed 14:
// 106 "wrongly refused" for minValues, which three t3 types cannot meet).
func TestCandidatesOnlyTypesThePoolAllows(t *testing.T) {
	catalog := sim.Catalog()
	in := scheduling.Input{InstanceTypes: catalog, NodePools: []nodeplan.NodePool{{Name: "general",
		Template: nodeplan.NodeClaimTemplate{Requirements: nodeplan.NewRequirements(nodeplan.In(nodeplan.LabelInstanceCategory, "t"))}}}}
	in.Pods = Generate(1, catalog, Config{Pods: 5}).Input.Pods
	cands := Candidates(in, scheduling.Result{}, in.Pods)
	if len(cands) == 0 {
		t.Fatal("Candidates() = none, want the pool's t types")
	}
	byName := Catalog(catalog)
	for _, c := range cands {
		name := c.Labels[nodeplan.LabelInstanceType]
		if got := byName[name].Labels[nodeplan.LabelInstanceCategory]; got != "t" {
			t.Errorf("candidate %s is a %s, of category %q; the pool allows category t only", c.Name, name, got)
		}
	}
}
