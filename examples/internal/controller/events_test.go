package controller_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

// eventLog collects the controller's typed events.
type eventLog struct {
	mu sync.Mutex
	ev []controller.Event
}

func (l *eventLog) add(e controller.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ev = append(l.ev, e)
}

func (l *eventLog) all() []controller.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]controller.Event(nil), l.ev...)
}

// TestEventStream: a node's life arrives as typed events, in order, each with the fields its
// kind names — what the simulation's timeline and summary are built from.
func TestEventStream(t *testing.T) {
	h := newHarness(t)
	var log eventLog
	h.start("a", func(c *controller.Controller) { c.Events = log.add })
	h.deploy("inflate", 2, 0)
	h.until(time.Minute, "2 pods running", func() bool { return h.running() == 2 })
	if err := h.w.Deployments.Scale(context.Background(), "test", "inflate", 0); err != nil {
		t.Fatal(err)
	}
	h.until(2*time.Minute, "the node gone", func() bool {
		for _, e := range log.all() {
			if e.Kind == controller.EventNodeClaimDeleted {
				return true
			}
		}
		return false
	})
	type step struct {
		Kind                     controller.EventKind
		NodeClaim, Node, Reason  string
		Pods                     int
		HasPrice, HasAllocatable bool
	}
	var got []step
	var claim, node string
	var last time.Time
	for _, e := range log.all() {
		if e.Time.Before(last) {
			t.Errorf("event %s at %v before the previous one at %v", e.Kind, e.Time, last)
		}
		last = e.Time
		switch e.Kind {
		case controller.EventNodeClaimLaunched:
			claim = e.NodeClaim
		case controller.EventNodeClaimRegistered:
			node = e.Node
		case controller.EventStarted, controller.EventSolved:
			continue
		}
		got = append(got, step{Kind: e.Kind, NodeClaim: e.NodeClaim, Node: e.Node, Reason: e.Reason, Pods: e.Pods,
			HasPrice: e.Price > 0, HasAllocatable: len(e.Allocatable) > 0})
	}
	want := []step{
		{Kind: controller.EventNodeClaimCreated, NodeClaim: claim},
		{Kind: controller.EventNodeClaimLaunched, NodeClaim: claim, Pods: 2, HasPrice: true, HasAllocatable: true},
		{Kind: controller.EventNodeClaimRegistered, NodeClaim: claim, Node: node},
		{Kind: controller.EventNodeClaimInitialized, NodeClaim: claim, Node: node, HasAllocatable: true},
		{Kind: controller.EventDisrupting, Reason: "Empty"},
		{Kind: controller.EventNodeTainted, NodeClaim: claim, Node: node, Reason: "Empty"},
		{Kind: controller.EventNodeDeleted, Node: node},
		{Kind: controller.EventNodeClaimDeleted, NodeClaim: claim, Node: node, Reason: "Empty"},
	}
	if diff := cmp.Diff(want, got); diff != "" || claim == "" || node == "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
