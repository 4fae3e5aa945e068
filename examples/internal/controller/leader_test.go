package controller_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

// activity records when each replica's work ran, on the monotonic clock: from the moment lead
// is called to the moment it returns, which includes the time the work takes to stop.
type activity struct {
	mu        sync.Mutex
	intervals []interval
	started   chan string
}

type interval struct {
	id         string
	start, end time.Time
}

func newActivity() *activity { return &activity{started: make(chan string, 16)} }

// lead returns a leader function whose work needs stopTime to wind down after its context
// ends, as the controller's Run waits for its goroutines.
func (a *activity) lead(id string, stopTime time.Duration) func(context.Context) {
	return func(ctx context.Context) {
		a.mu.Lock()
		i := len(a.intervals)
		a.intervals = append(a.intervals, interval{id: id, start: time.Now()})
		a.mu.Unlock()
		a.started <- id
		<-ctx.Done()
		time.Sleep(stopTime) // still acting: finishing a drain, a launch
		a.mu.Lock()
		a.intervals[i].end = time.Now()
		a.mu.Unlock()
	}
}

// overlaps returns every pair of intervals of different replicas that overlap; an interval
// still open ends in the future.
func (a *activity) overlaps() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	closed := slices.Clone(a.intervals)
	for i := range closed {
		if closed[i].end.IsZero() {
			closed[i].end = time.Now().Add(time.Hour)
		}
	}
	for i, x := range closed {
		for _, y := range closed[i+1:] {
			if x.id != y.id && x.start.Before(y.end) && y.start.Before(x.end) {
				out = append(out, x.id+" ["+x.start.Format("05.000")+", "+x.end.Format("05.000")+"] and "+
					y.id+" ["+y.start.Format("05.000")+", "+y.end.Format("05.000")+"]")
			}
		}
	}
	return out
}

func (a *activity) next(t *testing.T, what string) string {
	t.Helper()
	select {
	case id := <-a.started:
		return id
	case <-time.After(time.Minute): // a bound for a loaded machine, not a timing assertion
		t.Fatalf("%s: no replica became leader", what)
		return ""
	}
}

// successor returns the next replica to lead other than prev, which was stopped or cut off at
// since. prev leading again is allowed only if that term began before since (on a loaded
// machine a leader can lose its lease and win it back before the test acts).
func (a *activity) successor(t *testing.T, what, prev string, since time.Time) string {
	t.Helper()
	for {
		id := a.next(t, what)
		if id != prev {
			return id
		}
		a.mu.Lock()
		var start time.Time
		for _, iv := range a.intervals {
			if iv.id == prev {
				start = iv.start
			}
		}
		a.mu.Unlock()
		if !start.Before(since) {
			t.Fatalf("%s: %s led again after it was stopped; want the other replica", what, prev)
		}
	}
}

// replicas runs LeaderElection for each client on one Lease and returns a cancel per replica.
func replicas(t *testing.T, a *activity, stopTime time.Duration, clients map[string]*fake.Clientset) map[string]context.CancelFunc {
	cancels := map[string]context.CancelFunc{}
	var wg sync.WaitGroup
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for id := range clients {
			if !yield(id) {
				return
			}
		}
	}) {
		ctx, cancel := context.WithCancel(context.Background())
		cancels[id] = cancel
		// Margins wide enough for a loaded machine under -race: the work must stop within
		// LeaseDuration − RenewDeadline (3s) of the last renewal, the test's work takes at
		// most 500ms to wind down.
		le := &controller.LeaderElection{Client: clients[id], Namespace: "kube-system", Name: "nodeplan", Identity: id,
			LeaseDuration: 6 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := le.Run(ctx, a.lead(id, stopTime)); err != nil {
				t.Errorf("Run(%s) = %v", id, err)
			}
		}()
	}
	t.Cleanup(func() {
		for _, c := range cancels {
			c()
		}
		wg.Wait()
	})
	return cancels
}

// sharedClients returns fake clientsets, one per id, over one object store: replicas talking to
// one API server, each through its own connection (so one can be cut off). Lease updates are
// checked against the stored resourceVersion as the API server does (the fake's store does
// not), so two replicas cannot both win a race for the Lease.
func sharedClients(ids ...string) map[string]*fake.Clientset {
	tracker := k8stesting.NewObjectTracker(scheme.Scheme, scheme.Codecs.UniversalDecoder())
	var mu sync.Mutex
	rv := 0
	leases := coordinationv1.SchemeGroupVersion.WithResource("leases")
	optimistic := func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		rv++
		l := a.(interface{ GetObject() runtime.Object }).GetObject().(*coordinationv1.Lease).DeepCopy()
		switch a.GetVerb() {
		case "create":
			l.ResourceVersion = strconv.Itoa(rv)
			return true, l, tracker.Create(leases, l, a.GetNamespace())
		case "update":
			cur, err := tracker.Get(leases, a.GetNamespace(), l.Name)
			if err != nil {
				return true, nil, err
			}
			if cur.(*coordinationv1.Lease).ResourceVersion != l.ResourceVersion {
				return true, nil, apierrors.NewConflict(leases.GroupResource(), l.Name, errors.New("the object has been modified"))
			}
			l.ResourceVersion = strconv.Itoa(rv)
			return true, l, tracker.Update(leases, l, a.GetNamespace())
		}
		return false, nil, nil
	}
	out := map[string]*fake.Clientset{}
	for _, id := range ids {
		cs := &fake.Clientset{}
		cs.AddReactor("create", "leases", optimistic)
		cs.AddReactor("update", "leases", optimistic)
		cs.AddReactor("*", "*", k8stesting.ObjectReaction(tracker))
		out[id] = cs
	}
	return out
}

// TestLeaderHandOverOnShutdown: the leader is stopped while its work takes 500ms to wind down;
// the successor must not start before it has. The active intervals are measured, not slept.
func TestLeaderHandOverOnShutdown(t *testing.T) {
	a := newActivity()
	cancels := replicas(t, a, 500*time.Millisecond, sharedClients("a", "b"))
	first := a.next(t, "start")
	stopped := time.Now()
	cancels[first]()
	a.successor(t, "hand-over", first, stopped)
	if o := a.overlaps(); len(o) > 0 {
		t.Errorf("two replicas active at once: %v", o)
	}
}

// TestLeaderPartitioned: the leader is cut off from the API server (its Lease writes fail) while
// the other replica can still reach it. The leader stops working before the Lease can be taken,
// and the other takes over only then.
func TestLeaderPartitioned(t *testing.T) {
	a := newActivity()
	clients := sharedClients("a", "b")
	var cut [2]atomic.Bool
	for i, id := range []string{"a", "b"} {
		clients[id].PrependReactor("*", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
			if cut[i].Load() {
				return true, nil, errors.New("connection refused")
			}
			return false, nil, nil
		})
	}
	replicas(t, a, 300*time.Millisecond, clients)
	first := a.next(t, "start")
	cutAt := time.Now()
	cut[map[string]int{"a": 0, "b": 1}[first]].Store(true)
	a.successor(t, "take-over", first, cutAt)
	if o := a.overlaps(); len(o) > 0 {
		t.Errorf("two replicas active at once: %v", o)
	}
}
