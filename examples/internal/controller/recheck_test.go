package controller_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
)

// podWrites records the evictions and deletions of pods the API server received, with the
// simulated time.
type podWrites struct {
	mu        sync.Mutex
	evictions []string
	deletes   []podDelete
}

type podDelete struct {
	pod   string
	at    time.Time
	grace *int64
}

func (h *harness) recordPodWrites() *podWrites {
	rec := &podWrites{}
	h.w.Client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "eviction" {
			ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
			rec.mu.Lock()
			rec.evictions = append(rec.evictions, a.GetNamespace()+"/"+ev.Name)
			rec.mu.Unlock()
		}
		return false, nil, nil
	})
	h.w.Client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteActionImpl)
		rec.mu.Lock()
		rec.deletes = append(rec.deletes, podDelete{pod: a.GetNamespace() + "/" + d.Name, at: h.w.Clock.Now(),
			grace: d.DeleteOptions.GracePeriodSeconds})
		rec.mu.Unlock()
		return false, nil, nil
	})
	return rec
}

func (r *podWrites) counts() (evictions, deletes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.evictions), len(r.deletes)
}

func (h *harness) pods(ns string) []corev1.Pod {
	list, err := h.w.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

func (h *harness) node(name string) *corev1.Node {
	n, err := h.w.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

// driftWithHeldReplacement runs two pods on one node, drifts it (a new image, on a pool without
// terminationGracePeriod, so the drift is graceful), and holds the replacement's kubelet back:
// it returns with the command waiting for its replacement and the old node's name.
func driftWithHeldReplacement(h *harness) string {
	h.t.Helper()
	h.pools[0].Template.TerminationGracePeriod = 0
	h.start("a", nil)
	h.deploy("inflate", 2, 0)
	h.until(time.Minute, "2 pods running", func() bool { return h.running() == 2 })
	old := h.pods("test")[0].Spec.NodeName
	h.w.Kubelet.SetBootTime(time.Hour)
	h.w.Cloud.SetImageID("img-2")
	h.until(time.Minute, "a replacement launched", func() bool { return len(h.instances()) == 2 })
	if err := h.w.Advance(context.Background(), 30*time.Second); err != nil { // the command waits
		h.t.Fatal(err)
	}
	return old
}

// releaseAndExpectCancel lets the replacement register and checks the drain of old was
// cancelled: not one eviction, the node untainted and unannotated, its instance still there.
func releaseAndExpectCancel(h *harness, rec *podWrites, old, blocker string) {
	h.t.Helper()
	h.w.Kubelet.SetBootTime(20 * time.Second)
	h.until(2*time.Minute, "the command cancelled", func() bool { return h.logs.count("disruption command cancelled") > 0 })
	if err := h.w.Advance(context.Background(), 10*time.Second); err != nil {
		h.t.Fatal(err)
	}
	if ev, del := rec.counts(); ev+del > 0 {
		h.t.Errorf("evictions = %d, deletions = %d after %s appeared during the wait; want 0", ev, del, blocker)
	}
	n := h.node(old)
	if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == nodeplan.TaintDisrupted }) {
		h.t.Errorf("node %s still has the %s taint: %v", old, nodeplan.TaintDisrupted, n.Spec.Taints)
	}
	if _, ok := n.Annotations["nodeplan.io/terminating"]; ok {
		h.t.Errorf("node %s still annotated terminating", old)
	}
	if !strings.Contains(h.logs.String(), blocker) {
		h.t.Errorf("the cancellation does not name %q; logs:\n%s", blocker, h.logs.String())
	}
	if h.running() != 2 {
		h.t.Errorf("running pods = %d, want 2", h.running())
	}
}

