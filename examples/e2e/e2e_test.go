package e2e

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
	"github.com/nodeplan/nodeplan/scheduling"
)

// env is the end-to-end world: a real control plane, the simulated cloud and kubelets, and
// controllers started and stopped by the scenarios.
type env struct {
	t       *testing.T
	client  kubernetes.Interface
	dynamic dynamic.Interface
	cloud   *cloudprovider.Memory
	kubelet *sim.Kubelet
	deps    *sim.Deployments
	pools   []nodeplan.NodePool
	logs    *logs
}

type logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logs) count(msg string) int { return strings.Count(l.String(), `msg="`+msg+`"`) }

// TestEndToEnd runs the controller against a real kube-apiserver, etcd and kube-scheduler,
// with the in-memory cloud and simulated kubelets registering Nodes for its instances.
func TestEndToEnd(t *testing.T) {
	cp := startControlPlane(t)
	pools, err := nodeplan.DecodeNodePools(sim.NodePoolsYAML())
	if err != nil {
		t.Fatal(err)
	}
	pools[0].Disruption.ConsolidateAfter = 5 * time.Second
	e := &env{t: t, client: cp.Client, pools: pools, logs: &logs{},
		cloud: &cloudprovider.Memory{Catalog: sim.Catalog()}}
	e.dynamic = installCRDs(t, cp.Config)
	e.kubelet = &sim.Kubelet{Client: cp.Client, Provider: e.cloud, BootTime: 2 * time.Second, ReadyTime: time.Second}
	e.deps = &sim.Deployments{Client: cp.Client}
	pods := &sim.Scheduler{Client: cp.Client, NoBind: true} // kube-scheduler binds; this starts pods
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			now := time.Now()
			for _, step := range []func(context.Context, time.Time) error{e.deps.Step, e.kubelet.Step, pods.Step} {
				if err := step(ctx, now); err != nil && ctx.Err() == nil {
					t.Logf("simulated cluster: %v", err)
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	if err := e.deps.Create(ctx, inflate()); err != nil {
		t.Fatal(err)
	}

	t.Run("pending pods are bound to launched nodes", func(t *testing.T) {
		stop := e.controller(t, "a", nil)
		defer stop()
		e.scale(t, 5)
		e.waitRunning(t, 5)
		if n := len(e.instances(t)); n != 1 {
			t.Errorf("instances = %d, want 1", n)
		}
	})
	t.Run("scale-down consolidates", func(t *testing.T) {
		stop := e.controller(t, "a", nil)
		defer stop()
		e.scale(t, 0)
		e.waitEmpty(t)
	})
	t.Run("spot interruption replaces the node", func(t *testing.T) {
		stop := e.controller(t, "a", nil)
		defer stop()
		e.scale(t, 3)
		e.waitRunning(t, 3)
		victim := e.instances(t)[0].Status.ProviderID
		if err := e.cloud.Interrupt(victim, cloudprovider.InterruptionSpot, time.Now().Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 90*time.Second, "pods on a replacement and the interrupted instance gone", func() bool {
			return e.running(t) == 3 && !slices.ContainsFunc(e.instances(t), func(c *nodeplan.NodeClaim) bool {
				return c.Status.ProviderID == victim
			})
		})
		e.scale(t, 0)
		e.waitEmpty(t)
	})
	t.Run("insufficient capacity on the cheapest offering falls back", func(t *testing.T) {
		stop := e.controller(t, "a", nil)
		defer stop()
		key := e.cheapest(t, 5)
		e.cloud.SetCapacityError(key, true)
		defer e.cloud.ClearCapacityErrors()
		e.scale(t, 5)
		e.waitRunning(t, 5)
		for _, c := range e.instances(t) {
			if c.Status.InstanceType == key.InstanceType && c.Status.Zone == key.Zone && c.Status.CapacityType == key.CapacityType {
				t.Errorf("launched on %s, which has no capacity", key)
			}
		}
		e.scale(t, 0)
		e.waitEmpty(t)
	})
	t.Run("a controller killed mid-launch loses and leaks nothing", func(t *testing.T) {
		e.kubelet.SetBootTime(time.Hour) // hold the node back: the claim stays in flight
		stopA := e.controller(t, "a", nil)
		e.scale(t, 4)
		waitFor(t, time.Minute, "a launch", func() bool { return len(e.instances(t)) == 1 })
		stopA()
		launched := e.instances(t)[0].Status.ProviderID
		e.kubelet.SetBootTime(2 * time.Second)
		stopB := e.controller(t, "b", nil)
		defer stopB()
		e.waitRunning(t, 4)
		insts := e.instances(t)
		if len(insts) != 1 || insts[0].Status.ProviderID != launched {
			t.Errorf("instances after the restart = %v, want only the adopted %s", providerIDs(insts), launched)
		}
		// NodeClaims are the record: the restarted controller restores the in-flight claim from
		// its object and matches it to the instance, launching nothing new.
		if n := e.logs.count("restored nodeclaim"); n < 1 {
			t.Errorf("the restarted controller restored no nodeclaim")
		}
		e.scale(t, 0)
		e.waitEmpty(t)
	})
	t.Run("two replicas elect one leader", func(t *testing.T) {
		before := e.logs.count("controller started")
		var stops []func()
		for _, id := range []string{"r1", "r2"} {
			stops = append(stops, e.replica(t, id))
		}
		defer func() {
			for _, s := range stops {
				s()
			}
		}()
		waitFor(t, 30*time.Second, "a leader", func() bool { return e.logs.count("controller started") == before+1 })
		time.Sleep(3 * time.Second)
		if n := e.logs.count("controller started") - before; n != 1 {
			t.Fatalf("controllers started = %d, want 1 (one leader)", n)
		}
		leader := "r1"
		if strings.Contains(e.logs.String(), `msg="acquired leader lease" lease=kube-system/nodeplan identity=r2`) {
			leader = "r2"
		}
		stops[map[string]int{"r1": 0, "r2": 1}[leader]]()
		waitFor(t, 30*time.Second, "the other replica taking over", func() bool {
			return e.logs.count("controller started") == before+2
		})
		e.scale(t, 2)
		e.waitRunning(t, 2)
		e.scale(t, 0)
		e.waitEmpty(t)
	})
	if t.Failed() {
		t.Logf("controller logs (tail):\n%s", tail(e.logs.String(), 80))
	}
}

func inflate() *appsv1.Deployment {
	zero := int32(0)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "inflate", Namespace: "karpenter-test"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &zero,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "inflate"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "inflate"}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: new(int64),
					NodeSelector:                  map[string]string{"eks-team": "my-team"},
					Containers: []corev1.Container{{Name: "inflate", Image: "public.ecr.aws/eks-distro/kubernetes/pause:3.7",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
				},
			},
		},
	}
}

