package controller_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/disruption"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
	"github.com/nodeplan/nodeplan/scheduling"
)

// The soak runs the controller against the simulated cluster and cloud while faults are
// injected at random (seeded) and checks the safety invariants throughout:
//
//   - no Node and no instance the controller does not own is deleted (the world is seeded with
//     an EKS-managed-style Node whose provider ID has the cloud's scheme but no instance behind
//     it in any listing, with an instance of another installation and pool, and with one of
//     another nodeplan installation in a pool named like ours, which the simulated kubelet
//     registers as Nodes);
//   - no eviction is sent for a pod with an active karpenter.sh/do-not-disrupt, none is accepted
//     past a PodDisruptionBudget, and no pod is deleted (rather than evicted) before its own
//     terminationGracePeriodSeconds before its node's deadline;
//   - at the end, with the faults off and the workloads at rest: every instance but the foreign
//     one has a claim and a NodeClaim object naming it (none leaked), every claim an instance,
//     every Node but the foreign one an instance (none left behind), and every pod runs on
//     such a Node (none the plan placed is left pending).
//
// Faults: insufficient capacity on random offerings, throttled and failing cloud calls,
// partial fleets (an instance made but the answer lost or the call failed, an extra instance
// carrying the claim's name, no instance for a claim), Provider.List results missing instances, API server errors on the controller's client and
// outages of a few seconds, spot interruptions, and controller restarts at random points; the
// workloads (one behind a PDB, one do-not-disrupt) are scaled at random.
//
// NODEPLAN_SOAK sets the simulated duration (default 10m, 3m with -short) and
// NODEPLAN_SOAK_SEED the seed (default 1): go test -run TestSoak -v with NODEPLAN_SOAK=2h runs
// longer.
func TestSoak(t *testing.T) {
	dur := 10 * time.Minute
	if testing.Short() {
		dur = 3 * time.Minute
	}
	if v := os.Getenv("NODEPLAN_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("NODEPLAN_SOAK=%q: %v", v, err)
		}
		dur = d
	}
	seed := uint64(1)
	if v := os.Getenv("NODEPLAN_SOAK_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("NODEPLAN_SOAK_SEED=%q: %v", v, err)
		}
		seed = n
	}
	s := newSoak(t, seed)
	s.run(dur)
	s.settle()
	s.report(dur)
}

type soak struct {
	t    *testing.T
	h    *harness
	seed uint64

	client *fake.Clientset // the controller's connection to the simulated API server
	cloud  *soakCloud

	mu         sync.Mutex
	rnd        *rand.Rand
	faults     bool
	outage     time.Time // API server errors on every call until then
	injected   map[string]int
	checks     map[string]int
	violations []string

	foreignNode      string
	foreignInstance  string
	foreignInstances []string // foreignInstance, and one of another nodeplan installation
	foreignNodes     map[string]bool

	stop     func()
	ctrl     *controller.Controller
	restarts int
}

func newSoak(t *testing.T, seed uint64) *soak {
	h := newHarness(t)
	h.pools[0].Template.TerminationGracePeriod = 2 * time.Minute
	s := &soak{t: t, h: h, seed: seed, rnd: rand.New(rand.NewPCG(seed, seed^0x5eed)), faults: true,
		injected: map[string]int{}, checks: map[string]int{}, foreignNodes: map[string]bool{}}
	s.client = sim.Connect(h.w.Client)
	s.cloud = &soakCloud{Memory: h.w.Cloud, s: s}
	s.client.PrependReactor("*", "*", s.record)
	s.client.PrependReactor("*", "*", s.apiFault)
	s.seedForeign()
	s.deployWorkloads()
	s.startController()
	return s
}

// logLevel is Info, or Debug with NODEPLAN_SOAK_DEBUG set: a violation's story in full.
func (s *soak) logLevel() slog.Level {
	if os.Getenv("NODEPLAN_SOAK_DEBUG") != "" {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// chance reports true with probability p, from the soak's seeded source.
func (s *soak) chance(p float64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rnd.Float64() < p
}

func (s *soak) intn(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rnd.IntN(n)
}

func (s *soak) inject(kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.injected[kind]++
}

func (s *soak) check(kind string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks[kind]++
}

func (s *soak) violate(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, fmt.Sprintf("+%v: ", s.h.w.Elapsed())+fmt.Sprintf(format, args...))
}

// isForeign reports whether an instance is one the soak seeded as not the controller's.
func (s *soak) isForeign(providerID string) bool {
	return slices.Contains(s.foreignInstances, providerID)
}

func (s *soak) faulty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults
}

