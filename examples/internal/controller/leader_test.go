package controller_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

// TestLeaderElection runs two replicas on one Lease: exactly one leads at a time, and when the
// leader stops, the other takes over.
func TestLeaderElection(t *testing.T) {
	cs := fake.NewClientset()
	var leading, maxLeading atomic.Int32
	leaders := make(chan string, 4)
	run := func(ctx context.Context, id string) {
		le := &controller.LeaderElection{Client: cs, Namespace: "kube-system", Name: "nodeplan", Identity: id,
			LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}
		if err := le.Run(ctx, func(ctx context.Context) {
			n := leading.Add(1)
			for {
				m := maxLeading.Load()
				if n <= m || maxLeading.CompareAndSwap(m, n) {
					break
				}
			}
			leaders <- id
			<-ctx.Done()
			leading.Add(-1)
		}); err != nil {
			t.Errorf("Run(%s) = %v", id, err)
		}
	}
	ctxs := map[string]context.CancelFunc{}
	var wg sync.WaitGroup
	for _, id := range []string{"a", "b"} {
		ctx, cancel := context.WithCancel(context.Background())
		ctxs[id] = cancel
		wg.Add(1)
		go func() { defer wg.Done(); run(ctx, id) }()
	}
	defer func() {
		for _, c := range ctxs {
			c()
		}
		wg.Wait()
	}()
	var first string
	select {
	case first = <-leaders:
	case <-time.After(10 * time.Second):
		t.Fatal("no replica became leader")
	}
	time.Sleep(1500 * time.Millisecond) // longer than the lease: the other must not lead meanwhile
	if got := maxLeading.Load(); got != 1 {
		t.Fatalf("replicas leading at once = %d, want 1", got)
	}
	ctxs[first]()
	select {
	case second := <-leaders:
		if second == first {
			t.Errorf("after %s stopped, %s led again; want the other replica", first, second)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other replica did not take over")
	}
	if got := maxLeading.Load(); got != 1 {
		t.Errorf("replicas leading at once = %d, want 1", got)
	}
}
