package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
)

// A Create that fails after the cloud made the instance (a lost answer) must not leave the
// instance unowned: the claim stays until a listing shows the instance, which is then bound to
// it, and nothing is offered to the solver meanwhile.
func TestFailedLaunchBindsTheInstanceItMadeAnyway(t *testing.T) {
	tr := &Tracker{}
	tr.Begin(claim("default-a", "default"), false, nil, t0)
	if !tr.LaunchUnknown("default-a", t0.Add(time.Second)) {
		t.Fatal("LaunchUnknown() = false for a launching claim")
	}
	if got := tr.Get("default-a"); got == nil || !awaitingInstance(got) {
		t.Fatalf("claim after LaunchUnknown = %+v, want one awaiting its instance", got)
	}
	inst := launched("default-a", "default", "memory:///us-east-1a/i-1", t0)
	acts := tr.Reconcile([]*nodeplan.NodeClaim{inst}, nil, []string{"default"}, t0.Add(30*time.Second), t0.Add(30*time.Second))
	if diff := cmp.Diff([]string{"Adopt default-a"}, describe(acts)); diff != "" {
		t.Errorf("Reconcile() (-want +got):\n%s", diff)
	}
	if got := tr.Get("default-a"); got.Phase != PhaseLaunched || got.Status.ProviderID != inst.Status.ProviderID {
		t.Errorf("claim = %v %q, want Launched with %s", got.Phase, got.Status.ProviderID, inst.Status.ProviderID)
	}
}

// With no instance, the claim goes after MissedListings listings begun after the failure and
// spanning Timeouts.Collect; a listing begun before the failure proves nothing.
func TestFailedLaunchWithoutInstanceIsDroppedAfterListings(t *testing.T) {
	tr := &Tracker{}
	tr.Begin(claim("default-a", "default"), false, nil, t0)
	failed := t0.Add(10 * time.Second)
	tr.LaunchUnknown("default-a", failed)
	var got []string
	for i, at := range []time.Duration{5 * time.Second, 40 * time.Second, 70 * time.Second, 100 * time.Second, 160 * time.Second} {
		acts := tr.Reconcile(nil, nil, []string{"default"}, t0.Add(at), t0.Add(at+time.Second))
		for _, d := range describe(acts) {
			got = append(got, d+" at listing "+string(rune('0'+i)))
		}
	}
	// Listing 0 began before the failure; 1, 2, 3 miss it but span only 60s; 4 spans 120s.
	if diff := cmp.Diff([]string{"NoInstance default-a at listing 4"}, got); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if tr.Get("default-a") != nil {
		t.Error("claim still tracked")
	}
	// The instance turns up after all: it is an orphan, terminated once.
	late := launched("default-a", "default", "memory:///us-east-1a/i-9", t0)
	for i, want := range [][]string{{"Orphan memory:///us-east-1a/i-9"}, nil} {
		acts := tr.Reconcile([]*nodeplan.NodeClaim{late}, nil, []string{"default"}, t0.Add(200*time.Second), t0.Add(200*time.Second))
		if diff := cmp.Diff(want, describe(acts)); diff != "" {
			t.Errorf("listing %d of the late instance (-want +got):\n%s", i, diff)
		}
	}
}

