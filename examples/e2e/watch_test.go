package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

// claimHistory is every state of every NodeClaim a watch delivered, in order: what `kubectl
// get nodeclaims -w` would have printed.
type claimHistory struct {
	mu     sync.Mutex
	states map[string][]nodeClaim
}

// watchClaims records the NodeClaims' states from now until the test ends. The watch is
// re-established from the last resource version if the API server closes it.
func (w *world) watchClaims() *claimHistory {
	h := &claimHistory{states: map[string][]nodeClaim{}}
	list, err := w.dyn.Resource(controller.NodeClaimGVR).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	rv := list.GetResourceVersion()
	started := make(chan struct{})
	t := w.t
	w.background(func(ctx context.Context) {
		first := true
		for ctx.Err() == nil {
			wi, err := w.dyn.Resource(controller.NodeClaimGVR).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			if first {
				close(started)
				first = false
			}
			if err != nil {
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					rv = ""
				}
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range wi.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				rv = u.GetResourceVersion()
				if ev.Type == watch.Added || ev.Type == watch.Modified {
					c := toNodeClaim(t, u)
					h.mu.Lock()
					h.states[c.Name] = append(h.states[c.Name], c)
					h.mu.Unlock()
				}
			}
			wi.Stop()
		}
	})
	<-started
	return h
}

func (h *claimHistory) of(name string) []nodeClaim {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]nodeClaim(nil), h.states[name]...)
}

// lifecycle checks that a claim's states went Launched → Registered → Initialized → Ready, each
// seen True in a state of its own before the next (Ready comes with Initialized, its last
// dependent), and that no condition was True before the one it follows. It returns the
// sequence of condition sets seen, for messages.
func lifecycle(states []nodeClaim) (seq []string, problem string) {
	order := []string{controller.CondLaunched, controller.CondRegistered, controller.CondInitialized, controller.CondReady}
	first := map[string]int{}
	for i, s := range states {
		var on []string
		for _, c := range order {
			if s.is(c) {
				on = append(on, c)
				if _, ok := first[c]; !ok {
					first[c] = i
				}
			}
		}
		label := strings.Join(on, "+")
		if label == "" {
			label = "none"
		}
		if len(seq) == 0 || seq[len(seq)-1] != label {
			seq = append(seq, label)
		}
		for j := 1; j < len(order); j++ {
			if s.is(order[j]) && !s.is(order[j-1]) {
				return seq, fmt.Sprintf("state %d has %s True before %s", i, order[j], order[j-1])
			}
		}
	}
	for _, c := range order {
		if _, ok := first[c]; !ok {
			return seq, fmt.Sprintf("%s was never True", c)
		}
	}
	if !(first[controller.CondLaunched] < first[controller.CondRegistered] && first[controller.CondRegistered] < first[controller.CondInitialized]) {
		return seq, fmt.Sprintf("Launched, Registered and Initialized did not turn True in states of their own (first True at %d, %d, %d)",
			first[controller.CondLaunched], first[controller.CondRegistered], first[controller.CondInitialized])
	}
	return seq, ""
}

// drainRecord is what a poller saw while a node was drained: the fewest Ready pods of the
// app, the most of them evicted at once, and what was left when the instance stopped running.
type drainRecord struct {
	mu sync.Mutex
	// minReady is the fewest of the app's pods Ready and not being deleted, after the drain
	// started.
	minReady int
	// podsAtTermination are the pods still on the node when the instance was first seen not
	// running; -1 until then.
	podsAtTermination int
	// nodeHeld: the Node was seen being deleted (deletionTimestamp set) while it still held
	// pods — the finalizer kept it through the drain.
	nodeHeld bool
	// claimHeld: the NodeClaim was seen being deleted while the node still held pods.
	claimHeld bool
	// nodeGoneFirst: the Node was seen gone while the instance was still running.
	nodeGoneFirst bool
	terminated    bool
	// pdbMinHealthy is the fewest currentHealthy the PDB controller reported; -1 if never.
	pdbMinHealthy int
}

// recordDrain polls every 100ms until stop is called: the app's pods, the node, its instance
// and the app's PDB.
func (w *world) recordDrain(app, claim, node, providerID string) (*drainRecord, func()) {
	r := &drainRecord{minReady: 1 << 30, podsAtTermination: -1, pdbMinHealthy: -1}
	ctx := context.Background()
	stop := w.background(func(bg context.Context) {
		for bg.Err() == nil {
			// The instance first: a Node gone in this round with the instance still running
			// counts against the order.
			inst, _ := w.instance(providerID)
			running := inst.State == "running" || inst.State == "pending"
			pods, err := w.client.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
			n, nerr := w.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			pdb, perr := w.client.PolicyV1().PodDisruptionBudgets(w.ns).Get(ctx, app, metav1.GetOptions{})
			nc, cerr := w.dyn.Resource(controller.NodeClaimGVR).Get(ctx, claim, metav1.GetOptions{})
			r.mu.Lock()
			if err == nil {
				ready, onNode := 0, 0
				for _, p := range pods.Items {
					if p.Spec.NodeName == node {
						onNode++
					}
					if p.DeletionTimestamp == nil && podReady(&p) {
						ready++
					}
				}
				r.minReady = min(r.minReady, ready)
				if !running && !r.terminated {
					r.terminated = true
					r.podsAtTermination = onNode
				}
				if nerr == nil && n.DeletionTimestamp != nil && onNode > 0 {
					r.nodeHeld = true
				}
				if cerr == nil && nc.GetDeletionTimestamp() != nil && onNode > 0 {
					r.claimHeld = true
				}
			}
			if apierrors.IsNotFound(nerr) && running {
				r.nodeGoneFirst = true
			}
			if perr == nil && pdb.Status.ObservedGeneration == pdb.Generation {
				if r.pdbMinHealthy < 0 || int(pdb.Status.CurrentHealthy) < r.pdbMinHealthy {
					r.pdbMinHealthy = int(pdb.Status.CurrentHealthy)
				}
			}
			r.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	})
	return r, stop
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
