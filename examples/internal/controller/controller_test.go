package controller_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
	"github.com/nodeplan/nodeplan/scheduling"
)

// logBuffer collects log lines from concurrent goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) count(msg string) int { return strings.Count(l.String(), `msg="`+msg+`"`) }

type harness struct {
	t     *testing.T
	w     *sim.World
	logs  *logBuffer
	pools []nodeplan.NodePool
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	pools, err := nodeplan.DecodeNodePools(sim.NodePoolsYAML())
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, w: sim.NewWorld(nil), logs: &logBuffer{}, pools: pools}
}

// start runs a fresh controller (a fresh process, as far as its state goes) and returns its
// stop function, which waits for Run to return.
func (h *harness) start(name string, mutate func(*controller.Controller)) func() {
	h.t.Helper()
	c := &controller.Controller{
		Client:    h.w.Client,
		Dynamic:   h.w.Dynamic,
		Provider:  h.w.Cloud,
		NodePools: controller.StaticNodePools(h.pools),
		Solve:     scheduling.Solve,
		Clock:     h.w.Clock,
		Logger:    slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("replica", name),
	}
	if mutate != nil {
		mutate(c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	// A readiness wait, not a timing assertion: generous for a loaded machine under -race.
	started := false
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if strings.Contains(h.logs.String(), `msg="controller started" replica=`+name) {
			started = true
			break
		}
		time.Sleep(time.Millisecond)
	}
	if !started {
		cancel()
		h.t.Fatalf("controller %s did not start; logs:\n%s", name, h.logs.String())
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				h.t.Errorf("Run() = %v", err)
			}
		})
	}
	h.t.Cleanup(stop)
	return stop
}

func (h *harness) until(max time.Duration, what string, cond func() bool) {
	h.t.Helper()
	ok, err := h.w.Until(context.Background(), max, cond)
	if err != nil {
		h.t.Fatal(err)
	}
	if !ok {
		h.t.Fatalf("after %v: %s did not happen; logs:\n%s", max, what, h.logs.String())
	}
}

func (h *harness) deploy(name string, replicas int32, pdbMinAvailable int) {
	h.t.Helper()
	ctx := context.Background()
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "test"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"eks-team": "my-team"},
					Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
				},
			},
		},
	}
	if err := h.w.Deployments.Create(ctx, dep); err != nil {
		h.t.Fatal(err)
	}
	if pdbMinAvailable > 0 {
		min := intstr.FromInt32(int32(pdbMinAvailable))
		_, err := h.w.Client.PolicyV1().PodDisruptionBudgets("test").Create(ctx, &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "test"},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &min,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}},
		}, metav1.CreateOptions{})
		if err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h *harness) running() int {
	list, err := h.w.Client.CoreV1().Pods("test").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	n := 0
	for _, p := range list.Items {
		if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
			n++
		}
	}
	return n
}