// seedForeign adds what the controller must never delete: a Ready Node of an EKS managed node
// group, whose provider ID has the cloud's scheme but whose instance no listing returns, and an
// instance launched by another installation (another pool, another claim), which the
// simulated kubelet registers.
func (s *soak) seedForeign() {
	ctx := context.Background()
	s.foreignNode = "ip-10-9-0-1.ec2.internal"
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: s.foreignNode, CreationTimestamp: metav1.NewTime(sim.Epoch.Add(-time.Hour)),
			Labels: map[string]string{"eks.amazonaws.com/nodegroup": "system", "eks.amazonaws.com/capacityType": "ON_DEMAND",
				nodeplan.LabelHostname: s.foreignNode}},
		Spec: corev1.NodeSpec{ProviderID: "memory:///us-east-1a/i-0e0e0e0e0e0e0e0e0"},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("29")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	if _, err := s.h.w.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		s.t.Fatal(err)
	}
	s.foreignNodes[s.foreignNode] = true
	other, err := s.h.w.Cloud.Create(ctx, &nodeplan.NodeClaim{Name: "batch-x7k2p", NodePool: "batch",
		InstanceTypeOptions: []string{"c6a.large"}})
	if err != nil {
		s.t.Fatal(err)
	}
	s.foreignInstance = other.Status.ProviderID
	// Another nodeplan installation's instance, of a pool with the same name as ours.
	second, err := s.h.w.Cloud.Create(ctx, &nodeplan.NodeClaim{Name: "default-q7t2w", NodePool: "default",
		InstanceTypeOptions: []string{"c6a.large"}, Annotations: map[string]string{controller.AnnotationInstallation: "staging"}})
	if err != nil {
		s.t.Fatal(err)
	}
	s.foreignInstances = []string{s.foreignInstance, second.Status.ProviderID}
}

func (s *soak) deployWorkloads() {
	ctx := context.Background()
	s.h.deploy("web", 4, 0)
	min := intstr.FromString("50%")
	if _, err := s.h.w.Client.PolicyV1().PodDisruptionBudgets("test").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "test"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &min,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}, metav1.CreateOptions{}); err != nil {
		s.t.Fatal(err)
	}
	s.h.deploy("batch", 2, 0)
	one := int32(1)
	grace := int64(20)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: "test"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "guarded"},
					Annotations: map[string]string{nodeplan.AnnotationDoNotDisrupt: "true"}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: &grace,
					NodeSelector:                  map[string]string{"eks-team": "my-team"},
					Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
						Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}},
				},
			},
		},
	}
	if err := s.h.w.Deployments.Create(ctx, dep); err != nil {
		s.t.Fatal(err)
	}
}

// startController starts a fresh controller (a new process, as far as its state goes) without
// waiting for it: a restart may land in an outage, and the world's clock must keep moving.
func (s *soak) startController() {
	s.restarts++
	c := &controller.Controller{
		Client:    s.client,
		Dynamic:   s.h.w.Dynamic,
		Provider:  s.cloud,
		NodePools: controller.StaticNodePools(s.h.pools),
		Solve:     scheduling.Solve,
		Clock:     s.h.w.Clock,
		Logger: slog.New(slog.NewTextHandler(s.h.logs, &slog.HandlerOptions{Level: s.logLevel()})).
			With("replica", fmt.Sprintf("run-%d", s.restarts)),
		Seed:     s.seed*1000 + uint64(s.restarts),
		Timeouts: controller.Timeouts{Registration: 5 * time.Minute},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	s.mu.Lock()
	s.ctrl = c
	s.mu.Unlock()
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				s.t.Errorf("Run() = %v", err)
			}
		})
	}
	s.t.Cleanup(s.stop)
}

func (s *soak) currentTracker() *controller.Tracker {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctrl.Tracker()
}

