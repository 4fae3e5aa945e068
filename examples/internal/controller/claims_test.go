package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
)

var t0 = time.Date(2026, 9, 1, 9, 0, 0, 0, time.UTC)

func claim(name, pool string) nodeplan.NodeClaim {
	return nodeplan.NodeClaim{Name: name, NodePool: pool, InstanceTypeOptions: []string{"c6a.2xlarge"}}
}

func launched(name, pool, id string, at time.Time) *nodeplan.NodeClaim {
	c := claim(name, pool)
	c.Status = nodeplan.NodeClaimStatus{ProviderID: id, InstanceType: "c6a.2xlarge", Zone: "us-east-1a",
		CapacityType: nodeplan.CapacityTypeSpot, Price: 0.0929, LaunchTime: at,
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7910m")}}
	return &c
}

type nodeOpt func(*corev1.Node)

func ready(n *corev1.Node) {
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
}

func tainted(key string) nodeOpt {
	return func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
	}
}

func registered(n *corev1.Node) { n.Labels[nodeplan.LabelRegistered] = "true" }

func node(name, id string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, CreationTimestamp: metav1.NewTime(t0)},
		Spec:       corev1.NodeSpec{ProviderID: id},
		Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7910m")}},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

// describe renders actions as "Kind claim node" strings, so tests compare them with cmp.Diff.
func describe(acts []Action) []string {
	var out []string
	for _, a := range acts {
		s := a.Kind.String()
		if a.Claim != nil {
			s += " " + a.Claim.Name
		}
		if a.ProviderID != "" {
			s += " " + a.ProviderID
		}
		if a.Node != "" {
			s += " @" + a.Node
		}
		if a.Repeat {
			s += " (repeat)"
		}
		out = append(out, s)
	}
	return out
}

func phases(tr *Tracker) map[string]string {
	out := map[string]string{}
	for _, c := range tr.List() {
		out[c.Name] = c.Phase.String()
	}
	return out
}

// TestLifecycle walks one claim from launch to an initialized node.
func TestLifecycle(t *testing.T) {
	var tr Tracker
	if !tr.Begin(claim("default-a", "default"), false, nil, t0) {
		t.Fatal("Begin(default-a) = false, want true")
	}
	if tr.Begin(claim("default-a", "default"), false, nil, t0) {
		t.Error("Begin(default-a) twice = true, want false")
	}
	steps := []struct {
		name  string
		at    time.Duration
		do    func()
		nodes []*corev1.Node
		want  []string
		phase string
	}{
		{name: "launching", at: time.Second, phase: "Launching"},
		{name: "launched", at: 2 * time.Second,
			do: func() {
				tr.Launched("default-a", launched("default-a", "default", "aws:///us-east-1a/i-1", t0.Add(2*time.Second)))
			},
			phase: "Launched"},
		{name: "node registers, not ready", at: 30 * time.Second,
			nodes: []*corev1.Node{node("ip-1", "aws:///us-east-1a/i-1", tainted(nodeplan.TaintUnregistered))},
			want:  []string{"Register default-a @ip-1"}, phase: "Registered"},
		{name: "registration overwritten by another writer is repeated", at: 31 * time.Second,
			nodes: []*corev1.Node{node("ip-1", "aws:///us-east-1a/i-1", tainted(nodeplan.TaintUnregistered))},
			want:  []string{"Register default-a @ip-1 (repeat)"}, phase: "Registered"},
		{name: "ready but still unregistered-tainted", at: 32 * time.Second,
			nodes: []*corev1.Node{node("ip-1", "aws:///us-east-1a/i-1", ready, registered, tainted(nodeplan.TaintUnregistered))},
			want:  []string{"Register default-a @ip-1 (repeat)"}, phase: "Registered"},
		{name: "ready and untainted", at: 35 * time.Second,
			nodes: []*corev1.Node{node("ip-1", "aws:///us-east-1a/i-1", ready, registered)},
			want:  []string{"Initialize default-a @ip-1"}, phase: "Initialized"},
		{name: "steady", at: time.Hour,
			nodes: []*corev1.Node{node("ip-1", "aws:///us-east-1a/i-1", ready, registered)},
			phase: "Initialized"},
	}
	for _, s := range steps {
		if s.do != nil {
			s.do()
		}
		got := describe(tr.Sync(s.nodes, t0.Add(s.at)))
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("%s: Sync() actions (-want +got):\n%s", s.name, diff)
		}
		if p := phases(&tr)["default-a"]; p != s.phase {
			t.Errorf("%s: phase = %s, want %s", s.name, p, s.phase)
		}
	}
	c := tr.ByNode("ip-1")
	if c == nil || c.Initialized != t0.Add(35*time.Second) || c.LastPodEvent != t0.Add(35*time.Second) {
		t.Errorf("ByNode(ip-1) = %+v, want initialized at +35s with LastPodEvent then", c)
	}
	tr.PodEvent("ip-1", t0.Add(2*time.Hour))
	if c := tr.Get("default-a"); c.LastPodEvent != t0.Add(2*time.Hour) {
		t.Errorf("after PodEvent, LastPodEvent = %v, want %v", c.LastPodEvent, t0.Add(2*time.Hour))
	}
}

