package controller

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaderElection runs a function only while this replica holds a Lease, so several replicas can
// run and at most one acts at any moment. Zero durations mean client-go's usual 15s / 10s / 2s.
//
// Two rules keep a hand-over from ever having two replicas at work:
//
//   - act only while the lease is valid with a margin: the work's context ends RenewDeadline
//     after the start of the last successful write of the Lease (client-go's own renew loop
//     may take up to RetryPeriod longer to give up). Others may take the Lease only
//     LeaseDuration after they saw that write, so the work has LeaseDuration − RenewDeadline
//     to stop;
//   - release the Lease only once the work has returned, never while it is still finishing.
//
// If the work outlives its lease anyway, Run logs it as an error: the function passed to Run
// must return promptly once its context ends.
type LeaderElection struct {
	Client kubernetes.Interface
	// Namespace and Name locate the Lease. Required.
	Namespace, Name string
	// Identity names this replica in the Lease; required (the pod name is a good choice).
	Identity string
	// LeaseDuration must exceed RenewDeadline, which must exceed RetryPeriod; the Lease
	// records whole seconds, so LeaseDuration is at least a second.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Logger                                    *slog.Logger
}

// Run campaigns for the Lease until ctx is done. Each time this replica becomes the leader it
// calls lead with a context that ends when the leadership does (ctx ended, or the Lease was not
// renewed in time) and campaigns again after lead returns. Once lead has returned, the Lease is
// released, so a successor does not wait for it to expire.
func (le *LeaderElection) Run(ctx context.Context, lead func(context.Context)) error {
	if le.Client == nil || le.Namespace == "" || le.Name == "" || le.Identity == "" {
		return errors.New("controller: leader election needs Client, Namespace, Name and Identity")
	}
	leaseDuration := orDefault(le.LeaseDuration, 15*time.Second)
	renewDeadline := orDefault(le.RenewDeadline, 10*time.Second)
	retryPeriod := orDefault(le.RetryPeriod, 2*time.Second)
	if leaseDuration < time.Second || renewDeadline >= leaseDuration || retryPeriod >= renewDeadline {
		return errors.New("controller: leader election needs LeaseDuration ≥ 1s > RenewDeadline > RetryPeriod")
	}
	log := le.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("lease", le.Namespace+"/"+le.Name, "identity", le.Identity)
	for ctx.Err() == nil {
		lock := &watchedLock{Interface: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Name},
			Client:     le.Client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: le.Identity},
		}}
		term, endTerm := context.WithCancel(ctx)
		done := make(chan struct{})
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:          lock,
			LeaseDuration: leaseDuration,
			RenewDeadline: renewDeadline,
			RetryPeriod:   retryPeriod,
			// Released below, once lead has returned: client-go would release as soon as ctx
			// ends, while the work is still stopping.
			ReleaseOnCancel: false,
			Name:            le.Name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ectx context.Context) {
					defer close(done)
					defer endTerm() // lead returned on its own: stop renewing, then release
					log.Info("acquired leader lease")
					wctx, stop := context.WithCancel(ectx)
					defer stop()
					go lock.watch(wctx, stop, renewDeadline, log)
					lead(wctx)
				},
				OnStoppedLeading: func() {},
				OnNewLeader: func(id string) {
					if id != le.Identity {
						log.Info("another replica leads", "leader", id)
					}
				},
			},
		})
		if err != nil {
			endTerm()
			return err
		}
		elector.Run(term)
		if lock.acquired() {
			// client-go starts lead in a goroutine whenever it acquired the Lease; wait for
			// the work to stop before anyone may take over.
			<-done
			if over := time.Since(lock.renewed().Add(leaseDuration)); over > 0 {
				log.Error("work went on after the lease could be taken by another replica", "overrun", over)
			}
			log.Info("stopped leading")
			le.release(lock, renewDeadline, log)
		}
		endTerm()
	}
	return nil
}

// release gives the Lease up if this replica still holds it, as client-go does: no holder and a
// one-second duration, so a successor takes it at its next try.
func (le *LeaderElection) release(lock *watchedLock, timeout time.Duration, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	rec, _, err := lock.Get(ctx)
	if err != nil {
		log.Error("could not read the lease to release it", "err", err)
		return
	}
	if rec.HolderIdentity != le.Identity {
		return
	}
	now := metav1.Now()
	if err := lock.Update(ctx, resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1, RenewTime: now,
		AcquireTime: now, LeaderTransitions: rec.LeaderTransitions}); err != nil {
		log.Error("could not release the lease", "err", err)
		return
	}
	log.Info("released leader lease")
}

// watchedLock is the Lease lock, noting when each successful write that holds the Lease for
// this replica was sent: the lease is valid from then on for LeaseDuration in every observer's
// eyes, since an observer starts counting no earlier than it sees the write.
type watchedLock struct {
	resourcelock.Interface

	mu   sync.Mutex
	sent time.Time // start of the last successful holding write; zero before any
}

func (l *watchedLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	err := l.Interface.Create(ctx, r)
	l.note(start, r, err)
	return err
}

func (l *watchedLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	err := l.Interface.Update(ctx, r)
	l.note(start, r, err)
	return err
}

func (l *watchedLock) note(start time.Time, r resourcelock.LeaderElectionRecord, err error) {
	if err != nil || r.HolderIdentity != l.Identity() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if start.After(l.sent) {
		l.sent = start
	}
}

func (l *watchedLock) renewed() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent
}

func (l *watchedLock) acquired() bool { return !l.renewed().IsZero() }

// watch calls stop once renewDeadline has passed since the last successful renewal was sent,
// or returns when ctx ends.
func (l *watchedLock) watch(ctx context.Context, stop func(), renewDeadline time.Duration, log *slog.Logger) {
	for {
		left := time.Until(l.renewed().Add(renewDeadline))
		if left <= 0 {
			log.Error("leader lease not renewed within the renew deadline; stopping work", "renew-deadline", renewDeadline)
			stop()
			return
		}
		t := time.NewTimer(left)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