func (h *harness) instances() []*nodeplan.NodeClaim {
	insts, err := h.w.Cloud.List(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return insts
}

func (h *harness) nodes() int {
	list, err := h.w.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return len(list.Items)
}

// TestRestartLosesNothing kills the controller after it launched an instance but before the
// node registered, and starts a new one: the new one adopts the instance (no second launch)
// and the pods land on it; an instance nobody can attribute is reported once and left alone.
func TestRestartLosesNothing(t *testing.T) {
	h := newHarness(t)
	stopA := h.start("a", nil)
	h.deploy("inflate", 5, 0)
	h.until(time.Minute, "a launch", func() bool { return len(h.instances()) == 1 })
	stopA()
	launched := h.instances()[0]

	// An instance left by something else (no claim, no pool): not provably ours.
	stray, err := h.w.Cloud.Create(context.Background(), &nodeplan.NodeClaim{InstanceTypeOptions: []string{"c6a.large"}})
	if err != nil {
		t.Fatal(err)
	}
	h.start("b", func(c *controller.Controller) { c.Timeouts.Collect = time.Minute })
	h.until(2*time.Minute, "5 pods running", func() bool { return h.running() == 5 })
	if err := h.w.Advance(context.Background(), 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, i := range h.instances() {
		ids = append(ids, i.Status.ProviderID)
	}
	if diff := cmp.Diff([]string{launched.Status.ProviderID, stray.Status.ProviderID}, ids,
		cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("instances after restart (-want +got):\n%s", diff)
	}
	if n := h.logs.count("restored nodeclaim"); n != 1 {
		t.Errorf(`"restored nodeclaim" logged %d times, want 1`, n)
	}
	if n := h.logs.count("launched nodeclaim"); n != 1 {
		t.Errorf(`"launched nodeclaim" logged %d times across both runs, want 1 (no double launch)`, n)
	}
	if n := h.logs.count("instance has no nodeclaim; leaving it alone"); n != 1 {
		t.Errorf("the stray was reported %d times, want 1", n)
	}
}

// TestKilledMidLaunch stops the controller while Provider.Create is in flight: the launch is
// abandoned (the provider contract leaves no instance behind), and the next run launches again.
func TestKilledMidLaunch(t *testing.T) {
	h := newHarness(t)
	h.w.Cloud.LaunchLatency = 10 * time.Second
	h.w.Cloud.Sleep = func(ctx context.Context, d time.Duration) error {
		select {
		case <-h.w.Clock.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	stopA := h.start("a", nil)
	h.deploy("inflate", 5, 0)
	h.until(time.Minute, "a launch in flight", func() bool {
		return h.w.Clock.HasWaiters() && h.logs.count("computed new nodeclaim(s) to fit pod(s)") == 1
	})
	if err := h.w.Advance(context.Background(), 3*time.Second); err != nil { // Create sleeps on
		t.Fatal(err)
	}
	stopA()
	if n := len(h.instances()); n != 0 {
		t.Fatalf("instances after a kill mid-launch = %d, want 0", n)
	}
	h.start("b", nil)
	h.until(2*time.Minute, "5 pods running", func() bool { return h.running() == 5 })
	if n := len(h.instances()); n != 1 {
		t.Errorf("instances = %d, want 1", n)
	}
}

// TestRegistrationTimeout: an instance whose node never registers is deleted.
func TestRegistrationTimeout(t *testing.T) {
	h := newHarness(t)
	h.w.Kubelet.BootTime = time.Hour // never, within the test
	h.start("a", func(c *controller.Controller) { c.Timeouts.Registration = 30 * time.Second })
	h.deploy("inflate", 1, 0)
	h.until(time.Minute, "a launch", func() bool { return len(h.instances()) == 1 })
	first := h.instances()[0].Status.ProviderID
	h.until(time.Minute, "the first instance deleted", func() bool {
		for _, i := range h.instances() {
			if i.Status.ProviderID == first {
				return false
			}
		}
		return true
	})
	if n := h.logs.count("nodeclaim did not register in time; deleting its instance"); n < 1 {
		t.Errorf("registration timeout not logged; logs:\n%s", h.logs.String())
	}
}

// TestInterruptionHonoursPDB: a spot interruption drains through the Eviction API; a PDB that
// allows nothing holds the last pod (429s retried) until the pool's terminationGracePeriod
// runs out, then it is deleted and the instance goes.
func TestInterruptionHonoursPDB(t *testing.T) {
	h := newHarness(t)
	h.pools[0].Template.TerminationGracePeriod = time.Minute
	h.start("a", nil)
	h.deploy("guarded", 1, 1)
	h.until(time.Minute, "the pod running", func() bool { return h.running() == 1 })
	victim := h.instances()[0]
	if err := h.w.Cloud.Interrupt(victim.Status.ProviderID, cloudprovider.InterruptionSpot, h.w.Clock.Now().Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	h.until(30*time.Second, "the PDB refusing an eviction", func() bool {
		return h.logs.count("eviction refused by a PodDisruptionBudget; will retry") > 0
	})
	gone := func() bool {
		for _, i := range h.instances() {
			if i.Status.ProviderID == victim.Status.ProviderID {
				return false
			}
		}
		return true
	}
	if gone() {
		t.Fatal("the interrupted instance was deleted while its PDB held the pod")
	}
	h.until(2*time.Minute, "the interrupted instance deleted", gone)
	if n := h.logs.count("deleted pod: the node's terminationGracePeriod is running out"); n != 1 {
		t.Errorf("force deletions = %d, want 1; logs:\n%s", n, h.logs.String())
	}
	h.until(2*time.Minute, "the pod running again", func() bool { return h.running() == 1 })
}

// TestEmptinessPlanner uses the emptiness-only planner: the node goes consolidateAfter after its
// last pod.
func TestEmptinessPlanner(t *testing.T) {
	h := newHarness(t)
	metrics := controller.NewMetrics()
	h.start("a", func(c *controller.Controller) { c.Planner = controller.Emptiness{}; c.Metrics = metrics })
	h.deploy("inflate", 3, 0)
	h.until(time.Minute, "3 pods running", func() bool { return h.running() == 3 })
	if err := h.w.Deployments.Scale(context.Background(), "test", "inflate", 0); err != nil {
		t.Fatal(err)
	}
	start := h.w.Clock.Now()
	h.until(2*time.Minute, "the empty node removed", func() bool { return h.nodes() == 0 && len(h.instances()) == 0 })
	if waited := h.w.Clock.Now().Sub(start); waited < 30*time.Second {
		t.Errorf("the empty node went after %v, before consolidateAfter (30s)", waited)
	}
	if !strings.Contains(h.logs.String(), `msg="disrupting node(s)"`) || !strings.Contains(h.logs.String(), "reason=empty") {
		t.Errorf("no emptiness command logged; logs:\n%s", h.logs.String())
	}
	if got, _ := metrics.Value("karpenter_nodeclaims_disrupted_total", map[string]string{"nodepool": "default", "reason": "empty", "capacity_type": "spot"}); got != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{reason=empty} = %v, want 1", got)
	}
	if got, _ := metrics.Value("nodeplan_nodeclaims_launched_total", map[string]string{"nodepool": "default", "capacity_type": "spot"}); got != 1 {
		t.Errorf("nodeplan_nodeclaims_launched_total{capacity_type=spot} = %v, want 1", got)
	}
}

// TestForeignNodesSurvive: Nodes the controller did not launch — an EKS managed node group's,
// with an aws:/// provider ID the provider does not list, and one that even carries a
// karpenter.sh/nodepool label (a Karpenter installation's) — survive an hour, Ready or not.
func TestForeignNodesSurvive(t *testing.T) {
	h := newHarness(t)
	h.w.Step = time.Second
	ctx := context.Background()
	foreign := []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-1-1.ec2.internal", Labels: map[string]string{
			"eks.amazonaws.com/nodegroup": "system", "eks.amazonaws.com/capacityType": "ON_DEMAND"}},
			Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-0eks00000000000001"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-1-2.ec2.internal", Labels: map[string]string{nodeplan.LabelNodePool: "default"}},
			Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1b/i-0karpenter0000002"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-1-3.ec2.internal", Labels: map[string]string{
			"eks.amazonaws.com/nodegroup": "system"}},
			Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1c/i-0eks00000000000003"}}, // NotReady
	}
	for i, n := range foreign {
		created, err := h.w.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			created.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
			created.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
			if _, err := h.w.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	h.start("a", nil)
	if err := h.w.Advance(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	if n := h.nodes(); n != len(foreign) {
		t.Errorf("nodes after an hour = %d, want the %d foreign ones; logs:\n%s", n, len(foreign), h.logs.String())
	}
}

// TestNoPoolsNoDisruption: when the pool source has nothing to say (here: no pool at all), the
// controller disrupts nothing — an empty node stays, its instance too — instead of treating
// every node as one of a deleted pool.
func TestNoPoolsNoDisruption(t *testing.T) {
	h := newHarness(t)
	stopA := h.start("a", nil)
	h.deploy("inflate", 1, 0)
	h.until(time.Minute, "the pod running", func() bool { return h.running() == 1 })
	stopA()
	if err := h.w.Deployments.Scale(context.Background(), "test", "inflate", 0); err != nil {
		t.Fatal(err)
	}
	h.pools = nil
	h.start("b", nil)
	if err := h.w.Advance(context.Background(), 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, i := h.nodes(), len(h.instances()); n != 1 || i != 1 {
		t.Errorf("nodes, instances = %d, %d; want 1, 1 (nothing disrupted without pools); logs:\n%s", n, i, h.logs.String())
	}
	if h.logs.count("not disrupting: nodepools unavailable") == 0 {
		t.Errorf("no log line saying why nothing is disrupted")
	}
}
