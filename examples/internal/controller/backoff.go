package controller

import (
	"context"
	"time"
)

// backoff spaces out the retries of one operation: the first wait is initial, each next one
// twice the last, never more than ceiling. The zero value waits 1s, 2s, 4s, … up to 30s.
// Every wait ends early, with ctx's error, when ctx does: no retry outlives a shutdown.
type backoff struct {
	initial, ceiling time.Duration
	next             time.Duration
}

// wait sleeps the next interval on the controller's clock.
func (b *backoff) wait(ctx context.Context, c *Controller) error {
	if b.next == 0 {
		b.next = orDefault(b.initial, time.Second)
	}
	d := b.next
	b.next = min(2*b.next, orDefault(b.ceiling, 30*time.Second))
	return c.sleep(ctx, d)
}

// reset starts the intervals over, after progress.
func (b *backoff) reset() { b.next = 0 }

// provisionInBackground starts a provisioning pass off the main loop once the batch is ready
// and no pass is running, so a slow solve never delays interruptions, claim syncs or
// disruption; while a pass runs the batch stays open and is taken by the next one.
func (c *Controller) provisionInBackground(ctx context.Context, now time.Time) {
	c.mu.Lock()
	running := c.busy["provision"]
	c.mu.Unlock()
	if running || !c.batch.ready(now) || !c.claimBusy("provision") {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.release("provision")
		c.provision(ctx)
	}()
}
