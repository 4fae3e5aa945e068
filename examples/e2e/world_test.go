package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/record"
	"k8s.io/kubernetes/pkg/controller/disruption"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
	"github.com/nodeplan/nodeplan/scheduling"
)

// world is a cluster run on Karpenter's objects: the shared kube-apiserver and kube-scheduler,
// Kubernetes' own PodDisruptionBudget controller, the EC2 provider talking to an ec2test
// endpoint through the real AWS SDK, simulated kubelets registering Nodes for the instances it
// lists, and nodeplan's controllers started and stopped by the scenarios with the cluster's
// NodePools and EC2NodeClasses as their source (as the controller binary runs by default).
type world struct {
	// t is the test or subtest running; root is the test the world belongs to, which
	// outlives the goroutines the world starts.
	t, root      *testing.T
	client       kubernetes.Interface
	dyn          dynamic.Interface
	ec2          *ec2test.Server
	provider     *ec2.Provider
	kubelet      *sim.Kubelet
	hold         *heldInstances
	deps         *sim.Deployments
	recorder     record.EventRecorder
	logs         *logs
	installation string
	// ns is the namespace of the world's workloads, its own: the API server is shared.
	ns string
	// foreign names the NodeClaims the test made as another autoscaler would have.
	foreign map[string]bool
	classes atomic.Pointer[map[string]*ec2.NodeClass]
}

// The EC2 cluster of the worlds, and the tag value the inflate lab's EC2NodeClass selects its
// subnets and security groups by (sim/nodepools.yaml: karpenter.sh/discovery: sim).
const (
	worldCluster   = "e2e"
	labDiscovery   = "sim"
	labPoolName    = "default"
	labClassName   = "default"
	labDeployment  = "inflate"
	labPDBMinReady = 4
)

// newWorld builds a world for one test; everything it starts stops when the test ends.
func newWorld(t *testing.T, installation, namespace string) *world {
	t.Helper()
	cp := startControlPlane(t)
	w := &world{t: t, root: t, client: cp.Client, logs: &logs{}, installation: installation, ns: namespace, foreign: map[string]bool{}}
	w.dyn = installCRDs(t, cp.Config)

	// EC2: the endpoint with subnets and a security group tagged as the lab's class selects
	// them, and a handful of instance families so each solve stays small.
	w.ec2 = ec2test.NewServer(ec2test.WithClock(time.Now)) // launch times the kubelets boot by
	t.Cleanup(w.ec2.Close)
	disc := map[string]string{ec2test.DiscoveryTag: labDiscovery}
	for _, z := range []string{"us-east-1a", "us-east-1b", "us-east-1c"} {
		w.ec2.AddSubnet(ec2test.Subnet{ID: "subnet-lab-" + z[len(z)-1:], Zone: z, FreeIPs: 1000, Tags: disc})
	}
	w.ec2.AddSecurityGroup(ec2test.SecurityGroup{ID: "sg-lab", Name: "lab-nodes", Tags: disc})
	if err := w.ec2.SetInstanceFamilies("c6i", "m6i", "r6i", "c5", "m5"); err != nil {
		t.Fatal(err)
	}
	awsCfg := w.ec2.Config("us-east-1")
	prices, err := ec2test.StaticPrices("us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	w.provider, err = ec2.New(ec2.Options{
		Installation: installation,
		Cluster: ec2.Cluster{Name: worldCluster, Endpoint: cp.Config.Host, KubernetesVersion: "1.33",
			CABundle:    []byte("-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n"),
			ServiceCIDR: "10.96.0.0/16", ClusterDNS: "10.96.0.10"},
		Region: "us-east-1",
		EC2:    awsec2.NewFromConfig(awsCfg), SSM: ssm.NewFromConfig(awsCfg),
		Prices: prices,
		NodeClass: func(name string) (*ec2.NodeClass, bool) {
			m := w.classes.Load()
			if m == nil {
				return nil, false
			}
			c, ok := (*m)[name]
			return c, ok
		},
		Logger: slog.New(slog.NewTextHandler(w.logs, nil)).With("component", "ec2"),
	})
	if err != nil {
		t.Fatal(err)
	}

	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: w.client.CoreV1().Events("")})
	t.Cleanup(broadcaster.Shutdown)
	w.recorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "nodeplan"})

	w.hold = &heldInstances{Provider: w.provider}
	w.kubelet = &sim.Kubelet{Client: w.client, Provider: w.hold, BootTime: 2 * time.Second, ReadyTime: time.Second}
	w.deps = &sim.Deployments{Client: w.client}
	pods := &sim.Scheduler{Client: w.client, NoBind: true} // kube-scheduler binds; this starts pods
	w.background(func(ctx context.Context) {
		for ctx.Err() == nil {
			now := time.Now()
			for _, step := range []func(context.Context, time.Time) error{w.deps.Step, w.kubelet.Step, pods.Step} {
				if err := step(ctx, now); err != nil && ctx.Err() == nil {
					t.Logf("simulated cluster: %v", err)
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	w.startDisruptionController(cp.Config)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller logs (tail):\n%s", tail(w.logs.String(), 120))
		}
	})
	return w
}

// startDisruptionController runs kube-controller-manager's PodDisruptionBudget controller, which
// keeps each PDB's status (disruptionsAllowed) current: without it the Eviction API refuses
// every eviction of a pod a PDB covers.
func (w *world) startDisruptionController(restCfg *rest.Config) {
	t := w.t
	disc := memory.NewMemCacheClient(w.client.Discovery())
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(disc)
	scales, err := scale.NewForConfig(restCfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(disc))
	if err != nil {
		t.Fatal(err)
	}
	f := informers.NewSharedInformerFactory(w.client, 0)
	w.background(func(ctx context.Context) {
		dc := disruption.NewDisruptionController(ctx, f.Core().V1().Pods(), f.Policy().V1().PodDisruptionBudgets(),
			f.Core().V1().ReplicationControllers(), f.Apps().V1().ReplicaSets(), f.Apps().V1().Deployments(),
			f.Apps().V1().StatefulSets(), w.client, mapper, scales, w.client.Discovery())
		f.Start(ctx.Done())
		dc.Run(ctx, 1)
		f.Shutdown()
	})
}

// run runs a subtest with the world's failures reported on it.
func (w *world) run(name string, f func(t *testing.T)) bool {
	return w.t.Run(name, func(t *testing.T) {
		parent := w.t
		w.t = t
		defer func() { w.t = parent }()
		f(t)
	})
}

// background runs f until the returned stop is called or the test ends.
func (w *world) background(f func(context.Context)) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	w.root.Cleanup(stop)
	return stop
}

