package sim

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

// Epoch is when every simulation starts: a fixed instant, so runs are reproducible.
var Epoch = time.Date(2026, 9, 1, 9, 0, 0, 0, time.UTC)

// World is a simulated cluster and cloud on a virtual clock: the fake API server, the
// in-memory cloud, and the kubelets, scheduler and Deployment controller that a controller
// under test expects around it. Time moves only in Advance, in steps of Step; after each step
// the simulated components act, then the World pauses Settle of real time so the controller's
// goroutines can react before the clock moves again.
type World struct {
	Clock  *clocktesting.FakeClock
	Client *fake.Clientset
	// Dynamic holds the Karpenter objects (NodeClaims, NodePools, EC2NodeClasses).
	Dynamic     *dynamicfake.FakeDynamicClient
	Cloud       *cloudprovider.Memory
	Kubelet     *Kubelet
	Scheduler   *Scheduler
	Deployments *Deployments
	// Step is the virtual time between actions of the simulated components; Settle the real
	// pause after each step.
	Step, Settle time.Duration
}

// NewWorld returns a World at [Epoch] whose cloud sells the embedded catalog. log receives the
// simulated components' debug lines; nil discards them.
func NewWorld(log *slog.Logger) *World {
	clk := clocktesting.NewFakeClock(Epoch)
	cs := NewCluster()
	cloud := &cloudprovider.Memory{Catalog: Catalog(), Now: clk.Now}
	return &World{
		Clock:       clk,
		Client:      cs,
		Dynamic:     NewDynamic(),
		Cloud:       cloud,
		Kubelet:     &Kubelet{Client: cs, Provider: cloud, Logger: log},
		Scheduler:   &Scheduler{Client: cs, Logger: log},
		Deployments: &Deployments{Client: cs},
		Step:        100 * time.Millisecond,
		Settle:      time.Millisecond,
	}
}

// NewDynamic returns an in-process store of the Karpenter objects the controller reads and
// writes, addressed as on a real API server.
func NewDynamic() *dynamicfake.FakeDynamicClient {
	d := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), controller.ListKinds())
	// Watches that never block or panic (store.go); d.Tracker() still reads the same objects.
	st := newStore(d.Tracker(), nil)
	serve(&d.Fake, st)
	// Set what an API server sets on create that the controller reads: a UID (owner
	// references name it).
	var seq atomic.Int64
	d.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if u, ok := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured); ok && u.GetUID() == "" {
			u.SetUID(types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", seq.Add(1))))
		}
		return false, nil, nil
	})
	// A status subresource, as Karpenter's CRDs declare: an update of the object keeps the
	// stored status, an update of the status keeps the rest (no stale copy clobbers either).
	d.PrependReactor("update", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ua := a.(k8stesting.UpdateAction)
		in, ok := ua.GetObject().(*unstructured.Unstructured)
		if !ok {
			return false, nil, nil
		}
		cur, err := st.Get(ua.GetResource(), ua.GetNamespace(), in.GetName())
		if err != nil {
			return false, nil, nil
		}
		stored := cur.(*unstructured.Unstructured)
		out := in.DeepCopy()
		if ua.GetSubresource() == "status" {
			out = stored.DeepCopy()
			if st, ok := in.Object["status"]; ok {
				out.Object["status"] = st
			} else {
				delete(out.Object, "status")
			}
		} else if st, ok := stored.Object["status"]; ok {
			out.Object["status"] = st
		} else {
			delete(out.Object, "status")
		}
		if err := st.Update(ua.GetResource(), out, ua.GetNamespace()); err != nil {
			return true, nil, err
		}
		got, err := st.Get(ua.GetResource(), ua.GetNamespace(), in.GetName())
		return true, got, err
	})
	return d
}

// Elapsed is the virtual time since Epoch.
func (w *World) Elapsed() time.Duration { return w.Clock.Now().Sub(Epoch) }

// Advance moves the virtual clock forward by d, step by step.
func (w *World) Advance(ctx context.Context, d time.Duration) error {
	_, err := w.Until(ctx, d, nil)
	return err
}

// Until advances the clock step by step until cond holds or max has passed, and reports
// whether cond held. A nil cond runs the whole max.
func (w *World) Until(ctx context.Context, max time.Duration, cond func() bool) (bool, error) {
	end := w.Clock.Now().Add(max)
	for {
		if cond != nil && cond() {
			return true, nil
		}
		if !w.Clock.Now().Before(end) {
			return false, nil
		}
		if err := ctx.Err(); err != nil {
			return false, err
		}
		w.Clock.Step(w.Step)
		now := w.Clock.Now()
		if err := w.Deployments.Step(ctx, now); err != nil {
			return false, err
		}
		if err := w.Kubelet.Step(ctx, now); err != nil {
			return false, err
		}
		if err := w.Scheduler.Step(ctx, now); err != nil {
			return false, err
		}
		time.Sleep(w.Settle)
	}
}

// String describes the World's clock, for errors.
func (w *World) String() string { return fmt.Sprintf("sim world at +%v", w.Elapsed()) }