func (e *env) newController(name string) *controller.Controller {
	return &controller.Controller{
		Client: e.client, Dynamic: e.dynamic, Provider: e.cloud, NodePools: controller.StaticNodePools(e.pools), Solve: scheduling.Solve,
		Logger:             slog.New(slog.NewTextHandler(e.logs, nil)).With("replica", name),
		DisruptionInterval: 2 * time.Second, InterruptionInterval: time.Second, ReconcileInterval: 5 * time.Second,
		EvictionRetry: time.Second, Timeouts: controller.Timeouts{Collect: 10 * time.Second},
	}
}

// controller runs one controller until the returned stop is called (or the test ends).
func (e *env) controller(t *testing.T, name string, _ func(*controller.Controller)) func() {
	t.Helper()
	c := e.newController(name)
	return e.background(t, func(ctx context.Context) {
		if err := c.Run(ctx); err != nil {
			t.Errorf("controller %s: Run() = %v", name, err)
		}
	})
}

// replica runs a controller under leader election, as a Deployment's replica would.
func (e *env) replica(t *testing.T, id string) func() {
	le := &controller.LeaderElection{Client: e.client, Namespace: "kube-system", Name: "nodeplan", Identity: id,
		LeaseDuration: 4 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(e.logs, nil))}
	return e.background(t, func(ctx context.Context) {
		if err := le.Run(ctx, func(ctx context.Context) {
			if err := e.newController(id).Run(ctx); err != nil {
				t.Errorf("replica %s: %v", id, err)
			}
		}); err != nil {
			t.Errorf("replica %s: %v", id, err)
		}
	})
}