// controller runs nodeplan's controller on the cluster's NodePools and EC2NodeClasses until the
// returned stop is called (or the test ends). adopt is the --adopt flag.
func (w *world) controller(name string, adopt bool) func() {
	return w.controllerWith(name, func(c *controller.Controller) { c.Adopt = adopt })
}

// controllerWith is controller with the configuration changed by configure.
func (w *world) controllerWith(name string, configure func(*controller.Controller)) func() {
	log := slog.New(slog.NewTextHandler(w.logs, nil)).With("replica", name)
	pools := &controller.ClusterNodePools{Dynamic: w.dyn, Logger: log, Recorder: w.recorder,
		OnClasses: func(m map[string]*ec2.NodeClass) { w.classes.Store(&m) }}
	c := &controller.Controller{
		Client: w.client, Dynamic: w.dyn, Provider: w.provider, NodePools: pools, Solve: scheduling.Solve,
		Installation: w.installation, Logger: log, Recorder: w.recorder,
		DisruptionInterval: 2 * time.Second, InterruptionInterval: time.Second, ReconcileInterval: 5 * time.Second,
		EvictionRetry: time.Second, Timeouts: controller.Timeouts{Collect: 10 * time.Second},
	}
	if configure != nil {
		configure(c)
	}
	t := w.t
	return w.background(func(ctx context.Context) {
		if err := c.Run(ctx); err != nil {
			t.Errorf("controller %s: Run() = %v", name, err)
		}
	})
}

// applyLab creates the inflate lab's NodePool and EC2NodeClass from their YAML, unchanged.
func (w *world) applyLab() {
	w.t.Helper()
	if err := sim.Apply(context.Background(), w.dyn, sim.NodePoolsYAML()); err != nil {
		w.t.Fatal(err)
	}
}