// An extra instance made for a claim that has its own (a fleet that answered with more than
// asked, and the provider could not terminate the rest) is an orphan; its Node, never
// registered by the controller, goes with it. An instance whose name matches a launching
// claim (Create still running) is left alone, and so is one whose Node someone else
// initialized.
func TestExtraInstanceOfAClaimIsAnOrphan(t *testing.T) {
	tr := &Tracker{}
	tr.Begin(claim("default-a", "default"), false, nil, t0)
	tr.Launched("default-a", launched("default-a", "default", "memory:///us-east-1a/i-1", t0))
	tr.Begin(claim("default-b", "default"), false, nil, t0)
	insts := []*nodeplan.NodeClaim{
		launched("default-a", "default", "memory:///us-east-1a/i-1", t0),
		launched("default-a", "default", "memory:///us-east-1a/i-2", t0),
		launched("default-b", "default", "memory:///us-east-1a/i-3", t0), // its Create has not returned yet
	}
	n2 := node("n2", "memory:///us-east-1a/i-2", tainted(nodeplan.TaintUnregistered))
	acts := tr.Reconcile(insts, []*corev1.Node{n2}, []string{"default"}, t0.Add(time.Minute), t0.Add(time.Minute))
	if diff := cmp.Diff([]string{"Stray memory:///us-east-1a/i-3", "Orphan default-a memory:///us-east-1a/i-2 @n2"}, describe(acts)); diff != "" {
		t.Errorf("Reconcile() (-want +got):\n%s", diff)
	}

	tr2 := &Tracker{}
	tr2.Begin(claim("default-a", "default"), false, nil, t0)
	tr2.Launched("default-a", launched("default-a", "default", "memory:///us-east-1a/i-1", t0))
	n2 = node("n2", "memory:///us-east-1a/i-2", ready)
	acts = tr2.Reconcile(insts[:2], []*corev1.Node{n2}, []string{"default"}, t0.Add(time.Minute), t0.Add(time.Minute))
	if diff := cmp.Diff([]string{"Stray memory:///us-east-1a/i-2 @n2"}, describe(acts)); diff != "" {
		t.Errorf("Reconcile() with the extra's Node initialized elsewhere (-want +got):\n%s", diff)
	}
}

func TestLaunchMayHaveSucceeded(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&cloudprovider.InsufficientCapacityError{}, false},
		{&cloudprovider.NodeClassNotReadyError{NodeClass: "default"}, false},
		{&cloudprovider.LaunchError{Reason: cloudprovider.ReasonUnauthorized}, false},
		{&cloudprovider.LaunchError{Reason: cloudprovider.ReasonLaunchFailed, Err: errors.New("InternalError")}, true},
		{&cloudprovider.LaunchError{}, true},
		{context.DeadlineExceeded, true},
		{errors.New("RequestLimitExceeded"), true},
	} {
		if got := launchMayHaveSucceeded(tc.err); got != tc.want {
			t.Errorf("launchMayHaveSucceeded(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// An instance carrying this installation's identity under a claim name the table does not hold
// (its claim lost across a restart) is an orphan; another installation's, or one whose Node was
// initialized by someone, stays a stray.
func TestInstallationIdentityMakesAnOrphan(t *testing.T) {
	tr := &Tracker{Installation: "prod"}
	tagged := func(name, id, installation string) *nodeplan.NodeClaim {
		i := launched(name, "default", id, t0)
		i.Annotations = map[string]string{AnnotationInstallation: installation}
		return i
	}
	insts := []*nodeplan.NodeClaim{
		tagged("default-lost1", "memory:///us-east-1a/i-1", "prod"),
		tagged("default-other", "memory:///us-east-1a/i-2", "staging"),
		tagged("default-lost2", "memory:///us-east-1a/i-3", "prod"),
		launched("default-karp1", "default", "memory:///us-east-1a/i-4", t0), // no identity: Karpenter's
	}
	n3 := node("n3", "memory:///us-east-1a/i-3", ready)
	acts := tr.Reconcile(insts, []*corev1.Node{n3}, []string{"default"}, t0.Add(time.Minute), t0.Add(time.Minute))
	want := []string{"Stray memory:///us-east-1a/i-2", "Stray memory:///us-east-1a/i-3 @n3", "Stray memory:///us-east-1a/i-4",
		"Orphan memory:///us-east-1a/i-1"}
	if diff := cmp.Diff(want, describe(acts)); diff != "" {
		t.Errorf("Reconcile() (-want +got):\n%s", diff)
	}
	if got := describe((&Tracker{}).Reconcile(insts[:1], nil, []string{"default"}, t0, t0)); !cmp.Equal(got, []string{"Stray memory:///us-east-1a/i-1"}) {
		t.Errorf("without an installation name: %v, want the instance a stray", got)
	}
}
