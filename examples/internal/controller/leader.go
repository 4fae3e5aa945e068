package controller

import (
	"context"
	"errors"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaderElection runs a function only while this replica holds a Lease, so several replicas can
// run and exactly one acts. Zero durations mean client-go's usual 15s / 10s / 2s.
type LeaderElection struct {
	Client kubernetes.Interface
	// Namespace and Name locate the Lease. Required.
	Namespace, Name string
	// Identity names this replica in the Lease; required (the pod name is a good choice).
	Identity                                  string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Logger                                    *slog.Logger
}

// Run campaigns for the Lease until ctx is done. Each time this replica becomes the leader it
// calls lead with a context that ends when the leadership does, and campaigns again after lead
// returns. The Lease is released when ctx ends, so a successor does not wait for it to expire.
func (le *LeaderElection) Run(ctx context.Context, lead func(context.Context)) error {
	if le.Client == nil || le.Namespace == "" || le.Name == "" || le.Identity == "" {
		return errors.New("controller: leader election needs Client, Namespace, Name and Identity")
	}
	log := le.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Name},
		Client:     le.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: le.Identity},
	}
	for ctx.Err() == nil {
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   orDefault(le.LeaseDuration, 15*time.Second),
			RenewDeadline:   orDefault(le.RenewDeadline, 10*time.Second),
			RetryPeriod:     orDefault(le.RetryPeriod, 2*time.Second),
			ReleaseOnCancel: true,
			Name:            le.Name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					log.Info("acquired leader lease", "lease", le.Namespace+"/"+le.Name, "identity", le.Identity)
					lead(ctx)
				},
				OnStoppedLeading: func() {
					log.Info("stopped leading", "lease", le.Namespace+"/"+le.Name, "identity", le.Identity)
				},
				OnNewLeader: func(id string) {
					if id != le.Identity {
						log.Info("another replica leads", "lease", le.Namespace+"/"+le.Name, "leader", id)
					}
				},
			},
		})
		if err != nil {
			return err
		}
		elector.Run(ctx)
	}
	return nil
}