// apiFault fails calls of the controller's client: a few percent of writes and reads with a
// server error or a conflict, and every call (but watches and lists, which the informers
// retry on their own schedule) during an outage.
func (s *soak) apiFault(a k8stesting.Action) (bool, runtime.Object, error) {
	verb := a.GetVerb()
	if verb == "list" || verb == "watch" || !s.faulty() {
		return false, nil, nil
	}
	s.mu.Lock()
	down := s.h.w.Clock.Now().Before(s.outage)
	s.mu.Unlock()
	gr := a.GetResource().GroupResource()
	switch {
	case down:
		s.inject("api: call during an outage")
		return true, nil, apierrors.NewServiceUnavailable("the server is restarting")
	case verb == "update" && s.chance(0.03):
		s.inject("api: conflict")
		return true, nil, apierrors.NewConflict(gr, "", errors.New("the object has been modified"))
	case s.chance(0.02):
		s.inject("api: internal error")
		return true, nil, apierrors.NewInternalError(errors.New("etcdserver: request timed out"))
	}
	return false, nil, nil
}

// record checks every write of the controller that the API server is about to carry out.
func (s *soak) record(a k8stesting.Action) (bool, runtime.Object, error) {
	tracker := s.h.w.Client.Tracker()
	now := s.h.w.Clock.Now()
	switch {
	case a.GetVerb() == "delete" && a.GetResource().Resource == "nodes":
		name := a.(k8stesting.DeleteAction).GetName()
		s.check("node deletion owned by the controller")
		if s.foreignNodes[name] {
			s.violate("deleted Node %s, which the controller does not own", name)
		}
		// The controller deletes a Node of its own only once the instance is gone (a Node
		// deleted under a running instance loses its pods without a drain).
		if obj, err := tracker.Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", name); err == nil && !s.foreignNodes[name] {
			s.check("node deletion only after its instance is gone")
			if id := obj.(*corev1.Node).Spec.ProviderID; id != "" {
				if _, err := s.h.w.Cloud.Get(context.Background(), id); err == nil {
					s.violate("deleted Node %s while its instance %s runs", name, id)
				}
			}
		}
	case a.GetVerb() == "create" && a.GetSubresource() == "eviction":
		name := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction).Name
		obj, err := tracker.Get(corev1.SchemeGroupVersion.WithResource("pods"), a.GetNamespace(), name)
		if err != nil {
			return false, nil, nil
		}
		pod := obj.(*corev1.Pod)
		s.check("eviction honours do-not-disrupt")
		if nodeplan.DoNotDisrupt(pod, now) {
			s.violate("eviction sent for pod %s/%s, annotated %s", pod.Namespace, pod.Name, nodeplan.AnnotationDoNotDisrupt)
		}
		s.check("eviction honours PDBs")
		if blocked := s.pdbBlocks(tracker, pod); blocked != "" {
			// The Eviction API refuses it (429); a violation only if it would not.
			if err := s.wouldEvict(tracker, pod); err == nil {
				s.violate("eviction of %s/%s accepted past %s", pod.Namespace, pod.Name, blocked)
			}
		}
	case a.GetVerb() == "delete" && a.GetResource().Resource == "pods":
		d := a.(k8stesting.DeleteActionImpl)
		obj, err := tracker.Get(corev1.SchemeGroupVersion.WithResource("pods"), a.GetNamespace(), d.Name)
		if err != nil {
			return false, nil, nil
		}
		pod := obj.(*corev1.Pod)
		s.check("pod deletion only at the node's deadline less the pod's grace")
		nobj, err := tracker.Get(corev1.SchemeGroupVersion.WithResource("nodes"), "", pod.Spec.NodeName)
		if err != nil {
			return false, nil, nil
		}
		node := nobj.(*corev1.Node)
		since, err := time.Parse(time.RFC3339, node.Annotations["nodeplan.io/terminating-since"])
		if err != nil {
			s.violate("pod %s/%s deleted on node %s, which is not terminating", pod.Namespace, pod.Name, node.Name)
			break
		}
		grace := 30 * time.Second
		if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
			grace = time.Duration(*g) * time.Second
		}
		due := since.Add(2 * time.Minute).Add(-grace)
		if now.Add(time.Second).Before(due) {
			s.violate("pod %s/%s deleted at +%v, before %v (node %s terminating since %v)", pod.Namespace, pod.Name,
				now.Sub(sim.Epoch), due.Sub(sim.Epoch), node.Name, since.Sub(sim.Epoch))
		}
	}
	return false, nil, nil
}

