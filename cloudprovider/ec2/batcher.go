package ec2

import (
	"context"
	"sync"
	"time"
)

// batcher merges concurrent calls for single keys into one call for many. The first caller of a
// batch waits window (or until max keys joined), then runs the call for everyone itself; there
// is no background goroutine. The batched call runs under the leader's context values but not
// its cancellation, bounded by a minute, so a follower is never failed by the leader giving up.
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
	if len(bt.keys) >= b.max && b.pending == bt {
		b.pending = nil
		close(bt.full)
	}
	b.mu.Unlock()

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
	b.mu.Lock()
	if b.pending == bt {
		b.pending = nil
	}
	keys := bt.keys
	b.mu.Unlock()
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
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