func (e *env) background(t *testing.T, f func(context.Context)) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func (e *env) scale(t *testing.T, n int) {
	t.Helper()
	if err := e.deps.Scale(context.Background(), "karpenter-test", "inflate", n); err != nil {
		t.Fatal(err)
	}
}

func (e *env) running(t *testing.T) int {
	t.Helper()
	return runningIn(t, e, "karpenter-test")
}

func (e *env) waitRunning(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for e.running(t) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d inflate pods bound by kube-scheduler and running: not within 90s\n%s", n, e.dump(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dump describes the pods and nodes, for failures.
func (e *env) dump(t *testing.T) string {
	var b strings.Builder
	pods, _ := e.client.CoreV1().Pods("karpenter-test").List(context.Background(), metav1.ListOptions{})
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s node=%q phase=%s deleting=%v conditions=%v\n", p.Name, p.Spec.NodeName, p.Status.Phase,
			p.DeletionTimestamp != nil, p.Status.Conditions)
	}
	nodes, _ := e.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	for _, n := range nodes.Items {
		fmt.Fprintf(&b, "node %s providerID=%s taints=%v labels=%v conditions=%v allocatable=%v\n", n.Name, n.Spec.ProviderID,
			n.Spec.Taints, n.Labels, n.Status.Conditions, n.Status.Allocatable)
	}
	return b.String()
}

func (e *env) waitEmpty(t *testing.T) {
	t.Helper()
	waitFor(t, 90*time.Second, "every node, instance and NodeClaim object removed", func() bool {
		nodes, err := e.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
		if err != nil || len(nodes.Items) != 0 || len(e.instances(t)) != 0 {
			return false
		}
		if e.dynamic == nil {
			return true
		}
		// The controller deletes a NodeClaim object after its instance: a test that stopped it
		// sooner would leave the object to the next test on the shared control plane.
		claims, err := e.dynamic.Resource(controller.NodeClaimGVR).List(context.Background(), metav1.ListOptions{})
		return err == nil && len(claims.Items) == 0
	})
}

func (e *env) instances(t *testing.T) []*nodeplan.NodeClaim {
	t.Helper()
	insts, err := e.cloud.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return insts
}

func providerIDs(cs []*nodeplan.NodeClaim) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Status.ProviderID)
	}
	return out
}

// cheapest asks the solver which offering it would launch n inflate pods on.
func (e *env) cheapest(t *testing.T, n int) cloudprovider.OfferingKey {
	t.Helper()
	var pods []*corev1.Pod
	tmpl := inflate().Spec.Template
	for i := range n {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("probe-", i), Namespace: "x"}, Spec: tmpl.Spec})
	}
	res, err := scheduling.Solve(context.Background(), scheduling.Input{Pods: pods, NodePools: e.pools, InstanceTypes: e.cloud.Catalog})
	if err != nil || len(res.NodeClaims) == 0 {
		t.Fatalf("probing the solver: %v (%d claims)", err, len(res.NodeClaims))
	}
	nc := res.NodeClaims[0]
	return cloudprovider.OfferingKey{InstanceType: nc.InstanceType, Zone: nc.Offering.Zone, CapacityType: nc.Offering.CapacityType}
}
