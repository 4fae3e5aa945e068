package ec2_test

import (
	"context"
	"testing"

	"github.com/nodeplan/nodeplan"
)

// A claim as the solver makes it from a pool with template labels carries requirements on
// those labels and on karpenter.sh/nodepool; the node gets them from the claim's labels, so no
// instance type has to carry them. Found by the e2e inflate lab: every launch of its pool
// (labels eks-team: my-team) failed with "no available offering is allowed".
func TestTemplateLabelRequirementsAreMetByTheClaim(t *testing.T) {
	f := newFixture(t, nil, nil)
	c := claim("web-1", []string{"m5.large", "c5.large"},
		nodeplan.In(nodeplan.LabelCapacityType, "on-demand"), nodeplan.In("team", "web"), nodeplan.In(nodeplan.LabelNodePool, "default"))
	if _, err := f.p.Create(context.Background(), c); err != nil {
		t.Fatalf("Create() = %v, want a launch: the claim's own labels meet its requirements", err)
	}
	// A requirement the claim's labels do not meet still rules the types out.
	c = claim("web-2", []string{"m5.large", "c5.large"}, nodeplan.In(nodeplan.LabelCapacityType, "on-demand"), nodeplan.In("team", "db"))
	if _, err := f.p.Create(context.Background(), c); err == nil {
		t.Errorf("Create() of a claim requiring team=db with label team=web launched")
	}
}