// pdbBlocks names a PDB covering pod that allows no disruption now, or "".
func (s *soak) pdbBlocks(tracker k8stesting.ObjectTracker, pod *corev1.Pod) string {
	pods, pdbs := s.podsAndPDBs(tracker, pod.Namespace)
	for _, pdb := range pdbs {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if allowed, _, _ := disruption.PDBAllowed(pdb, pods); allowed < 1 {
			return "PodDisruptionBudget " + pdb.Namespace + "/" + pdb.Name
		}
	}
	return ""
}

// wouldEvict is the simulated Eviction API's verdict without carrying it out: an error when a
// PDB refuses it.
func (s *soak) wouldEvict(tracker k8stesting.ObjectTracker, pod *corev1.Pod) error {
	if s.pdbBlocks(tracker, pod) != "" {
		return apierrors.NewTooManyRequestsError("pdb")
	}
	return nil
}

func (s *soak) podsAndPDBs(tracker k8stesting.ObjectTracker, ns string) ([]*corev1.Pod, []*policyv1.PodDisruptionBudget) {
	var pods []*corev1.Pod
	if l, err := tracker.List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), ns); err == nil {
		for i := range l.(*corev1.PodList).Items {
			pods = append(pods, &l.(*corev1.PodList).Items[i])
		}
	}
	var pdbs []*policyv1.PodDisruptionBudget
	if l, err := tracker.List(policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets"),
		policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), ns); err == nil {
		for i := range l.(*policyv1.PodDisruptionBudgetList).Items {
			pdbs = append(pdbs, &l.(*policyv1.PodDisruptionBudgetList).Items[i])
		}
	}
	return pods, pdbs
}

// soakCloud is the simulated cloud as the controller sees it: listings that now and then miss
// an instance (EC2's DescribeInstances is eventually consistent), and every deletion checked.
type soakCloud struct {
	*cloudprovider.Memory
	s *soak

	mu           sync.Mutex
	listFailures int // throttled List calls to come; injected here, as the simulated kubelets list too
	// hidden instances are left out of every listing until the time given: EC2's
	// DescribeInstances is eventually consistent.
	hidden map[string]time.Time
}

func (p *soakCloud) List(ctx context.Context) ([]*nodeplan.NodeClaim, error) {
	p.mu.Lock()
	if p.listFailures > 0 {
		p.listFailures--
		p.mu.Unlock()
		return nil, errors.New("RequestLimitExceeded: Request limit exceeded.")
	}
	p.mu.Unlock()
	insts, err := p.Memory.List(ctx)
	p.mu.Lock()
	now := p.s.h.w.Clock.Now()
	insts = slices.DeleteFunc(insts, func(i *nodeplan.NodeClaim) bool { return now.Before(p.hidden[i.Status.ProviderID]) })
	p.mu.Unlock()
	if err != nil || len(insts) == 0 || !p.s.faulty() || !p.s.chance(0.15) {
		return insts, err
	}
	p.s.inject("cloud: listing missing an instance")
	i := p.s.intn(len(insts))
	return slices.Delete(insts, i, i+1), nil
}

// Create launches through the simulated cloud and now and then answers as a fleet request can
// go wrong, the partial fleets: the instance made but the answer lost (a timeout, or a failed
// call whose clean-up could not find the instance), more instances than asked (the extra one
// left running, carrying the claim's name), or none of those asked for this claim (its
// offering out of capacity while the others of the request were filled).
func (p *soakCloud) Create(ctx context.Context, claim *nodeplan.NodeClaim) (*nodeplan.NodeClaim, error) {
	if !p.s.faulty() {
		return p.Memory.Create(ctx, claim)
	}
	k := p.s.intn(100)
	out, err := p.Memory.Create(ctx, claim)
	if err != nil || k >= 32 {
		return out, err
	}
	switch {
	case k < 8:
		p.s.inject("cloud: partial fleet: launched, answer lost")
		return nil, context.DeadlineExceeded
	case k < 16:
		p.s.inject("cloud: partial fleet: launched, call failed")
		return nil, &cloudprovider.LaunchError{Reason: cloudprovider.ReasonLaunchFailed,
			Err: errors.New("InternalError: An internal error has occurred (clean-up found no instance to terminate)")}
	case k < 24:
		if _, err := p.Memory.Create(ctx, claim); err == nil {
			p.s.inject("cloud: partial fleet: an extra instance")
		}
		return out, nil
	default:
		// The instance the request would have made for this claim is not made.
		if err := p.Memory.Delete(ctx, out.Status.ProviderID); err != nil {
			return nil, err
		}
		p.s.inject("cloud: partial fleet: no instance for this claim")
		return nil, &cloudprovider.InsufficientCapacityError{Offerings: []cloudprovider.OfferingKey{{
			InstanceType: out.Status.InstanceType, Zone: out.Status.Zone, CapacityType: out.Status.CapacityType}}}
	}
}