// TestStartupTaints: a node is not initialized while a startup taint of its claim remains.
func TestStartupTaints(t *testing.T) {
	var tr Tracker
	c := claim("gpu-a", "gpu")
	c.StartupTaints = []corev1.Taint{{Key: "nvidia.com/gpu-driver", Effect: corev1.TaintEffectNoSchedule}}
	tr.Begin(c, false, nil, t0)
	l := launched("gpu-a", "gpu", "aws:///us-east-1a/i-9", t0)
	l.StartupTaints = c.StartupTaints
	tr.Launched("gpu-a", l)
	tr.Sync([]*corev1.Node{node("ip-9", "aws:///us-east-1a/i-9", ready, registered, tainted("nvidia.com/gpu-driver"))}, t0.Add(time.Minute))
	if p := phases(&tr)["gpu-a"]; p != "Registered" {
		t.Errorf("with a startup taint, phase = %s, want Registered", p)
	}
	acts := tr.Sync([]*corev1.Node{node("ip-9", "aws:///us-east-1a/i-9", ready, registered)}, t0.Add(2*time.Minute))
	if diff := cmp.Diff([]string{"Initialize gpu-a @ip-9"}, describe(acts)); diff != "" {
		t.Errorf("after the startup taint went (-want +got):\n%s", diff)
	}
}

