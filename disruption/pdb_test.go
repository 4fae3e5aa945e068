package disruption_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
)

func TestPDBAllowed(t *testing.T) {
	five := pods("db", 5, "100m", "64Mi", app("db"))
	five[4].Status.Conditions[0].Status = corev1.ConditionFalse // 4 healthy of 5
	other := pods("web", 3, "100m", "64Mi")
	all := append(append([]*corev1.Pod{}, five...), other...)
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int) *intstr.IntOrString { v := intstr.FromInt32(int32(n)); return &v }
	for _, tc := range []struct {
		name             string
		minAvail, maxUnv *intstr.IntOrString
		status           int32
		want             int
	}{
		{"minAvailable 3", num(3), nil, 0, 1},
		{"minAvailable 5", num(5), nil, 0, 0},
		{"minAvailable 50% rounds up to 3", pct("50%"), nil, 0, 1},
		{"maxUnavailable 2", nil, num(2), 0, 1},
		{"maxUnavailable 0", nil, num(0), 0, 0},
		{"maxUnavailable 30% rounds up to 2", nil, pct("30%"), 0, 1},
		{"neither: status", nil, nil, 7, 7},
	} {
		pdb := pdbMinAvailable("db", "db", 0)
		pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable = tc.minAvail, tc.maxUnv
		pdb.Status.DisruptionsAllowed = tc.status
		if got, _, _ := disruption.PDBAllowed(pdb, all); got != tc.want {
			t.Errorf("PDBAllowed(%s) = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestPDBsTogether: a PDB allowing one disruption lets one node of two go, not both, although
// each alone would pass Karpenter's per-PDB check.
func TestPDBsTogether(t *testing.T) {
	var nodes []disruption.Node
	for i := range 4 {
		ps := pods(fmt.Sprintf("web%d", i), 2, "200m", "256Mi")
		ps = append(ps, newPod(fmt.Sprintf("db-%d", i), "100m", "64Mi", app("db")))
		nodes = append(nodes, newNode(t, fmt.Sprintf("n%d", i), "m5.xlarge", "default", withPods(ps...)))
	}
	in := disruption.Input{Nodes: nodes, NodePools: []nodeplan.NodePool{pool("default", budget("100%"))},
		InstanceTypes: testCatalog(t), Now: t0, PDBs: []*policyv1.PodDisruptionBudget{pdbMinAvailable("db", "db", 3)}}
	r, err := disruption.Plan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, in, r)
	disrupted := 0
	for _, c := range r.Commands {
		disrupted += len(c.Nodes)
	}
	if disrupted != 1 {
		t.Errorf("PDB allowing 1 disruption: %d nodes disrupted, want 1\n%s", disrupted, render(r))
	}
	pdbBlocked := 0
	for _, b := range r.Blocked {
		if b.Code == disruption.CodePDB && strings.Contains(b.Message, "default/db") {
			pdbBlocked++
		}
	}
	if pdbBlocked == 0 {
		t.Errorf("no node names the PDB that held it back:\n%s", render(r))
	}
}

// TestPendingPodsReserve: room a pending pod will take is not counted on, and the node it will
// land on is nominated.
func TestPendingPodsReserve(t *testing.T) {
	n0 := newNode(t, "n0", "m5.large", "default", withPods(newPod("a", "1", "1Gi")))
	n1 := newNode(t, "n1", "m5.large", "default", withPods(newPod("b", "500m", "1Gi")))
	in := disruption.Input{Nodes: []disruption.Node{n0, n1}, NodePools: []nodeplan.NodePool{pool("default", budget("100%"))},
		InstanceTypes: testCatalog(t), Now: t0, Pending: []*corev1.Pod{newPod("pending", "1", "1Gi")}}
	r, err := disruption.Plan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Commands {
		if c.Action == disruption.ActionDelete && len(c.Moves) > 0 {
			t.Errorf("a delete counts on room the pending pod takes:\n%s", render(r))
		}
	}
	nominated := 0
	for _, b := range r.Blocked {
		if b.Code == disruption.CodeNominated && b.Object == "default/pending" {
			nominated++
		}
	}
	if nominated != 1 {
		t.Errorf("%d nodes nominated for the pending pod, want 1:\n%s", nominated, render(r))
	}
}

func TestValidate(t *testing.T) {
	n := newNode(t, "n0", "m5.large", "default", withPods(newPod("a", "1", "1Gi")))
	dup := newNode(t, "n0", "m5.large", "default", withPods(newPod("a", "1", "1Gi")), withPrice(-1))
	in := disruption.Input{Nodes: []disruption.Node{n, dup}, NodePools: []nodeplan.NodePool{{Name: "default"}, {Name: "default"}},
		Options: disruption.Options{SavingsThreshold: 1}}
	_, err := disruption.Plan(context.Background(), in)
	if err == nil {
		t.Fatal("Plan() of an invalid input = nil error")
	}
	for _, want := range []string{"node n0 appears twice", "pod default/a appears twice", "price -1", `NodePool "default" appears twice`, "SavingsThreshold"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Plan() error = %q, want it to mention %q", err, want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ok := disruption.Input{Nodes: []disruption.Node{n}, NodePools: []nodeplan.NodePool{pool("default")}, InstanceTypes: testCatalog(t), Now: t0,
		Pending: []*corev1.Pod{newPod("p", "1", "1Gi")}}
	if _, err := disruption.Plan(ctx, ok); !errors.Is(err, context.Canceled) {
		t.Errorf("Plan(cancelled) error = %v, want context.Canceled", err)
	}
}

// TestPDBOneEvictionAtATime is seed 000's remedy: a node whose 3 pods share one PDB stays while
// the PDB allows no eviction (minAvailable 3), and is consolidated once it allows one
// (maxUnavailable 1), as in Karpenter — its drain evicts them one at a time, each eviction
// waiting until the PDB allows the next, which the command says.
func TestPDBOneEvictionAtATime(t *testing.T) {
	num := func(n int) *intstr.IntOrString { v := intstr.FromInt32(int32(n)); return &v }
	for _, tc := range []struct {
		name             string
		minAvail, maxUnv *intstr.IntOrString
		disrupted        bool
	}{
		{"minAvailable 3", num(3), nil, false},
		{"maxUnavailable 1", nil, num(1), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			busy := newNode(t, "n0", "m5.xlarge", "default", withPods(pods("web", 4, "500m", "1Gi")...))
			busy.Node.Annotations[nodeplan.AnnotationDoNotDisrupt] = "true" // it stays, and takes the db pods
			idle := newNode(t, "n1", "m5.xlarge", "default", withPods(pods("db", 3, "100m", "128Mi", app("db"))...))
			pdb := pdbMinAvailable("db", "db", 0)
			pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable = tc.minAvail, tc.maxUnv
			in := disruption.Input{Nodes: []disruption.Node{busy, idle}, NodePools: []nodeplan.NodePool{pool("default", budget("100%"))},
				InstanceTypes: testCatalog(t), Now: t0, PDBs: []*policyv1.PodDisruptionBudget{pdb}}
			r, err := disruption.Plan(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, in, r)
			c, ok := commandFor(r, "n1")
			if ok != tc.disrupted {
				t.Fatalf("n1 disrupted = %v, want %v\n%s", ok, tc.disrupted, render(r))
			}
			if !ok {
				b, _ := blockedOf(r, "n1")
				if b.Code != disruption.CodePDB || !strings.Contains(b.Message, "PDB default/db allows 0") {
					t.Errorf("n1 stays with %s %q, want the PDB that allows no eviction", b.Code, b.Message)
				}
				return
			}
			if want := []string{"default/db"}; !slices.Equal(c.OneAtATime, want) {
				t.Errorf("command OneAtATime = %v, want %v", c.OneAtATime, want)
			}
		})
	}
}
