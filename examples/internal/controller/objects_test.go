package controller_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

func (h *harness) claimObjects() []unstructured.Unstructured {
	h.t.Helper()
	list, err := h.w.Dynamic.Resource(controller.NodeClaimGVR).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

// updateClaimObject changes a NodeClaim object as someone else would.
func (h *harness) updateClaimObject(name string, mutate func(*unstructured.Unstructured)) {
	h.t.Helper()
	ctx := context.Background()
	u, err := h.w.Dynamic.Resource(controller.NodeClaimGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	mutate(u)
	if _, err := h.w.Dynamic.Resource(controller.NodeClaimGVR).Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

func conditions(u unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m := c.(map[string]any)
		out[m["type"].(string)] = m["status"].(string)
	}
	return out
}

// TestNodeClaimObject: a launch is recorded as a karpenter.sh/v1 NodeClaim whose status follows
// the claim to Ready, with the labels `kubectl get nodeclaims -o wide` shows; its Node carries
// the termination finalizer and an owner reference to it; once consolidated, both are gone.
func TestNodeClaimObject(t *testing.T) {
	h := newHarness(t)
	h.start("a", nil)
	h.deploy("inflate", 5, 0)
	h.until(time.Minute, "5 pods running", func() bool { return h.running() == 5 })
	h.until(10*time.Second, "the NodeClaim Ready", func() bool {
		objs := h.claimObjects()
		return len(objs) == 1 && conditions(objs[0])[controller.CondReady] == "True"
	})
	u := h.claimObjects()[0]
	inst := h.instances()[0]
	str := func(fields ...string) string { s, _, _ := unstructured.NestedString(u.Object, fields...); return s }
	got := map[string]string{
		"providerID": str("status", "providerID"),
		"imageID":    str("status", "imageID"),
		"nodeName":   str("status", "nodeName"),
		"type":       u.GetLabels()[nodeplan.LabelInstanceType],
		"capacity":   u.GetLabels()[nodeplan.LabelCapacityType],
		"zone":       u.GetLabels()[nodeplan.LabelZone],
		"nodepool":   u.GetLabels()[nodeplan.LabelNodePool],
		"nodeclass":  str("spec", "nodeClassRef", "name"),
		"cpu":        str("status", "allocatable", "cpu"),
	}
	want := map[string]string{
		"providerID": inst.Status.ProviderID,
		"imageID":    inst.Status.ImageID,
		"nodeName":   h.w.Kubelet.NodeName(inst.Status.ProviderID),
		"type":       inst.Status.InstanceType,
		"capacity":   string(inst.Status.CapacityType),
		"zone":       inst.Status.Zone,
		"nodepool":   "default",
		"nodeclass":  "default",
		"cpu":        got["cpu"],
	}
	if diff := cmp.Diff(want, got); diff != "" || got["cpu"] == "" {
		t.Errorf("NodeClaim fields (-want +got):\n%s", diff)
	}
	wantConds := map[string]string{"Launched": "True", "Registered": "True", "Initialized": "True", "Ready": "True"}
	if diff := cmp.Diff(wantConds, conditions(u)); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{controller.FinalizerTermination}, u.GetFinalizers()); diff != "" {
		t.Errorf("finalizers (-want +got):\n%s", diff)
	}
	n, err := h.w.Client.CoreV1().Nodes().Get(context.Background(), want["nodeName"], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.OwnerReferences) != 1 || n.OwnerReferences[0].Kind != "NodeClaim" || n.OwnerReferences[0].Name != u.GetName() ||
		n.OwnerReferences[0].UID != u.GetUID() || len(n.Finalizers) != 1 || n.Finalizers[0] != controller.FinalizerTermination {
		t.Errorf("node owner references %+v, finalizers %v; want the NodeClaim and %s", n.OwnerReferences, n.Finalizers, controller.FinalizerTermination)
	}
	if err := h.w.Deployments.Scale(context.Background(), "test", "inflate", 0); err != nil {
		t.Fatal(err)
	}
	h.until(3*time.Minute, "the empty node and its NodeClaim gone", func() bool {
		return h.nodes() == 0 && len(h.instances()) == 0 && len(h.claimObjects()) == 0
	})
}

// TestCrashMidLaunch: a controller killed after the cloud made the instance but before it
// recorded it leaves a NodeClaim without status; the next run binds the instance to it — no
// second launch, nothing leaked.
func TestCrashMidLaunch(t *testing.T) {
	h := newHarness(t)
	h.w.Kubelet.SetBootTime(time.Hour) // hold registration back
	stopA := h.start("a", nil)
	h.deploy("inflate", 5, 0)
	h.until(time.Minute, "a launch", func() bool { return len(h.instances()) == 1 })
	stopA()
	name := h.claimObjects()[0].GetName()
	u, err := h.w.Dynamic.Resource(controller.NodeClaimGVR).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(u.Object, "status") // as if never written
	if _, err := h.w.Dynamic.Resource(controller.NodeClaimGVR).UpdateStatus(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.w.Kubelet.SetBootTime(20 * time.Second)
	h.start("b", nil)
	h.until(2*time.Minute, "5 pods running, the NodeClaim Ready", func() bool {
		objs := h.claimObjects()
		return h.running() == 5 && len(objs) == 1 && conditions(objs[0])[controller.CondReady] == "True"
	})
	if n := len(h.instances()); n != 1 {
		t.Errorf("instances = %d, want 1 (no second launch)", n)
	}
	objs := h.claimObjects()
	if len(objs) != 1 || objs[0].GetName() != name || conditions(objs[0])[controller.CondReady] != "True" {
		t.Errorf("NodeClaims after restart = %d (first %q, conditions %v), want %s Ready", len(objs), objs[0].GetName(), conditions(objs[0]), name)
	}
	if n := h.logs.count("found the instance of a nodeclaim launched before a restart"); n != 1 {
		t.Errorf("binding logged %d times, want 1", n)
	}
}

// TestDeleteNodeClaim: deleting a NodeClaim (the API server sets its deletionTimestamp; the
// finalizer holds it) drains the node — its pods move to a new node — terminates the instance,
// and only then lets the object go. Deleting the Node does the same.
func TestDeleteNodeClaim(t *testing.T) {
	for _, what := range []string{"nodeclaim", "node"} {
		t.Run(what, func(t *testing.T) {
			h := newHarness(t)
			h.start("a", nil)
			h.deploy("inflate", 2, 0)
			h.until(time.Minute, "2 pods running", func() bool { return h.running() == 2 })
			victim := h.claimObjects()[0]
			id, _, _ := unstructured.NestedString(victim.Object, "status", "providerID")
			nodeName, _, _ := unstructured.NestedString(victim.Object, "status", "nodeName")
			now := metav1.NewTime(h.w.Clock.Now())
			if what == "nodeclaim" {
				h.updateClaimObject(victim.GetName(), func(u *unstructured.Unstructured) { u.SetDeletionTimestamp(&now) })
			} else {
				n, err := h.w.Client.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				n.DeletionTimestamp = &now
				if _, err := h.w.Client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			h.until(3*time.Minute, "the instance terminated, the objects gone, the pods running elsewhere", func() bool {
				for _, i := range h.instances() {
					if i.Status.ProviderID == id {
						return false
					}
				}
				for _, o := range h.claimObjects() {
					if o.GetName() == victim.GetName() {
						return false
					}
				}
				_, err := h.w.Client.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
				return err != nil && h.running() == 2
			})
			if h.logs.count("deleting nodeclaim") != 1 {
				t.Errorf("no \"deleting nodeclaim\" line; logs:\n%s", h.logs.String())
			}
		})
	}
}

// TestOtherInstallationsClaims: NodeClaims without this installation's annotation (a Karpenter
// controller's) are left alone — their empty node is not consolidated — until the controller is
// told to adopt them; then they are its own: nothing relaunched, the empty node consolidated.
func TestOtherInstallationsClaims(t *testing.T) {
	h := newHarness(t)
	stopA := h.start("a", nil)
	h.deploy("inflate", 1, 0)
	h.until(time.Minute, "the pod running", func() bool { return h.running() == 1 })
	stopA()
	name := h.claimObjects()[0].GetName()
	h.updateClaimObject(name, func(u *unstructured.Unstructured) {
		ann := u.GetAnnotations()
		delete(ann, controller.AnnotationInstallation)
		u.SetAnnotations(ann)
	})
	if err := h.w.Deployments.Scale(context.Background(), "test", "inflate", 0); err != nil {
		t.Fatal(err)
	}
	stopB := h.start("b", nil)
	if err := h.w.Advance(context.Background(), 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, i, o := h.nodes(), len(h.instances()), len(h.claimObjects()); n != 1 || i != 1 || o != 1 {
		t.Fatalf("nodes, instances, nodeclaims = %d, %d, %d; want 1, 1, 1 (another installation's)", n, i, o)
	}
	if h.logs.count("nodeclaim belongs to another installation; leaving it alone") != 1 {
		t.Errorf("the foreign nodeclaim was not reported")
	}
	stopB()
	h.start("c", func(c *controller.Controller) { c.Adopt = true })
	h.until(3*time.Minute, "the adopted empty node consolidated", func() bool {
		return h.nodes() == 0 && len(h.instances()) == 0 && len(h.claimObjects()) == 0
	})
	if n := h.logs.count("launched nodeclaim"); n != 1 {
		t.Errorf("launches across the runs = %d, want 1 (nothing relaunched)", n)
	}
}