// TestTimeouts covers the launch backstop, the registration timeout and a node deleted from
// under a registered claim.
func TestTimeouts(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(tr *Tracker)
		nodes     []*corev1.Node
		at        time.Duration
		want      []string
		wantPhase map[string]string
	}{{
		name:      "launch still within its timeout",
		setup:     func(tr *Tracker) { tr.Begin(claim("a", "default"), false, nil, t0) },
		at:        5 * time.Minute,
		wantPhase: map[string]string{"a": "Launching"},
	}, {
		name:      "launch never returned",
		setup:     func(tr *Tracker) { tr.Begin(claim("a", "default"), false, nil, t0) },
		at:        6*time.Minute + time.Second,
		want:      []string{"LaunchTimeout a"},
		wantPhase: map[string]string{},
	}, {
		name: "registration within its timeout",
		setup: func(tr *Tracker) {
			tr.Begin(claim("a", "default"), false, nil, t0)
			tr.Launched("a", launched("a", "default", "aws:///z/i-1", t0))
		},
		at:        15 * time.Minute,
		wantPhase: map[string]string{"a": "Launched"},
	}, {
		name: "never registered",
		setup: func(tr *Tracker) {
			tr.Begin(claim("a", "default"), false, nil, t0)
			tr.Launched("a", launched("a", "default", "aws:///z/i-1", t0))
		},
		at:        15*time.Minute + time.Second,
		want:      []string{"RegistrationTimeout a"},
		wantPhase: map[string]string{"a": "Terminating"},
	}, {
		name: "custom registration timeout",
		setup: func(tr *Tracker) {
			tr.Timeouts.Registration = time.Minute
			tr.Begin(claim("a", "default"), false, nil, t0)
			tr.Launched("a", launched("a", "default", "aws:///z/i-1", t0))
		},
		at:        time.Minute + time.Second,
		want:      []string{"RegistrationTimeout a"},
		wantPhase: map[string]string{"a": "Terminating"},
	}, {
		name: "node deleted under a registered claim",
		setup: func(tr *Tracker) {
			tr.Begin(claim("a", "default"), false, nil, t0)
			tr.Launched("a", launched("a", "default", "aws:///z/i-1", t0))
			tr.Sync([]*corev1.Node{node("ip-1", "aws:///z/i-1")}, t0.Add(time.Minute))
		},
		at:        2 * time.Minute,
		want:      []string{"NodeGone a @ip-1"},
		wantPhase: map[string]string{"a": "Terminating"},
	}, {
		name: "terminating claims are left to their termination",
		setup: func(tr *Tracker) {
			tr.Begin(claim("a", "default"), false, nil, t0)
			tr.Launched("a", launched("a", "default", "aws:///z/i-1", t0))
			tr.StartTermination("a", "Empty")
		},
		at:        time.Hour,
		wantPhase: map[string]string{"a": "Terminating"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr Tracker
			tt.setup(&tr)
			got := describe(tr.Sync(tt.nodes, t0.Add(tt.at)))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Sync(+%v) actions (-want +got):\n%s", tt.at, diff)
			}
			if diff := cmp.Diff(tt.wantPhase, phases(&tr)); diff != "" {
				t.Errorf("phases (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLaunchedAfterTimeout: an instance Create returns after its claim was given up is
// reported, so the caller deletes it instead of leaking it.
func TestLaunchedAfterTimeout(t *testing.T) {
	var tr Tracker
	tr.Begin(claim("a", "default"), false, nil, t0)
	tr.Sync(nil, t0.Add(time.Hour))
	if tr.Launched("a", launched("a", "default", "aws:///z/i-1", t0.Add(time.Hour))) {
		t.Error("Launched() after the launch timed out = true, want false")
	}
	if tr.StartTermination("a", "x") {
		t.Error("StartTermination(unknown) = true, want false")
	}
}

// restored returns a claim as read back from its NodeClaim object.
func restored(name, pool, id string, at time.Time) *Claim {
	c := &Claim{NodeClaim: claim(name, pool), Created: at}
	if id != "" {
		c.NodeClaim = *launched(name, pool, id, at)
	}
	return c
}

// TestRebuild is the restart: the table is loaded from the NodeClaim objects, then meets the
// cloud's instances and the Nodes.
func TestRebuild(t *testing.T) {
	insts := []*nodeplan.NodeClaim{
		launched("default-init", "default", "aws:///z/i-1", t0),
		launched("default-boot", "default", "aws:///z/i-2", t0.Add(50*time.Minute)),
		launched("default-term", "default", "aws:///z/i-3", t0),
		launched("", "", "aws:///z/i-4", t0),                                   // no claim recorded: not ours
		launched("old-x", "removed-pool", "aws:///z/i-5", t0),                  // no object: not ours either
		launched("default-midl", "default", "aws:///z/i-6", t0.Add(time.Hour)), // launched, never recorded
		launched("default-gone", "default", "aws:///z/i-7", t0),
	}
	term := node("ip-3", "aws:///z/i-3", ready, registered)
	term.Annotations = map[string]string{AnnotationTerminating: "Empty"}
	deleted := restored("default-gone", "default", "aws:///z/i-7", t0)
	deleted.Deleting = true
	nodes := []*corev1.Node{
		node("ip-1", "aws:///z/i-1", ready, registered),
		term,
		node("ip-0", "aws:///z/i-0", ready, func(n *corev1.Node) { n.Labels[nodeplan.LabelNodePool] = "default" }), // instance gone
		node("cp-1", "kubeadm://cp-1", ready), // another provider's node: never touched
	}
	objects := []*Claim{
		restored("default-init", "default", "aws:///z/i-1", t0),
		restored("default-boot", "default", "aws:///z/i-2", t0.Add(50*time.Minute)),
		restored("default-term", "default", "aws:///z/i-3", t0),
		restored("default-midl", "default", "", t0.Add(time.Hour)),
		deleted,
	}
	now := t0.Add(time.Hour)
	var tr Tracker
	got := describe(tr.Load(objects, nodes, now))
	want := []string{"Adopt default-boot", "Adopt default-gone", "Adopt default-init @ip-1", "Adopt default-midl", "Adopt default-term @ip-3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}
	got = describe(tr.Reconcile(insts, nodes, []string{"default"}, now, now))
	want = []string{"Adopt default-midl", "Stray aws:///z/i-4", "Stray aws:///z/i-5"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("first Reconcile (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"default-init": "Initialized", "default-boot": "Launched", "default-term": "Terminating",
		"default-midl": "Launched", "default-gone": "Terminating"}, phases(&tr)); diff != "" {
		t.Errorf("phases after rebuild (-want +got):\n%s", diff)
	}
	if c := tr.Get("default-term"); c.Reason != "Empty" {
		t.Errorf("restored terminating claim has reason %q, want Empty", c.Reason)
	}
	if c := tr.Get("default-gone"); c.Reason != reasonNodeClaimDeleted {
		t.Errorf("restored deleted claim has reason %q, want %s", c.Reason, reasonNodeClaimDeleted)
	}
	// Instances without a claim are reported once and never deleted; a Node without a claim
	// (its instance gone or never ours) is never touched, however long it stays.
	for _, at := range []time.Duration{time.Minute, 2 * time.Minute, time.Hour} {
		if got := describe(tr.Reconcile(insts, nodes, []string{"default"}, now.Add(at), now.Add(at))); len(got) != 0 {
			t.Errorf("Reconcile %v later = %v, want nothing", at, got)
		}
	}
	later := now.Add(2 * time.Minute)
	// The registering claims go on to register; none is loaded or bound twice.
	if got := describe(tr.Load(objects, nodes, later)); len(got) != 0 {
		t.Errorf("Load again = %v, want nothing", got)
	}
	acts := tr.Sync([]*corev1.Node{nodes[0], nodes[1], node("ip-2", "aws:///z/i-2")}, later)
	if diff := cmp.Diff([]string{"Register default-boot @ip-2"}, describe(acts)); diff != "" {
		t.Errorf("Sync after rebuild (-want +got):\n%s", diff)
	}
	// A claim restored launching whose instance never shows up is given up after the
	// registration timeout.
	var tr2 Tracker
	tr2.Load([]*Claim{restored("default-lost", "default", "", t0)}, nil, t0)
	if got := describe(tr2.Sync(nil, t0.Add(10*time.Minute))); len(got) != 0 {
		t.Errorf("restored launching claim after 10m = %v, want nothing yet", got)
	}
	if diff := cmp.Diff([]string{"LaunchTimeout default-lost"}, describe(tr2.Sync(nil, t0.Add(16*time.Minute)))); diff != "" {
		t.Errorf("restored launching claim after 16m (-want +got):\n%s", diff)
	}
}

// TestInstanceGone: a claim whose instance left the cloud is forgotten once MissedListings
// listings in a row spanning Timeouts.Collect missed it — and a claim launched after a listing
// began is not judged by it.
func TestInstanceGone(t *testing.T) {
	var tr Tracker
	for i, at := range []time.Duration{0, 10 * time.Minute} {
		name := fmt.Sprint("c", i)
		tr.Begin(claim(name, "default"), false, nil, t0.Add(at))
		tr.Launched(name, launched(name, "default", fmt.Sprint("aws:///z/i-", i), t0.Add(at)))
	}
	tr.Begin(claim("launching", "default"), false, nil, t0)
	var got []string
	for i, at := range []time.Duration{5 * time.Minute, 6 * time.Minute, 7 * time.Minute} {
		got = describe(tr.Reconcile(nil, nil, []string{"default"}, t0.Add(at), t0.Add(at)))
		if i < 2 && len(got) != 0 {
			t.Errorf("listing %d without the instance = %v, want nothing (one miss proves nothing)", i+1, got)
		}
	}
	if diff := cmp.Diff([]string{"InstanceGone c0"}, got); diff != "" {
		t.Errorf("third listing (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"c1": "Launched", "launching": "Launching"}, phases(&tr)); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
}

// TestOneListMissDeletesNothing: a listing that misses an instance now and then (EC2 is
// eventually consistent) never gives its claim up, however often it happens, as long as the
// misses are not in a row; and when the instance is really gone, its Ready Node stays.
func TestOneListMissDeletesNothing(t *testing.T) {
	var tr Tracker
	tr.Begin(claim("a", "default"), false, nil, t0)
	inst := launched("a", "default", "aws:///z/i-1", t0)
	tr.Launched("a", inst)
	nodes := []*corev1.Node{node("ip-1", "aws:///z/i-1", ready, registered)}
	tr.Sync(nodes, t0)
	for i := range 60 {
		at := t0.Add(time.Duration(i+1) * time.Minute)
		var listing []*nodeplan.NodeClaim
		if i%2 == 1 { // the last listing shows it
			listing = []*nodeplan.NodeClaim{inst}
		}
		if got := describe(tr.Reconcile(listing, nodes, []string{"default"}, at, at)); len(got) != 0 {
			t.Fatalf("listing %d = %v, want nothing", i, got)
		}
	}
	var got []string
	for i := range MissedListings {
		at := t0.Add(2*time.Hour + time.Duration(i)*time.Minute)
		got = describe(tr.Reconcile(nil, nodes, []string{"default"}, at, at))
	}
	if diff := cmp.Diff([]string{"InstanceGone a"}, got); diff != "" {
		t.Errorf("instance really gone (-want +got):\n%s", diff)
	}
	// The same with a NotReady Node: the Node goes with the claim.
	tr.Begin(claim("b", "default"), false, nil, t0)
	tr.Launched("b", launched("b", "default", "aws:///z/i-2", t0))
	nodes = []*corev1.Node{node("ip-2", "aws:///z/i-2", registered)}
	tr.Sync(nodes, t0)
	for i := range MissedListings {
		at := t0.Add(3*time.Hour + time.Duration(i)*time.Minute)
		got = describe(tr.Reconcile(nil, nodes, []string{"default"}, at, at))
	}
	if diff := cmp.Diff([]string{"InstanceGone b @ip-2"}, got); diff != "" {
		t.Errorf("NotReady node (-want +got):\n%s", diff)
	}
}

// TestPoolGone: a claim of a pool that is no longer there is drained once the pool has been
// missing for Timeouts.Collect — and never while the pool source cannot say which pools exist.
func TestPoolGone(t *testing.T) {
	var tr Tracker
	inst := launched("a", "old", "aws:///z/i-1", t0)
	tr.Begin(claim("a", "old"), false, nil, t0)
	tr.Launched("a", inst)
	nodes := []*corev1.Node{node("ip-1", "aws:///z/i-1", ready, registered)}
	tr.Sync(nodes, t0)
	for _, at := range []time.Duration{time.Minute, time.Hour, 2 * time.Hour} {
		if got := describe(tr.Reconcile([]*nodeplan.NodeClaim{inst}, nodes, nil, t0.Add(at), t0.Add(at))); len(got) != 0 {
			t.Errorf("pool source failing, %v: %v, want nothing", at, got)
		}
	}
	at := t0.Add(3 * time.Hour)
	if got := describe(tr.Reconcile([]*nodeplan.NodeClaim{inst}, nodes, []string{"new"}, at, at)); len(got) != 0 {
		t.Errorf("pool just missing: %v, want nothing yet", got)
	}
	at = at.Add(2 * time.Minute)
	got := describe(tr.Reconcile([]*nodeplan.NodeClaim{inst}, nodes, []string{"new"}, at, at))
	if diff := cmp.Diff([]string{"PoolGone a @ip-1"}, got); diff != "" {
		t.Errorf("pool gone (-want +got):\n%s", diff)
	}
	// An instance of an unknown pool that no claim owns is not adopted, and not deleted.
	var fresh Tracker
	got = describe(fresh.Reconcile([]*nodeplan.NodeClaim{inst}, nodes, []string{"new"}, at, at))
	if diff := cmp.Diff([]string{"Stray aws:///z/i-1 @ip-1"}, got); diff != "" {
		t.Errorf("unowned instance of an unknown pool (-want +got):\n%s", diff)
	}
}