// labDeployment is the lab's inflate Deployment (cpu 1, nodeSelector eks-team=my-team,
// grace 0) at 0 replicas, under another name and team when asked.
func (w *world) labDeployment(name, team string) *appsv1.Deployment {
	d := inflate()
	d.Name, d.Namespace = name, w.ns
	d.Spec.Selector.MatchLabels = map[string]string{"app": name}
	d.Spec.Template.Labels = map[string]string{"app": name}
	d.Spec.Template.Spec.NodeSelector = map[string]string{"eks-team": team}
	return d
}

func (w *world) scale(name string, n int) {
	w.t.Helper()
	if err := w.deps.Scale(context.Background(), w.ns, name, n); err != nil {
		w.t.Fatal(err)
	}
}

// pods returns the live pods of a deployment (not being deleted, not finished).
func (w *world) pods(app string) []corev1.Pod {
	w.t.Helper()
	list, err := w.client.CoreV1().Pods(w.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		w.t.Fatal(err)
	}
	return slices.DeleteFunc(list.Items, func(p corev1.Pod) bool {
		return p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
}

// running counts the deployment's pods that kube-scheduler bound and that run.
func (w *world) running(app string) int {
	n := 0
	for _, p := range w.pods(app) {
		if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
			n++
		}
	}
	return n
}

func (w *world) waitRunning(app string, n int, within time.Duration) {
	w.t.Helper()
	w.waitFor(within, fmt.Sprintf("%d %s pods bound and running", n, app), func() bool { return w.running(app) == n })
}

// waitFor polls cond until it holds; on timeout it fails the test with a picture of the world.
func (w *world) waitFor(within time.Duration, what string, cond func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			w.t.Fatalf("%s: not within %v\n%s", what, within, w.dump())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// nodeClaim is the part of a NodeClaim object the scenarios read.
type nodeClaim struct {
	Name, UID   string
	Deleting    bool
	Labels      map[string]string
	Annotations map[string]string
	Finalizers  []string
	ProviderID  string
	NodeName    string
	ImageID     string
	Capacity    corev1.ResourceList
	Conditions  []metav1.Condition
}

func toNodeClaim(t testing.TB, u *unstructured.Unstructured) nodeClaim {
	t.Helper()
	var o struct {
		Status struct {
			ProviderID string              `json:"providerID"`
			NodeName   string              `json:"nodeName"`
			ImageID    string              `json:"imageID"`
			Capacity   corev1.ResourceList `json:"capacity"`
			Conditions []metav1.Condition  `json:"conditions"`
		} `json:"status"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &o); err != nil {
		t.Fatalf("NodeClaim %s: %v", u.GetName(), err)
	}
	return nodeClaim{Name: u.GetName(), UID: string(u.GetUID()), Deleting: u.GetDeletionTimestamp() != nil,
		Labels: u.GetLabels(), Annotations: u.GetAnnotations(), Finalizers: u.GetFinalizers(),
		ProviderID: o.Status.ProviderID, NodeName: o.Status.NodeName, ImageID: o.Status.ImageID,
		Capacity: o.Status.Capacity, Conditions: o.Status.Conditions}
}

func (c nodeClaim) is(cond string) bool { return meta.IsStatusConditionTrue(c.Conditions, cond) }

// nodeClaims lists this world's NodeClaims.
func (w *world) nodeClaims() []nodeClaim {
	w.t.Helper()
	list, err := w.dyn.Resource(controller.NodeClaimGVR).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	var out []nodeClaim
	for i := range list.Items {
		c := toNodeClaim(w.t, &list.Items[i])
		// The API server is shared: only this world's claims (its installation's, and those it
		// made as another autoscaler would) are its business.
		if c.Annotations[controller.AnnotationInstallation] == w.installation || w.foreign[c.Name] {
			out = append(out, c)
		}
	}
	return out
}

func (w *world) nodeClaimsOf(pool string) []nodeClaim {
	return slices.DeleteFunc(w.nodeClaims(), func(c nodeClaim) bool { return c.Labels[nodeplan.LabelNodePool] != pool })
}

// liveInstances are the endpoint's instances not shutting down or terminated, launched by
// anyone.
func (w *world) liveInstances() []ec2test.Instance {
	return slices.DeleteFunc(w.ec2.Instances(), func(i ec2test.Instance) bool {
		return i.State == "shutting-down" || i.State == "terminated"
	})
}

func (w *world) instance(providerID string) (ec2test.Instance, bool) {
	for _, i := range w.ec2.Instances() {
		if strings.HasSuffix(providerID, "/"+i.ID) {
			return i, true
		}
	}
	return ec2test.Instance{}, false
}

// createPDB protects app's pods: minAvailable pods must stay Ready.
func (w *world) createPDB(app string, minAvailable int) {
	w.t.Helper()
	ma := intstr.FromInt32(int32(minAvailable))
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: w.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &ma,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
	if _, err := w.client.PolicyV1().PodDisruptionBudgets(w.ns).Create(context.Background(), pdb, metav1.CreateOptions{}); err != nil {
		w.t.Fatal(err)
	}
}

// cleanUp scales the deployments to zero, deletes every NodeClaim (so each drains and
// terminates through the controller still running) and waits until no Node, NodeClaim or live
// instance is left, so the next test starts from an empty cluster.
func (w *world) cleanUp(apps ...string) {
	w.t.Helper()
	ctx := context.Background()
	for _, a := range apps {
		if err := w.deps.Scale(ctx, w.ns, a, 0); err != nil {
			w.t.Logf("clean-up: %v", err)
		}
	}
	for _, c := range w.nodeClaims() {
		if err := w.dyn.Resource(controller.NodeClaimGVR).Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			w.t.Error(err)
		}
	}
	w.waitFor(90*time.Second, "every Node, NodeClaim and instance gone", func() bool {
		nodes, err := w.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		return err == nil && len(nodes.Items) == 0 && len(w.nodeClaims()) == 0 && len(w.liveInstances()) == 0
	})
}

// deleteLab removes the lab's Karpenter objects once the test is done. (The namespace stays: with
// no namespace controller it could only go Terminating.)
func (w *world) deleteLab(pools ...string) {
	ctx := context.Background()
	for _, p := range pools {
		_ = w.dyn.Resource(controller.NodePoolGVR).Delete(ctx, p, metav1.DeleteOptions{})
	}
	_ = w.dyn.Resource(controller.EC2NodeClassGVR).Delete(ctx, labClassName, metav1.DeleteOptions{})
}

// dump describes the pods, nodes, NodeClaims and instances, for failures.
func (w *world) dump() string {
	var b strings.Builder
	ctx := context.Background()
	pods, _ := w.client.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{})
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s node=%q phase=%s deleting=%v\n", p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil)
	}
	nodes, _ := w.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	for _, n := range nodes.Items {
		fmt.Fprintf(&b, "node %s providerID=%s deleting=%v taints=%v finalizers=%v\n", n.Name, n.Spec.ProviderID,
			n.DeletionTimestamp != nil, n.Spec.Taints, n.Finalizers)
	}
	claims, _ := w.dyn.Resource(controller.NodeClaimGVR).List(ctx, metav1.ListOptions{})
	for i := range claims.Items {
		c := toNodeClaim(w.t, &claims.Items[i])
		var conds []string
		for _, x := range c.Conditions {
			conds = append(conds, x.Type+"="+string(x.Status))
		}
		fmt.Fprintf(&b, "nodeclaim %s pool=%s providerID=%s node=%s deleting=%v %v\n", c.Name, c.Labels[nodeplan.LabelNodePool],
			c.ProviderID, c.NodeName, c.Deleting, conds)
	}
	for _, i := range w.ec2.Instances() {
		fmt.Fprintf(&b, "instance %s %s %s %s claim=%s\n", i.ID, i.Type, i.Zone, i.State, i.Tags["karpenter.sh/nodeclaim"])
	}
	return b.String()
}

// fromMap decodes unstructured data into v.
func fromMap(m map[string]any, v any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// heldInstances is the cloud as the simulated kubelets see it: while held, instances launched
// from then on are hidden, so their nodes do not boot — a claim stays launched and
// unregistered for as long as a scenario needs.
type heldInstances struct {
	cloudprovider.Provider
	mu    sync.Mutex
	since time.Time // zero: nothing held
}

func (h *heldInstances) Hold(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.since = time.Time{}
	if on {
		h.since = time.Now()
	}
}

func (h *heldInstances) List(ctx context.Context) ([]*nodeplan.NodeClaim, error) {
	insts, err := h.Provider.List(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil || h.since.IsZero() {
		return insts, err
	}
	return slices.DeleteFunc(insts, func(c *nodeplan.NodeClaim) bool { return !c.Status.LaunchTime.Before(h.since.Truncate(time.Second)) }), nil
}
