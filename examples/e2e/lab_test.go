package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

// TestInflateLab is issue 15's "Done when" on the real kube-apiserver and kube-scheduler, with
// the EC2 provider against ec2test: the seeds' inflate lab applied as written, scaled up; a
// Node and then a NodeClaim deleted under a PodDisruptionBudget; an invalid NodePool edit
// beside a pool that keeps launching; a controller restart between Launched and Registered.
// The subtests build on each other and share one controller where they can.
func TestInflateLab(t *testing.T) {
	w := newWorld(t, "lab", "inflate-lab")
	ctx := context.Background()
	w.applyLab()
	defer w.deleteLab(labPoolName, "other")
	if err := w.deps.Create(ctx, w.labDeployment(labDeployment, "my-team")); err != nil {
		t.Fatal(err)
	}
	w.createPDB(labDeployment, labPDBMinReady)
	history := w.watchClaims()
	stop := w.controller("a", false)
	defer func() { stop() }()
	defer w.cleanUp(labDeployment, "other")

	w.run("scale 0 to 5: one NodeClaim Launched, Registered, Initialized, Ready; five pods bound to its node", func(t *testing.T) {
		w.scale(labDeployment, 5)
		w.waitRunning(labDeployment, 5, 90*time.Second)
		claims := w.nodeClaimsOf(labPoolName)
		if len(claims) != 1 {
			t.Fatalf("NodeClaims of pool %s = %d, want 1\n%s", labPoolName, len(claims), w.dump())
		}
		c := claims[0]
		w.waitFor(30*time.Second, "the NodeClaim Ready", func() bool { return w.nodeClaimsOf(labPoolName)[0].is(controller.CondReady) })
		seq, problem := lifecycle(history.of(c.Name))
		if problem != "" {
			t.Errorf("NodeClaim %s: %s; states seen through the watch: %v", c.Name, problem, seq)
		}
		t.Logf("NodeClaim %s through the watch: %s", c.Name, strings.Join(seq, " → "))
		c = w.nodeClaimsOf(labPoolName)[0]
		inst, ok := w.instance(c.ProviderID)
		switch {
		case c.ProviderID == "" || !ok:
			t.Errorf("status.providerID = %q, want an instance of the endpoint's", c.ProviderID)
		case c.ImageID == "" || c.ImageID != inst.ImageID:
			t.Errorf("status.imageID = %q, want the instance's image %q", c.ImageID, inst.ImageID)
		case inst.Tags["karpenter.sh/nodeclaim"] != c.Name:
			t.Errorf("instance %s is tagged karpenter.sh/nodeclaim=%q, want %q", inst.ID, inst.Tags["karpenter.sh/nodeclaim"], c.Name)
		}
		if c.NodeName == "" {
			t.Fatalf("status.nodeName is empty")
		}
		node, err := w.client.CoreV1().Nodes().Get(ctx, c.NodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if node.Spec.ProviderID != c.ProviderID || node.Labels["eks-team"] != "my-team" || !slices.Contains(node.Finalizers, controller.FinalizerTermination) {
			t.Errorf("node %s: providerID %q labels %v finalizers %v; want the claim's provider ID, eks-team=my-team and %s",
				node.Name, node.Spec.ProviderID, node.Labels, node.Finalizers, controller.FinalizerTermination)
		}
		scheduled := w.scheduledBy(w.ns)
		for _, p := range w.pods(labDeployment) {
			if p.Spec.NodeName != c.NodeName {
				t.Errorf("pod %s on %q, want the claim's node %s", p.Name, p.Spec.NodeName, c.NodeName)
			}
			if scheduled[p.Name] != "default-scheduler" {
				t.Errorf("pod %s: no Scheduled event from kube-scheduler (got %q)", p.Name, scheduled[p.Name])
			}
		}
		// NodePool status.resources: the claim's capacity, what limits are charged against.
		want := c.Capacity[corev1.ResourceCPU]
		w.waitFor(30*time.Second, "NodePool status.resources with the claim's cpu and one node", func() bool {
			res := w.poolResources(labPoolName)
			return quantityIs(res["cpu"], want) && quantityIs(res["nodes"], resource.MustParse("1"))
		})
	})

	w.run("delete node: drained one pod at a time under the PDB, then the instance terminated", func(t *testing.T) {
		old := w.nodeClaimsOf(labPoolName)[0]
		w.checkDrain(t, old, "Node", func() error {
			return w.client.CoreV1().Nodes().Delete(ctx, old.NodeName, metav1.DeleteOptions{})
		})
	})

	w.run("delete nodeclaim: the same drain and termination", func(t *testing.T) {
		claims := w.nodeClaimsOf(labPoolName)
		if len(claims) != 1 {
			t.Fatalf("NodeClaims of pool %s = %d, want the one replacement\n%s", labPoolName, len(claims), w.dump())
		}
		old := claims[0]
		w.waitFor(30*time.Second, "the replacement Ready", func() bool { return w.nodeClaimsOf(labPoolName)[0].is(controller.CondReady) })
		w.checkDrain(t, old, "NodeClaim", func() error {
			return w.dyn.Resource(controller.NodeClaimGVR).Delete(ctx, old.Name, metav1.DeleteOptions{})
		})
	})

	w.run("invalid NodePool edit: ValidationSucceeded=False with the field path, the other pool keeps launching", func(t *testing.T) {
		w.invalidEdit(t)
	})

	w.run("restart between Launched and Registered: the claim registers, no duplicate, no orphan", func(t *testing.T) {
		w.hold.Hold(true) // hold new nodes back: the claim stays launched, unregistered
		before := map[string]bool{}
		for _, c := range w.nodeClaims() {
			before[c.Name] = true
		}
		w.scale(labDeployment, 10)
		var inflight nodeClaim
		w.waitFor(90*time.Second, "a new NodeClaim Launched and not Registered", func() bool {
			for _, c := range w.nodeClaimsOf(labPoolName) {
				if !before[c.Name] && c.is(controller.CondLaunched) && !c.is(controller.CondRegistered) {
					inflight = c
					return true
				}
			}
			return false
		})
		stop()
		if _, err := w.client.CoreV1().Nodes().Get(ctx, w.kubelet.NodeName(inflight.ProviderID), metav1.GetOptions{}); w.kubelet.NodeName(inflight.ProviderID) != "" || err == nil {
			t.Fatalf("the in-flight claim's node registered before the controller was stopped")
		}
		fleets := w.ec2.Calls("CreateFleet")
		restored := w.logs.count("restored nodeclaim")
		w.hold.Hold(false)
		stop = w.controller("b", false)
		w.waitRunning(labDeployment, 10, 90*time.Second)
		w.waitFor(30*time.Second, "the in-flight NodeClaim Registered and Ready", func() bool {
			for _, c := range w.nodeClaims() {
				if c.Name == inflight.Name {
					return c.is(controller.CondRegistered) && c.is(controller.CondReady)
				}
			}
			return false
		})
		if n := w.logs.count("restored nodeclaim"); n <= restored || !strings.Contains(w.logs.String(),
			`msg="restored nodeclaim" replica=b nodeclaim=`+inflight.Name) {
			t.Errorf("the restarted controller did not log \"restored nodeclaim\" for %s", inflight.Name)
		}
		if got := w.ec2.Calls("CreateFleet"); got != fleets {
			t.Errorf("CreateFleet calls after the restart = %d, want none (a duplicate launch)", got-fleets)
		}
		for _, c := range w.nodeClaims() {
			if c.Name == inflight.Name && c.ProviderID != inflight.ProviderID {
				t.Errorf("NodeClaim %s: providerID %s after the restart, was %s", c.Name, c.ProviderID, inflight.ProviderID)
			}
		}
		w.checkNoOrphans(t)
	})
}

// checkDrain deletes (through del) the Node or the NodeClaim (deleted names which) of claim c,
// whose node holds the lab's pods under a PDB of minAvailable 4 of 5, and checks what
// Karpenter's termination does: the finalizer holds the deleted object, the pods are evicted through the Eviction API without the PDB ever broken (fewer than
// 4 Ready pods at no time; a refused eviction shows it held), they come back Ready on a new
// node, and the instance is terminated only once none is left on the node.
func (w *world) checkDrain(t *testing.T, c nodeClaim, deleted string, del func() error) {
	t.Helper()
	if n := len(w.pods(labDeployment)); n != 5 {
		t.Fatalf("lab pods = %d, want 5", n)
	}
	rec, stopRec := w.recordDrain(labDeployment, c.Name, c.NodeName, c.ProviderID)
	if err := del(); err != nil {
		t.Fatal(err)
	}
	w.waitFor(120*time.Second, "the node drained, the instance terminated, the Node and NodeClaim gone, five pods running elsewhere", func() bool {
		if w.running(labDeployment) != 5 {
			return false
		}
		if _, err := w.client.CoreV1().Nodes().Get(context.Background(), c.NodeName, metav1.GetOptions{}); err == nil {
			return false
		}
		return !slices.ContainsFunc(w.nodeClaims(), func(x nodeClaim) bool { return x.Name == c.Name })
	})
	stopRec()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.minReady < labPDBMinReady {
		t.Errorf("Ready lab pods fell to %d during the drain; the PDB requires %d", rec.minReady, labPDBMinReady)
	}
	if rec.pdbMinHealthy >= 0 && rec.pdbMinHealthy < labPDBMinReady {
		t.Errorf("the PDB controller reported currentHealthy %d during the drain; minAvailable is %d", rec.pdbMinHealthy, labPDBMinReady)
	}
	if !rec.terminated {
		t.Errorf("instance of %s never seen terminated", c.ProviderID)
	} else if rec.podsAtTermination != 0 {
		t.Errorf("instance terminated with %d lab pods still on node %s", rec.podsAtTermination, c.NodeName)
	}
	if held := map[string]bool{"Node": rec.nodeHeld, "NodeClaim": rec.claimHeld}[deleted]; !held {
		t.Errorf("the %s was never seen deleting with pods on node %s: the finalizer did not hold it through the drain", deleted, c.NodeName)
	}
	if rec.nodeGoneFirst {
		t.Errorf("node %s was gone while its instance still ran", c.NodeName)
	}
	if n := w.eventCount(corev1.NamespaceAll, c.NodeName, "FailedDraining"); n == 0 {
		t.Errorf("no FailedDraining event on node %s: no eviction was refused, so the PDB was never in play", c.NodeName)
	}
	for _, p := range w.pods(labDeployment) {
		if p.Spec.NodeName == c.NodeName {
			t.Errorf("pod %s still on the drained node", p.Name)
		}
	}
	t.Logf("drain of %s: fewest Ready pods %d (PDB currentHealthy at least %d), pods on the node at termination %d",
		c.NodeName, rec.minReady, rec.pdbMinHealthy, rec.podsAtTermination)
}

// checkNoOrphans checks that every live instance of the endpoint has a NodeClaim naming it
// (and tagged with that claim), and every launched NodeClaim not being disrupted a live
// instance.
func (w *world) checkNoOrphans(t *testing.T) {
	t.Helper()
	claims := w.nodeClaims()
	byID := map[string]nodeClaim{}
	for _, c := range claims {
		if c.ProviderID != "" {
			byID[c.ProviderID] = c
		}
	}
	// A claim being disrupted may have lost its instance a moment before its object goes.
	claims = slices.DeleteFunc(claims, func(c nodeClaim) bool { return c.Deleting || hasCondition(c, controller.CondDisruptionReason) })
	live := map[string]bool{}
	for _, i := range w.liveInstances() {
		pid := "aws:///" + i.Zone + "/" + i.ID
		live[pid] = true
		c, ok := byID[pid]
		switch {
		case !ok:
			t.Errorf("instance %s (%s, tagged nodeclaim %q) has no NodeClaim: an orphan", i.ID, i.Type, i.Tags["karpenter.sh/nodeclaim"])
		case i.Tags["karpenter.sh/nodeclaim"] != c.Name:
			t.Errorf("instance %s is tagged nodeclaim %q, but NodeClaim %s names it", i.ID, i.Tags["karpenter.sh/nodeclaim"], c.Name)
		}
	}
	for _, c := range claims {
		if c.ProviderID != "" && !live[c.ProviderID] {
			t.Errorf("NodeClaim %s names %s, which is not running", c.Name, c.ProviderID)
		}
	}
}

// scheduledBy maps pod names to the controller that reported their Scheduled event.
func (w *world) scheduledBy(ns string) map[string]string {
	evs, err := w.client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=Scheduled"})
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range evs.Items {
		who := e.ReportingController
		if who == "" {
			who = e.Source.Component
		}
		out[e.InvolvedObject.Name] = who
	}
	return out
}

// eventCount counts the events of reason about the named object.
func (w *world) eventCount(ns, name, reason string) int {
	evs, err := w.client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + name + ",reason=" + reason})
	if err != nil {
		w.t.Fatal(err)
	}
	return len(evs.Items)
}

func (w *world) poolCondition(pool, typ string) metav1.Condition {
	u, err := w.dyn.Resource(controller.NodePoolGVR).Get(context.Background(), pool, metav1.GetOptions{})
	if err != nil {
		return metav1.Condition{}
	}
	var st struct {
		Conditions []metav1.Condition `json:"conditions"`
	}
	if raw, ok := u.Object["status"].(map[string]any); ok {
		_ = fromMap(raw, &st)
	}
	if c := meta.FindStatusCondition(st.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// poolResources is a NodePool's status.resources.
func (w *world) poolResources(pool string) map[string]resource.Quantity {
	u, err := w.dyn.Resource(controller.NodePoolGVR).Get(context.Background(), pool, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	raw, _, _ := unstructured.NestedStringMap(u.Object, "status", "resources")
	out := map[string]resource.Quantity{}
	for k, v := range raw {
		if q, err := resource.ParseQuantity(v); err == nil {
			out[k] = q
		}
	}
	return out
}

func quantityIs(q, want resource.Quantity) bool { return q.Cmp(want) == 0 && !want.IsZero() }
