package sim_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
)

// TestTimeline: each typed event prints as its line, stamped with the simulated time; the
// script's lines and the log records the timeline is given print in the same layout.
func TestTimeline(t *testing.T) {
	at := func(s int) time.Time { return sim.Epoch.Add(time.Duration(s) * time.Second) }
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7910m"), corev1.ResourceMemory: resource.MustParse("14162Mi")}
	var out bytes.Buffer
	now := at(90)
	tl := sim.NewTimeline(&out, func() time.Time { return now }, sim.Epoch)
	for _, e := range []controller.Event{
		{Time: at(0), Kind: controller.EventStarted, Pools: 1},
		{Time: at(2), Kind: controller.EventSolved, Pods: 5, NodeClaims: 1, Cost: 0.1038, NodeCost: 0.0109},
		{Time: at(2), Kind: controller.EventSolved, Pods: 0, BufferPods: 2, NodeClaims: 1, Cost: 0.0929},
		{Time: at(2), Kind: controller.EventNodeClaimCreated, NodeClaim: "default-x", NodePool: "default",
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5")}, InstanceTypes: []string{"a", "b", "c", "d", "e", "f"}},
		{Time: at(2), Kind: controller.EventNodeClaimLaunched, NodeClaim: "default-x", NodePool: "default", InstanceType: "c6a.2xlarge",
			Zone: "us-east-1a", CapacityType: "spot", Price: 0.0929, Allocatable: alloc, Pods: 5},
		{Time: at(22), Kind: controller.EventNodeClaimRegistered, NodeClaim: "default-x", Node: "ip-1"},
		{Time: at(27), Kind: controller.EventNodeClaimInitialized, NodeClaim: "default-x", Node: "ip-1", Allocatable: alloc},
		{Time: at(40), Kind: controller.EventDrifted, NodeClaim: "default-x", Node: "ip-1", Reason: "AMIDrift", Message: "image img-1 is old"},
		{Time: at(70), Kind: controller.EventDisrupting, Reason: "Empty", Savings: 0.0929, Nodes: []string{"ip-1"}},
		{Time: at(70), Kind: controller.EventNodeTainted, Node: "ip-1"},
		{Time: at(71), Kind: controller.EventNodeDeleted, Node: "ip-1"},
		{Time: at(71), Kind: controller.EventNodeClaimDeleted, NodeClaim: "default-x", Node: "ip-1", Reason: "Empty"},
		{Time: at(80), Kind: controller.EventPodUnschedulable, Pod: "ns/p", Reason: "NoInstanceType", Message: "too big"},
		{Time: at(85), Kind: controller.EventStaticScale, NodePool: "static", Count: 3, Replicas: 1, Delta: -2},
	} {
		tl.Event(e)
	}
	tl.Say("scaled deployment inflate to 0")
	tl.Say("created deployment", "deployment", "ns/inflate", "replicas", 0)
	slog.New(tl.Handler(slog.LevelDebug, slog.LevelInfo, nil, []string{"cost"})).Debug("solver detail", "groups", 3, "cost", 1.5)
	slog.New(tl.Handler(slog.LevelDebug, slog.LevelInfo, nil, nil)).Info("not printed: outside the levels")
	want := []string{
		"00:00:00 controller started nodepools=1 claims=0",
		"00:00:02 found provisionable pod(s) pods=5 nodeclaims=1 cost=$0.1038/h node-cost=$0.0109/h",
		"00:00:02 found provisionable pod(s) pods=0 buffer-pods=2 nodeclaims=1 cost=$0.0929/h",
		`00:00:02 created nodeclaim default-x nodepool=default requests=cpu:5 instance-types="a, b, c, d, e and 1 other(s)"`,
		"00:00:02 launched nodeclaim default-x nodepool=default instance-type=c6a.2xlarge zone=us-east-1a capacity-type=spot price=$0.0929/h allocatable=cpu:7910m,memory:14162Mi pods=5",
		"00:00:22 registered nodeclaim default-x node=ip-1",
		"00:00:27 initialized nodeclaim default-x node=ip-1 allocatable=cpu:7910m,memory:14162Mi",
		`00:00:40 marking drifted default-x node=ip-1 reason=AMIDrift message="image img-1 is old"`,
		"00:01:10 disrupting node(s) reason=Empty savings=$0.0929/h pod-count=0 disrupted-nodes=[ip-1]",
		"00:01:10 tainted node ip-1 taint=karpenter.sh/disrupted:NoSchedule",
		"00:01:11 deleted node ip-1",
		"00:01:11 deleted nodeclaim default-x node=ip-1 reason=Empty",
		`00:01:20 ERROR could not schedule pod ns/p reason=NoInstanceType message="too big"`,
		"00:01:25 deprovisioning nodeclaims to satisfy replica count nodepool=static current=3 desired=1 count=2",
		"00:01:30 scaled deployment inflate to 0",
		"00:01:30 created deployment ns/inflate replicas=0",
		"00:01:30 solver detail groups=3",
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")); diff != "" {
		t.Errorf("timeline (-want +got):\n%s", diff)
	}
}
