package disruption_test

import (
	"context"
	"testing"
	"time"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
)

// TestDriftReadsTheClaimsGracePeriod: drift of a node whose NodeClaim has a
// terminationGracePeriod ignores a do-not-disrupt pod (the period bounds the drain), whatever
// the pool's template says now — Karpenter reads the claim's, which keeps the value it
// launched with. Without the claim's, the pool's stands in.
func TestDriftReadsTheClaimsGracePeriod(t *testing.T) {
	hour, none := time.Hour, time.Duration(0)
	for _, tc := range []struct {
		name          string
		pool, claim   *time.Duration
		wantForceful  bool
		wantDisrupted bool
	}{
		{"claim has one, pool none", nil, &hour, true, true},
		{"claim has none, pool one", &hour, &none, false, false},
		{"claim unknown, pool one", &hour, nil, true, true},
		{"claim unknown, pool none", nil, nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := pool("default", budget("100%"))
			if tc.pool != nil {
				np.Template.TerminationGracePeriod = *tc.pool
			}
			stays := newNode(t, "n0", "m5.2xlarge", "default", withPods(pods("web", 1, "500m", "1Gi")...))
			stays.Node.Annotations[nodeplan.AnnotationDoNotDisrupt] = "true"
			old := newNode(t, "n1", "m5.large", "default", drifted, withPods(newPod("batch", "250m", "256Mi", doNotDisrupt("true"))))
			old.TerminationGracePeriod = tc.claim
			in := disruption.Input{Nodes: []disruption.Node{stays, old}, NodePools: []nodeplan.NodePool{np},
				InstanceTypes: testCatalog(t), Now: t0}
			r, err := disruption.Plan(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, in, r)
			c, ok := commandFor(r, "n1")
			if ok != tc.wantDisrupted {
				t.Fatalf("drifted n1 with a do-not-disrupt pod disrupted = %v, want %v:\n%s", ok, tc.wantDisrupted, render(r))
			}
			if want := map[bool]disruption.Mode{true: disruption.ModeForceful, false: disruption.ModeGraceful}[tc.wantForceful]; ok && c.Mode != want {
				t.Errorf("drift command's mode is %q, want %q", c.Mode, want)
			}
			if b, _ := blockedOf(r, "n1"); !ok && b.Code != disruption.CodeDoNotDisruptPod {
				t.Errorf("n1 stays with %s %q, want %s", b.Code, b.Message, disruption.CodeDoNotDisruptPod)
			}
		})
	}
}
