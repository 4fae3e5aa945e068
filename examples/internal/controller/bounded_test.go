package controller_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/scheduling"
)

// heldCreate is the simulated cloud with a Create that returns only when released, whatever
// its context says: a cloud API call that outlives the launch's deadline.
type heldCreate struct {
	*cloudprovider.Memory
	entered, release chan struct{}
}

func (p *heldCreate) Create(_ context.Context, claim *nodeplan.NodeClaim) (*nodeplan.NodeClaim, error) {
	p.entered <- struct{}{}
	<-p.release
	return p.Memory.Create(context.Background(), claim)
}

// TestShutdownWhileDeletionRefused: a launch returns after its claim was given up, and the
// cloud refuses to delete the instance; stopping the controller must not wait for the
// deletion (it used to retry on a context that no shutdown cancels).
func TestShutdownWhileDeletionRefused(t *testing.T) {
	h := newHarness(t)
	prov := &heldCreate{Memory: h.w.Cloud, entered: make(chan struct{}, 4), release: make(chan struct{})}
	stop := h.start("a", func(c *controller.Controller) {
		c.Provider = prov
		c.Timeouts.Launch = 5 * time.Second
	})
	h.deploy("inflate", 1, 0)
	h.until(time.Minute, "a launch in flight", func() bool { return len(prov.entered) > 0 })
	// The launch outlives its deadline and the backstop: the claim is given up.
	h.until(2*time.Minute, "the claim given up", func() bool { return h.logs.count("nodeclaim launch timed out") > 0 })
	refused := make([]error, 1000)
	for i := range refused {
		refused[i] = errors.New("UnauthorizedOperation: not allowed to terminate")
	}
	h.w.Cloud.FailNext(cloudprovider.OpDelete, refused...)
	close(prov.release)
	// Wait for the deletion to be under way (in real time: nothing here waits on the clock);
	// a bound for a loaded machine, not a timing assertion.
	for deadline := time.Now().Add(time.Minute); h.logs.count("launch returned after the claim was abandoned; deleting the instance") == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the abandoned launch's instance was never being deleted; logs:\n%s", h.logs.String())
		}
		time.Sleep(time.Millisecond)
	}
	// Without the fix Run never returns (the retries wait on a clock that no longer moves);
	// the bound only has to be finite.
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Errorf("Run did not return within a minute of the stop while a deletion was being refused")
		h.w.Cloud.FailNext(cloudprovider.OpDelete) // nothing more to add; unstick by moving time
		for {
			select {
			case <-done:
				return
			default:
				h.w.Clock.Step(time.Minute)
				time.Sleep(time.Millisecond)
			}
		}
	}
}

// TestInterruptionNotBehindSolve: while a solve is stuck, an interruption is still received and
// its node drained.
func TestInterruptionNotBehindSolve(t *testing.T) {
	h := newHarness(t)
	block := make(chan struct{})
	entered := make(chan struct{}, 16)
	var held atomic.Bool
	solve := func(ctx context.Context, in scheduling.Input) (scheduling.Result, error) {
		if held.Load() {
			entered <- struct{}{}
			select {
			case <-block:
			case <-ctx.Done():
				return scheduling.Result{}, ctx.Err()
			}
		}
		return scheduling.Solve(ctx, in)
	}
	h.start("a", func(c *controller.Controller) { c.Solve = solve })
	h.deploy("inflate", 1, 0)
	h.until(time.Minute, "the pod running", func() bool { return h.running() == 1 })
	victim := h.instances()[0]
	held.Store(true)
	h.deploy("more", 10, 0) // more than the node has room for: a solve
	h.until(time.Minute, "a solve stuck", func() bool { return len(entered) > 0 })
	if err := h.w.Cloud.Interrupt(victim.Status.ProviderID, cloudprovider.InterruptionSpot, h.w.Clock.Now().Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	// The solve stays stuck until the end: without the fix the interruption is never handled,
	// so the virtual bound only has to be finite, and long enough that a loaded machine's
	// goroutines keep up with the clock.
	ok, err := h.w.Until(context.Background(), 10*time.Minute, func() bool {
		return h.logs.count("received spot interruption warning") > 0 && h.logs.count("tainted node") > 0
	})
	close(block)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Errorf("the interruption was not handled within 10 minutes while a solve ran; logs:\n%s", h.logs.String())
	}
}