func (p *soakCloud) Delete(ctx context.Context, providerID string) error {
	p.s.check("instance deletion owned by the controller")
	if p.s.isForeign(providerID) {
		p.s.violate("terminated instance %s of another installation", providerID)
	}
	return p.Memory.Delete(ctx, providerID)
}

// run advances the world for dur of simulated time, injecting a fault or a workload change
// every few seconds and checking the foreign objects every ten.
func (s *soak) run(dur time.Duration) {
	ctx := context.Background()
	end := s.h.w.Clock.Now().Add(dur)
	nextCheck := s.h.w.Clock.Now()
	for s.h.w.Clock.Now().Before(end) {
		if _, err := s.h.w.Until(ctx, time.Duration(2+s.intn(8))*time.Second, nil); err != nil {
			s.t.Fatal(err)
		}
		if now := s.h.w.Clock.Now(); !now.Before(nextCheck) {
			s.checkForeign()
			nextCheck = now.Add(10 * time.Second)
		}
		s.injectOne()
	}
}

func (s *soak) injectOne() {
	ctx := context.Background()
	w := s.h.w
	switch k := s.intn(100); {
	case k < 15: // insufficient capacity on a cheap offering, or capacity back
		it := w.Cloud.Catalog[s.intn(len(w.Cloud.Catalog))]
		if len(it.Offerings) == 0 {
			return
		}
		o := it.Offerings[s.intn(len(it.Offerings))]
		on := s.chance(0.7)
		w.Cloud.SetCapacityError(cloudprovider.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}, on)
		if on {
			s.inject("cloud: insufficient capacity")
		}
		if s.chance(0.1) {
			w.Cloud.ClearCapacityErrors()
		}
	case k < 30: // throttling and failing cloud calls
		ops := []cloudprovider.Op{cloudprovider.OpCreate, cloudprovider.OpDelete, cloudprovider.OpList,
			cloudprovider.OpInstanceTypes, cloudprovider.OpIsDrifted, cloudprovider.OpInterruptions}
		op := ops[s.intn(len(ops))]
		n := 1 + s.intn(3)
		if op == cloudprovider.OpList {
			s.cloud.mu.Lock()
			s.cloud.listFailures += n
			s.cloud.mu.Unlock()
		}
		for range n {
			if op != cloudprovider.OpList {
				w.Cloud.FailNext(op, errors.New("RequestLimitExceeded: Request limit exceeded."))
			}
		}
		s.inject("cloud: throttled call")
	case k < 38: // an API server outage of a few seconds
		s.mu.Lock()
		s.outage = w.Clock.Now().Add(time.Duration(2+s.rnd.IntN(6)) * time.Second)
		s.mu.Unlock()
		s.inject("api: outage")
	case k < 46: // a spot interruption
		insts, _ := w.Cloud.List(ctx)
		var ours []*nodeplan.NodeClaim
		for _, i := range insts {
			if !s.isForeign(i.Status.ProviderID) && i.Status.CapacityType == nodeplan.CapacityTypeSpot {
				ours = append(ours, i)
			}
		}
		if len(ours) == 0 {
			return
		}
		v := ours[s.intn(len(ours))]
		if err := w.Cloud.Interrupt(v.Status.ProviderID, cloudprovider.InterruptionSpot, w.Clock.Now().Add(2*time.Minute)); err == nil {
			s.inject("cloud: spot interruption")
		}
	case k < 50: // an instance missing from every listing for 20-60s
		insts, _ := w.Cloud.List(ctx)
		if len(insts) == 0 {
			return
		}
		v := insts[s.intn(len(insts))]
		s.cloud.mu.Lock()
		if s.cloud.hidden == nil {
			s.cloud.hidden = map[string]time.Time{}
		}
		s.cloud.hidden[v.Status.ProviderID] = w.Clock.Now().Add(time.Duration(20+s.intn(41)) * time.Second)
		s.cloud.mu.Unlock()
		s.inject("cloud: instance missing from listings for 20-60s")
	case k < 56: // the controller killed and started again
		s.stop()
		s.inject("controller: restart")
		s.startController()
	case k < 80: // a workload scaled
		name := []string{"web", "batch", "guarded"}[s.intn(3)]
		n := map[string]int{"web": 13, "batch": 7, "guarded": 3}[name]
		if err := w.Deployments.Scale(ctx, "test", name, s.intn(n)); err != nil {
			s.t.Fatal(err)
		}
		s.inject("pods: scale")
	}
}

