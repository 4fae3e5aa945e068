package scheduling_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// Karpenter's provisioner never launches into a static NodePool (spec.replicas): the static
// controller keeps its count. Its existing nodes still take pods.
func TestStaticNodePoolIsNeverProvisionedInto(t *testing.T) {
	two := int64(2)
	static := nodeplan.NodePool{Name: "static", Replicas: &two}
	t.Run("alone", func(t *testing.T) {
		in := scheduling.Input{Pods: []*corev1.Pod{knownPod("a", "100m")}, NodePools: []nodeplan.NodePool{static},
			InstanceTypes: []nodeplan.InstanceType{knownType("c-2", 2, "c", 0.08)}}
		res := solveAndCheck(t, in)
		if len(res.NodeClaims) != 0 || len(res.Unschedulable) != 1 || res.Unschedulable[0].Code != scheduling.ReasonNodePoolUnavailable ||
			!strings.Contains(res.Unschedulable[0].Message, "spec.replicas") {
			t.Errorf("Solve(static pool only) = claims %v, unschedulable %+v; want no claim and the pod %s naming spec.replicas",
				res.NodeClaims, res.Unschedulable, scheduling.ReasonNodePoolUnavailable)
		}
	})
	t.Run("beside a dynamic pool", func(t *testing.T) {
		in := scheduling.Input{Pods: []*corev1.Pod{knownPod("a", "100m")},
			NodePools:         []nodeplan.NodePool{static, {Name: "dynamic"}},
			PoolInstanceTypes: map[string][]nodeplan.InstanceType{"static": {knownType("cheap", 2, "c", 0.01)}},
			InstanceTypes:     []nodeplan.InstanceType{knownType("c-2", 2, "c", 0.08)}}
		res := solveAndCheck(t, in)
		if len(res.NodeClaims) != 1 || res.NodeClaims[0].NodePool != "dynamic" {
			t.Errorf("Solve(static + dynamic) = claims %+v, want one claim of pool dynamic", res.NodeClaims)
		}
	})
	t.Run("its existing node", func(t *testing.T) {
		c := knownType("c-2", 2, "c", 0.08)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "static-1", Labels: map[string]string{nodeplan.LabelNodePool: "static",
			nodeplan.LabelInstanceType: "c-2", nodeplan.LabelZone: "zone-a", nodeplan.LabelCapacityType: "on-demand"}},
			Status: corev1.NodeStatus{Capacity: c.Capacity, Allocatable: c.Capacity}}
		in := scheduling.Input{Pods: []*corev1.Pod{knownPod("a", "100m")}, NodePools: []nodeplan.NodePool{static},
			InstanceTypes: []nodeplan.InstanceType{c}, Nodes: []scheduling.Node{{Node: node}}}
		res := solveAndCheck(t, in)
		if len(res.Existing) != 1 || len(res.NodeClaims) != 0 {
			t.Errorf("Solve(static pool with a node) = existing %v, claims %v; want the pod on static-1", res.Existing, res.NodeClaims)
		}
	})
}

// Karpenter's PREFERENCE_POLICY=Respect honours a preference whatever it costs; the default
// CostAware drops one costing more than the margin (5%); Ignore drops it.
func TestPreferencePolicies(t *testing.T) {
	for _, tc := range []struct {
		policy scheduling.PreferencePolicy
		want   string
	}{{scheduling.PreferencesCostAware, "zone-a"}, {scheduling.PreferencesRespect, "zone-b"}, {scheduling.PreferencesIgnore, "zone-a"}} {
		t.Run(string(tc.policy), func(t *testing.T) {
			in := onePool(zonedType("m", "4", map[string]float64{"zone-a": 0.20, "zone-b": 0.30}))
			in.Pods = apiServerShaped(replicas("web", 2, "1", preferring(preferZone(10, "zone-b"))))
			in.Options.Preferences = tc.policy
			res := solveAndCheck(t, in)
			zones := placedZones(in, res)
			if len(zones) != 2 {
				t.Fatalf("placed %v, want both pods (unschedulable: %s)", zones, unplacedKeys(res))
			}
			for k, z := range zones {
				if z != tc.want {
					t.Errorf("Preferences %s: pod %s placed in %s, want %s", tc.policy, k, z, tc.want)
				}
			}
		})
	}
}
