package ec2

import (
	"context"
	"sync"
	"time"
)

// batcher merges concurrent calls for single keys into one call for many. The first caller of a
// batch waits window (or until max keys joined), then runs the call for everyone itself; there
// is no background goroutine. The batched call runs under the leader's context values but not
// its cancellation alone, so a follower is never failed by the leader giving up: it is
// cancelled once every caller of the batch has given up, and bounded by a minute regardless
// (the SDK's own retries, with backoff, happen inside that bound).
type batcher[K comparable, V any] struct {
	window time.Duration
	max    int
	run    func(ctx context.Context, keys []K) (map[K]V, error)

	mu      sync.Mutex
	pending *batch[K, V]
}

type batch[K comparable, V any] struct {
	keys    []K
	full    chan struct{}
	done    chan struct{}
	results map[K]V
	err     error

	waiting int                // callers whose context has not ended
	cancel  context.CancelFunc // of the running call; nil before it starts
}

// leave records that a caller's context ended; the last one cancels the call.
func (b *batcher[K, V]) leave(bt *batch[K, V]) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bt.waiting--
	if bt.waiting == 0 && bt.cancel != nil {
		bt.cancel()
	}
}

// do returns the result for key, and whether the batch had one.
func (b *batcher[K, V]) do(ctx context.Context, key K) (V, bool, error) {
	var zero V
	if b.window < 0 {
		res, err := b.run(ctx, []K{key})
		v, ok := res[key]
		return v, ok, err
	}
	b.mu.Lock()
	bt := b.pending
	leader := bt == nil
	if leader {
		bt = &batch[K, V]{full: make(chan struct{}), done: make(chan struct{})}
		b.pending = bt
	}
	bt.keys = append(bt.keys, key)
	bt.waiting++
	if len(bt.keys) >= b.max && b.pending == bt {
		b.pending = nil
		close(bt.full)
	}
	b.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { b.leave(bt) })
	defer stop()

	if !leader {
		select {
		case <-bt.done:
			v, ok := bt.results[key]
			return v, ok, bt.err
		case <-ctx.Done():
			return zero, false, ctx.Err()
		}
	}
	t := time.NewTimer(b.window)
	select {
	case <-t.C:
	case <-bt.full:
		t.Stop()
	}
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	b.mu.Lock()
	if b.pending == bt {
		b.pending = nil
	}
	keys := bt.keys
	bt.cancel = cancel
	if bt.waiting == 0 { // everyone gave up during the window
		cancel()
	}
	b.mu.Unlock()
	bt.results, bt.err = b.run(runCtx, dedupe(keys))
	cancel()
	close(bt.done)
	v, ok := bt.results[key]
	return v, ok, bt.err
}

func dedupe[K comparable](keys []K) []K {
	seen := make(map[K]bool, len(keys))
	out := keys[:0:0]
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}
