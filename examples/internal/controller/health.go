package controller

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Health serves the liveness and readiness probes, as Karpenter's chart wires them:
//
//   - /healthz answers 200 while the process serves HTTP (a hung process fails it and is
//     restarted);
//   - /readyz answers 200 once the API server has answered (Started), and, on the replica
//     holding the Lease, once the controller's informer caches have synced and the cloud answers
//     (CloudCheck, at most every CloudCheckEvery). Otherwise 503, with the failing checks named.
//
// A replica waiting for the Lease is ready as soon as the API server answered: it is a warm
// standby, and failing readiness would only block rollouts. The zero value is usable; every
// method is safe on a nil *Health (the controller runs without probes).
type Health struct {
	// CloudCheck asks the cloud something cheap; nil means the cloud is not checked.
	CloudCheck func(context.Context) error
	// CloudCheckEvery bounds how often CloudCheck runs; zero means 30s. Between runs the last
	// answer is reused, so probes every few seconds do not become cloud API calls.
	CloudCheckEvery time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu        sync.Mutex
	started   bool
	leading   bool
	synced    bool
	checkedAt time.Time
	cloudErr  error
}

// SetStarted records that the API server answered.
func (h *Health) SetStarted() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.started = true
	h.mu.Unlock()
}

// SetLeading records whether this replica holds the Lease (runs the controller).
func (h *Health) SetLeading(leading bool) {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.leading = leading
	if !leading {
		h.synced = false
	}
	h.mu.Unlock()
}

// setSynced records whether the controller's caches are synced; Controller.Run calls it.
func (h *Health) setSynced(synced bool) {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.synced = synced
	h.mu.Unlock()
}

// Ready returns nil when the replica is ready, else an error naming every failing check.
func (h *Health) Ready(ctx context.Context) error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	started, leading, synced := h.started, h.leading, h.synced
	h.mu.Unlock()
	var failing []string
	if !started {
		failing = append(failing, "apiserver: not answered yet")
	}
	if leading && !synced {
		failing = append(failing, "caches: informer caches not synced")
	}
	if leading && h.CloudCheck != nil {
		if err := h.cloud(ctx); err != nil {
			failing = append(failing, "cloud: "+err.Error())
		}
	}
	if len(failing) > 0 {
		return fmt.Errorf("not ready: %s", strings.Join(failing, "; "))
	}
	return nil
}

func (h *Health) cloud(ctx context.Context) error {
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	every := h.CloudCheckEvery
	if every == 0 {
		every = 30 * time.Second
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.checkedAt.IsZero() && now().Sub(h.checkedAt) < every {
		return h.cloudErr
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	h.cloudErr, h.checkedAt = h.CloudCheck(cctx), now()
	return h.cloudErr
}

// Handler serves /healthz and /readyz.
func (h *Health) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := h.Ready(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}