func (s *soak) checkForeign() {
	ctx := context.Background()
	s.check("foreign Node still there")
	if _, err := s.h.w.Client.CoreV1().Nodes().Get(ctx, s.foreignNode, metav1.GetOptions{}); err != nil {
		s.violate("foreign Node %s: %v", s.foreignNode, err)
	}
	for _, id := range s.foreignInstances {
		s.check("foreign instance still there")
		if _, err := s.h.w.Cloud.Get(ctx, id); err != nil {
			s.violate("foreign instance %s: %v", id, err)
		}
	}
}

// settle turns the faults off, brings the workloads to a fixed size and waits for the world to
// come to rest, then checks that nothing leaked and nothing is left pending.
func (s *soak) settle() {
	ctx := context.Background()
	w := s.h.w
	s.mu.Lock()
	s.faults = false
	s.outage = time.Time{}
	s.mu.Unlock()
	w.Cloud.ClearCapacityErrors()
	for name, n := range map[string]int{"web": 6, "batch": 3, "guarded": 1} {
		if err := w.Deployments.Scale(ctx, "test", name, n); err != nil {
			s.t.Fatal(err)
		}
	}
	// Let the scale land (new pods created, the drains of the last interruptions done) before
	// waiting for rest, and check again a while after it came: rest must last.
	if err := w.Advance(ctx, 2*time.Minute); err != nil {
		s.t.Fatal(err)
	}
	var last string
	ok, err := w.Until(ctx, 30*time.Minute, func() bool {
		now := s.unsettled()
		if now != last && now != "" && testing.Verbose() {
			s.t.Logf("+%v settling: %s", w.Elapsed(), now)
		}
		last = now
		return last == ""
	})
	if err != nil {
		s.t.Fatal(err)
	}
	if ok {
		if err := w.Advance(ctx, 2*time.Minute); err != nil {
			s.t.Fatal(err)
		}
		if last = s.unsettled(); last != "" {
			ok = false
		}
	}
	s.checkForeign()
	insts, err := w.Cloud.List(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, i := range insts {
		if !s.isForeign(i.Status.ProviderID) {
			s.check("instance at rest has a NodeClaim (none leaked)")
		}
	}
	for range s.h.pods("test") {
		s.check("pod at rest is running on a live node (none left pending)")
	}
	if nodes, err := w.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for range nodes.Items {
			s.check("node at rest has a live instance (none left behind)")
		}
	}
	if !ok {
		s.violate("30 minutes after the faults stopped: %s", last)
	}
}

