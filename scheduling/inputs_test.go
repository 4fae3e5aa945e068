package scheduling_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// Inputs a Karpenter user has (issue 27, "what the inputs cannot say yet"), one test each.

// A pending pod uses an in-flight claim's room before a new claim is made, unless the claim is
// being deleted: Karpenter's cluster state marks it for deletion and schedules nothing there.
func TestInFlightClaimBeingDeletedTakesNoPod(t *testing.T) {
	c := knownType("c-2", 2, "c", 0.08)
	for _, tc := range []struct {
		name     string
		deleting bool
	}{{"live", false}, {"deleting", true}} {
		t.Run(tc.name, func(t *testing.T) {
			claim := nodeplan.NodeClaim{Name: "nc", NodePool: "p", InstanceTypeOptions: []string{"c-2"},
				Status: nodeplan.NodeClaimStatus{ProviderID: "test:///nc", InstanceType: "c-2", Zone: "zone-a",
					CapacityType: nodeplan.CapacityTypeOnDemand, Capacity: c.Capacity, Allocatable: c.Capacity}}
			if tc.deleting {
				claim.DeletionTimestamp = new(time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC))
			}
			in := scheduling.Input{
				Pods:          []*corev1.Pod{knownPod("a", "100m")},
				NodePools:     []nodeplan.NodePool{{Name: "p"}},
				InstanceTypes: []nodeplan.InstanceType{c},
				NodeClaims:    []nodeplan.NodeClaim{claim},
			}
			res := solveAndCheck(t, in)
			if got := len(res.InFlight) == 1; got == tc.deleting {
				t.Errorf("Solve(claim deleting=%v).InFlight = %v, new claims %d; want the pod on the claim only when it is not being deleted",
					tc.deleting, res.InFlight, len(res.NodeClaims))
			}
		})
	}
}