// TestDoNotDisruptDuringReplacementWait: a pod annotated karpenter.sh/do-not-disrupt while a
// drift command waits for its replacement stops the drain before it starts.
func TestDoNotDisruptDuringReplacementWait(t *testing.T) {
	h := newHarness(t)
	rec := h.recordPodWrites()
	old := driftWithHeldReplacement(h)
	p := h.pods("test")[0]
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[nodeplan.AnnotationDoNotDisrupt] = "true"
	if _, err := h.w.Client.CoreV1().Pods("test").Update(context.Background(), &p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	releaseAndExpectCancel(h, rec, old, "pod test/"+p.Name+" is annotated karpenter.sh/do-not-disrupt")
}

// TestPDBDuringReplacementWait: a PodDisruptionBudget that allows no disruption, created while
// the command waits, stops the drain before it starts (rather than tainting the node and
// retrying evictions for ever).
func TestPDBDuringReplacementWait(t *testing.T) {
	h := newHarness(t)
	rec := h.recordPodWrites()
	old := driftWithHeldReplacement(h)
	all := intstr.FromString("100%")
	if _, err := h.w.Client.PolicyV1().PodDisruptionBudgets("test").Create(context.Background(), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "strict", Namespace: "test"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &all,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "inflate"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	releaseAndExpectCancel(h, rec, old, "PodDisruptionBudget test/strict allows no disruption now")
}

// TestDoNotDisruptAtEviction: the annotation arrives after the drain started (every eviction
// is refused for a while, as a PDB would): the graceful drain is cancelled at the next
// eviction, which is never sent, and the node released.
func TestDoNotDisruptAtEviction(t *testing.T) {
	h := newHarness(t)
	h.pools[0].Template.TerminationGracePeriod = 0
	rec := h.recordPodWrites()
	var hold atomic.Bool
	var refused atomic.Int32
	hold.Store(true)
	h.w.Client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "eviction" && hold.Load() {
			refused.Add(1)
			return true, nil, apierrors.NewTooManyRequestsError("held by the test")
		}
		return false, nil, nil
	})
	h.start("a", nil)
	h.deploy("inflate", 2, 0)
	h.until(time.Minute, "2 pods running", func() bool { return h.running() == 2 })
	node := h.pods("test")[0].Spec.NodeName
	h.w.Cloud.SetImageID("img-2")
	h.until(2*time.Minute, "the drain started", func() bool { return refused.Load() >= 2 })
	p := h.pods("test")[1]
	p.Annotations = map[string]string{nodeplan.AnnotationDoNotDisrupt: "true"}
	if _, err := h.w.Client.CoreV1().Pods("test").Update(context.Background(), &p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	hold.Store(false)
	h.until(time.Minute, "the drain cancelled", func() bool { return h.logs.count("disruption command cancelled") > 0 })
	rec.mu.Lock()
	if slices.Contains(rec.evictions, "test/"+p.Name) {
		t.Errorf("pod %s was evicted after it was annotated do-not-disrupt", p.Name)
	}
	rec.mu.Unlock()
	if slices.ContainsFunc(h.node(node).Spec.Taints, func(t corev1.Taint) bool { return t.Key == nodeplan.TaintDisrupted }) {
		t.Errorf("node %s still tainted after the cancellation", node)
	}
}

// TestGracefulDeletionBeforeDeadline: a pod a PDB holds on an interrupted node is deleted its own
// terminationGracePeriodSeconds (20s) before the node's terminationGracePeriod (1m) ends, with
// those 20s of grace, not force-deleted with zero grace at the end.
func TestGracefulDeletionBeforeDeadline(t *testing.T) {
	h := newHarness(t)
	h.pools[0].Template.TerminationGracePeriod = time.Minute
	rec := h.recordPodWrites()
	h.start("a", nil)
	h.deploy("guarded", 1, 1)
	h.until(time.Minute, "the pod running", func() bool { return h.running() == 1 })
	// Give the pod a 20s grace period, as its spec would.
	p := h.pods("test")[0]
	victim := h.instances()[0]
	twenty := int64(20)
	p.Spec.TerminationGracePeriodSeconds = &twenty
	if _, err := h.w.Client.CoreV1().Pods("test").Update(context.Background(), &p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	interrupted := h.w.Clock.Now()
	if err := h.w.Cloud.Interrupt(victim.Status.ProviderID, cloudprovider.InterruptionSpot, interrupted.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	h.until(2*time.Minute, "the pod deleted", func() bool { _, d := rec.counts(); return d > 0 })
	rec.mu.Lock()
	d := rec.deletes[0]
	rec.mu.Unlock()
	if d.pod != "test/"+p.Name {
		t.Fatalf("deleted %s, want test/%s", d.pod, p.Name)
	}
	// What is left of the deadline when the step lands, in whole seconds: 20, or 19 when the
	// step landed just after the due time.
	if d.grace == nil || *d.grace < 19 || *d.grace > 20 {
		t.Errorf("deleted with gracePeriodSeconds %s, want 20 (the pod's own)", fmtGrace(d.grace))
	}
	// The drain starts within a few seconds of the interruption; the node's deadline is a
	// minute later, so the deletion is due 40s after the drain began.
	if after := d.at.Sub(interrupted); after < 38*time.Second || after > 50*time.Second {
		t.Errorf("pod deleted %v after the interruption; want about 40s (1m deadline − 20s grace)", after)
	}
}

func fmtGrace(g *int64) string {
	if g == nil {
		return "unset"
	}
	return strconv.FormatInt(*g, 10)
}

// TestNoEvictionBeforeTaint: the API server refuses the node update that taints it (an outage):
// the drain waits and retries instead of evicting pods the scheduler would put right back.
// Found by TestSoak (seed 3).
func TestNoEvictionBeforeTaint(t *testing.T) {
	h := newHarness(t)
	var failing atomic.Bool
	var untainted atomic.Int32
	h.w.Client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		obj, err := h.w.Client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), a.GetNamespace(), ev.Name)
		if err != nil {
			return false, nil, nil
		}
		n, err := h.w.Client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", obj.(*corev1.Pod).Spec.NodeName)
		if err == nil && !slices.ContainsFunc(n.(*corev1.Node).Spec.Taints, func(t corev1.Taint) bool { return t.Key == nodeplan.TaintDisrupted }) {
			untainted.Add(1)
		}
		return false, nil, nil
	})
	h.w.Client.PrependReactor("update", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if failing.Load() {
			return true, nil, apierrors.NewServiceUnavailable("the server is restarting")
		}
		return false, nil, nil
	})
	h.start("a", nil)
	h.deploy("inflate", 2, 0)
	h.until(time.Minute, "2 pods running", func() bool { return h.running() == 2 })
	victim := h.instances()[0]
	failing.Store(true)
	if err := h.w.Cloud.Interrupt(victim.Status.ProviderID, cloudprovider.InterruptionSpot, h.w.Clock.Now().Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := h.w.Advance(context.Background(), 15*time.Second); err != nil {
		t.Fatal(err)
	}
	failing.Store(false)
	h.until(2*time.Minute, "the interrupted instance deleted", func() bool {
		for _, i := range h.instances() {
			if i.Status.ProviderID == victim.Status.ProviderID {
				return false
			}
		}
		return true
	})
	if n := untainted.Load(); n > 0 {
		t.Errorf("%d evictions sent while the node was not tainted", n)
	}
}