// unsettled says what is not at rest yet: an instance without a claim in the table and a
// NodeClaim object naming it, a claim without an instance, a Node without an instance, a pod
// not running on a Node with an instance.
func (s *soak) unsettled() string {
	ctx := context.Background()
	insts, err := s.h.w.Cloud.List(ctx)
	if err != nil {
		return err.Error()
	}
	var problems []string
	objects := map[string]string{} // provider ID → NodeClaim object
	if l, err := s.h.w.Dynamic.Resource(controller.NodeClaimGVR).List(ctx, metav1.ListOptions{}); err == nil {
		for _, u := range l.Items {
			if id, _, _ := unstructured.NestedString(u.Object, "status", "providerID"); id != "" {
				objects[id] = u.GetName()
			}
		}
	} else {
		return err.Error()
	}
	live := map[string]bool{}
	for _, i := range insts {
		live[i.Status.ProviderID] = true
		if s.isForeign(i.Status.ProviderID) {
			continue
		}
		if s.currentTracker().ByProviderID(i.Status.ProviderID) == nil {
			problems = append(problems, "instance "+i.Status.ProviderID+" has no claim")
		} else if objects[i.Status.ProviderID] == "" {
			problems = append(problems, "instance "+i.Status.ProviderID+" has no NodeClaim object")
		}
	}
	for _, cl := range s.currentTracker().List() {
		if cl.Status.ProviderID != "" && !live[cl.Status.ProviderID] {
			problems = append(problems, "claim "+cl.Name+" has no instance")
		}
	}
	nodes, err := s.h.w.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	alive := map[string]bool{} // Node name → it has a live instance (or is the foreign one)
	for _, n := range nodes.Items {
		alive[n.Name] = live[n.Spec.ProviderID] || s.foreignNodes[n.Name]
		if !alive[n.Name] {
			problems = append(problems, "node "+n.Name+" has no instance")
		}
	}
	for _, p := range s.h.pods("test") {
		if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
			problems = append(problems, "pod "+p.Name+" not running")
		} else if !alive[p.Spec.NodeName] {
			problems = append(problems, "pod "+p.Name+" runs on "+p.Spec.NodeName+", which has no instance")
		}
	}
	return strings.Join(problems, "; ")
}

func (s *soak) report(dur time.Duration) {
	world := s.describeWorld() // before taking s.mu: it reads the current tracker under it
	s.mu.Lock()
	defer s.mu.Unlock()
	total := func(m map[string]int) int {
		n := 0
		for _, v := range m {
			n += v
		}
		return n
	}
	var b strings.Builder
	fmt.Fprintf(&b, "soak: seed %d, %v simulated (+%v to settle), %d controller runs\n", s.seed, dur,
		s.h.w.Elapsed()-dur, s.restarts)
	fmt.Fprintf(&b, "events injected: %d\n", total(s.injected))
	for _, k := range slices.Sorted(mapKeys(s.injected)) {
		fmt.Fprintf(&b, "  %-40s %d\n", k, s.injected[k])
	}
	fmt.Fprintf(&b, "invariants checked: %d\n", total(s.checks))
	for _, k := range slices.Sorted(mapKeys(s.checks)) {
		fmt.Fprintf(&b, "  %-60s %d\n", k, s.checks[k])
	}
	fmt.Fprintf(&b, "violations: %d", len(s.violations))
	s.t.Log(b.String())
	for _, v := range s.violations {
		s.t.Errorf("violation: %s", v)
	}
	if len(s.violations) > 0 {
		s.t.Logf("world at the end:\n%s", world)
		s.t.Logf("controller logs:\n%s", s.h.logs.String())
	}
}

// describeWorld renders what a violation needs to be understood: the Nodes with their taints
// and readiness, the claims with their phases, and the pods not running with the scheduler's
// reason.
func (s *soak) describeWorld() string {
	ctx := context.Background()
	var b strings.Builder
	if nodes, err := s.h.w.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range nodes.Items {
			var taints []string
			for _, t := range n.Spec.Taints {
				taints = append(taints, t.Key+":"+string(t.Effect))
			}
			ready := "NotReady"
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready = "Ready"
				}
			}
			fmt.Fprintf(&b, "node %s %s %s taints=%v unschedulable=%v deleting=%v annotations=%v\n", n.Name, n.Spec.ProviderID, ready,
				taints, n.Spec.Unschedulable, n.DeletionTimestamp != nil, n.Annotations)
		}
	}
	for _, cl := range s.currentTracker().List() {
		fmt.Fprintf(&b, "claim %s %s %s node=%s adopted=%v launch-failed=%v\n", cl.Name, cl.Phase, cl.Status.ProviderID,
			cl.Status.NodeName, cl.Adopted, !cl.LaunchFailed.IsZero())
	}
	for _, p := range s.h.pods("test") {
		if p.Status.Phase == corev1.PodRunning {
			continue
		}
		msg := ""
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				msg = c.Reason + ": " + c.Message
			}
		}
		fmt.Fprintf(&b, "pod %s node=%q phase=%s %s selector=%v\n", p.Name, p.Spec.NodeName, p.Status.Phase, msg, p.Spec.NodeSelector)
	}
	return b.String()
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
