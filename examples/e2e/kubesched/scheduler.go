package kubesched

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	schedulerapi "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/profile"

	"github.com/nodeplan/nodeplan"
)

// AnnotationPlannedNode names the node the plan puts a pod on; the PlannedNode filter plugin
// lets the pod onto no other node.
const AnnotationPlannedNode = "kubesched.nodeplan.dev/planned-node"

// plannedNodeFilter is the one plugin this harness adds to kube-scheduler's default profile: a
// Filter that rejects every node but the one named in the pod's AnnotationPlannedNode (pods
// without it are not restricted).
//
// Why not a required node-affinity term matchFields metadata.name (what the DaemonSet
// controller uses)? Because node affinity is not only a filter: PodTopologySpread with
// nodeAffinityPolicy Honor (the default) counts only the nodes the pod's node affinity admits,
// so a pod pinned that way sees one domain and every spread constraint passes. A separate
// filter narrows the nodes without changing what any default plugin computes.
type plannedNodeFilter struct{}

const plannedNodeFilterName = "NodeplanPlannedNode"

func (plannedNodeFilter) Name() string { return plannedNodeFilterName }

// PreFilter narrows the nodes to the planned one, so a FailedScheduling message counts the
// planned node's own reason apart from the others ("N node(s) didn't satisfy plugin(s)").
// PodTopologySpread and InterPodAffinity compute their counts over all nodes regardless.
func (plannedNodeFilter) PreFilter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	want, ok := pod.Annotations[AnnotationPlannedNode]
	if !ok {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	return &fwk.PreFilterResult{NodeNames: sets.New(want)}, nil
}

func (plannedNodeFilter) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func (plannedNodeFilter) Filter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, n fwk.NodeInfo) *fwk.Status {
	want, ok := pod.Annotations[AnnotationPlannedNode]
	if !ok || n.Node() == nil || n.Node().Name == want {
		return nil
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) were not the planned node")
}

// Cluster is a fake API server (client-go's fake clientset, with a reactor that carries out
// pods/binding) and a real kube-scheduler — k8s.io/kubernetes/pkg/scheduler with its default
// plugins and the PlannedNode filter — watching it through informers.
type Cluster struct {
	Client  *fake.Clientset
	tracker *broadcastTracker
	cancel  context.CancelFunc
	done    chan struct{}
	pods    informers.SharedInformerFactory

	mu        sync.Mutex
	failures  map[string]string // pod key → last FailedScheduling message
	binds     int
	lastBind  time.Time
	bindTimes []time.Time
}

// StartCluster starts the scheduler; Stop ends it.
func StartCluster(ctx context.Context) (*Cluster, error) {
	// Not fake.NewClientset: its field-managed tracker builds a REST mapper on every call, ten
	// times the scheduler's own CPU. And not the fake clientset's own watchers: they hold 100
	// events and panic when full, which a burst of binds and status updates reaches.
	client := fake.NewSimpleClientset()
	tracker := newBroadcastTracker()
	c := &Cluster{Client: client, tracker: tracker, failures: map[string]string{}, done: make(chan struct{})}
	client.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		return true, tracker.watch(a.GetResource(), a.GetNamespace()), nil
	})
	client.PrependReactor("*", "*", clienttesting.ObjectReaction(tracker))
	client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(clienttesting.CreateAction)
		if !ok || a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b, ok := ca.GetObject().(*corev1.Binding)
		if !ok {
			return true, nil, fmt.Errorf("kubesched: binding of unexpected type %T", ca.GetObject())
		}
		return true, b, c.bind(a.GetNamespace(), b)
	})
	ctx, c.cancel = context.WithCancel(ctx)
	ctx = klog.NewContext(ctx, klog.Background().V(-1))

	factory := scheduler.NewInformerFactory(client, 0, nil)
	profiles, err := defaultProfiles()
	if err != nil {
		return nil, err
	}
	sched, err := scheduler.New(ctx, client, factory, nil, profile.RecorderFactory(c.recorder),
		scheduler.WithProfiles(profiles...),
		scheduler.WithFrameworkOutOfTreeRegistry(frameworkruntime.Registry{
			plannedNodeFilterName: func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
				return plannedNodeFilter{}, nil
			},
		}),
		scheduler.WithPodInitialBackoffSeconds(1),
		scheduler.WithPodMaxBackoffSeconds(1),
	)
	if err != nil {
		c.cancel()
		return nil, fmt.Errorf("kubesched: new scheduler: %w", err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	// The informers list, then watch; an object created in between would be missed (the
	// tracker's watches do not resume from a resource version), so wait for the watches.
	for _, r := range []string{"pods", "nodes", "namespaces"} {
		if err := waitUntil(ctx, func() bool { return tracker.watched(corev1.SchemeGroupVersion.WithResource(r)) }); err != nil {
			c.cancel()
			return nil, err
		}
	}
	c.pods = factory
	go func() {
		defer close(c.done)
		sched.Run(ctx)
	}()
	return c, nil
}

// defaultProfiles is kube-scheduler's default configuration (what it runs with no config file)
// with the PlannedNode filter added.
func defaultProfiles() ([]schedulerapi.KubeSchedulerProfile, error) {
	var versioned configv1.KubeSchedulerConfiguration
	scheme.Scheme.Default(&versioned)
	var cfg schedulerapi.KubeSchedulerConfiguration
	if err := scheme.Scheme.Convert(&versioned, &cfg, nil); err != nil {
		return nil, fmt.Errorf("kubesched: default scheduler configuration: %w", err)
	}
	if len(cfg.Profiles) != 1 {
		return nil, fmt.Errorf("kubesched: default scheduler configuration has %d profiles, want 1", len(cfg.Profiles))
	}
	p := cfg.Profiles[0]
	p.Plugins.PreFilter.Enabled = append(p.Plugins.PreFilter.Enabled, schedulerapi.Plugin{Name: plannedNodeFilterName})
	p.Plugins.Filter.Enabled = append(p.Plugins.Filter.Enabled, schedulerapi.Plugin{Name: plannedNodeFilterName})
	return []schedulerapi.KubeSchedulerProfile{p}, nil
}

// Stop stops the scheduler and waits for it.
func (c *Cluster) Stop() {
	c.cancel()
	<-c.done
	c.pods.Shutdown()
}

func (c *Cluster) bind(ns string, b *corev1.Binding) error {
	obj, err := c.tracker.Get(corev1.SchemeGroupVersion.WithResource("pods"), ns, b.Name)
	if err != nil {
		return err
	}
	pod := obj.(*corev1.Pod).DeepCopy()
	if pod.Spec.NodeName != "" {
		return fmt.Errorf("kubesched: pod %s/%s is already bound to %s", ns, b.Name, pod.Spec.NodeName)
	}
	pod.Spec.NodeName = b.Target.Name
	pod.Status.Conditions = slices.DeleteFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodScheduled })
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
	if err := c.tracker.Update(corev1.SchemeGroupVersion.WithResource("pods"), pod, ns); err != nil {
		return err
	}
	c.mu.Lock()
	c.binds++
	c.mu.Unlock()
	return nil
}

// recorder collects FailedScheduling events; the rest are dropped.
func (c *Cluster) recorder(string) events.EventRecorderLogger { return failureRecorder{c} }

type failureRecorder struct{ c *Cluster }

func (r failureRecorder) Eventf(regarding runtime.Object, _ runtime.Object, _, reason, _, note string, args ...any) {
	if reason != "FailedScheduling" {
		return
	}
	pod, ok := regarding.(*corev1.Pod)
	if !ok {
		return
	}
	r.c.mu.Lock()
	r.c.failures[pod.Namespace+"/"+pod.Name] = fmt.Sprintf(note, args...)
	r.c.mu.Unlock()
}

func (r failureRecorder) WithLogger(klog.Logger) events.EventRecorderLogger { return r }

// AddNodes creates nodes and waits until the scheduler's informer has them: a pod created
// before its node reached the scheduler is refused ("no nodes available to schedule pods")
// and retried only after a backoff, which on a loaded machine can outlast Wait's quiet period
// and read as a refusal of the plan.
func (c *Cluster) AddNodes(ctx context.Context, nodes ...*corev1.Node) error {
	for _, n := range nodes {
		if _, err := c.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("kubesched: create node %s: %w", n.Name, err)
		}
	}
	lister := c.pods.Core().V1().Nodes().Lister()
	for _, n := range nodes {
		if err := waitUntil(ctx, func() bool { _, err := lister.Get(n.Name); return err == nil }); err != nil {
			return err
		}
	}
	return nil
}

// AddNamespaces creates namespaces and waits until the scheduler's informer has them: the
// InterPodAffinity plugin resolves namespaceSelectors against them, and a pod whose term names
// its namespace only by label otherwise matches nothing, not even itself.
func (c *Cluster) AddNamespaces(ctx context.Context, nss ...*corev1.Namespace) error {
	for _, ns := range nss {
		ns = ns.DeepCopy()
		ns.ResourceVersion = ""
		if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("kubesched: create namespace %s: %w", ns.Name, err)
		}
	}
	lister := c.pods.Core().V1().Namespaces().Lister()
	for _, ns := range nss {
		if err := waitUntil(ctx, func() bool { _, err := lister.Get(ns.Name); return err == nil }); err != nil {
			return err
		}
	}
	return nil
}

// waitUntil polls cond every millisecond until it holds or ctx ends: the informers see what
// the fake clientset stores a moment later.
func waitUntil(ctx context.Context, cond func() bool) error {
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// AddPods creates pods. Every few pods it waits until the informers have seen the last one:
// the fake clientset's watch channels hold 100 events and panic when full.
func (c *Cluster) AddPods(ctx context.Context, pods ...*corev1.Pod) error {
	lister := c.pods.Core().V1().Pods().Lister()
	for i, p := range pods {
		if _, err := c.Client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("kubesched: create pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		if i%20 != 19 && i != len(pods)-1 {
			continue
		}
		if err := waitUntil(ctx, func() bool { _, err := lister.Pods(p.Namespace).Get(p.Name); return err == nil }); err != nil {
			return err
		}
	}
	return nil
}

// Outcome is what the scheduler did with a set of pods.
type Outcome struct {
	// Bound maps pod key → node.
	Bound map[string]string
	// Unbound maps each pod left pending → the scheduler's last FailedScheduling message.
	Unbound map[string]string
}

// Wait waits until every pod of pods is bound, or until no pod has been bound for quiet (the
// scheduler has retried every pending pod by then: backoff is one second), and reports. A pod
// counts by UID, so an earlier pod of the same name (evicted and recreated) is not mistaken for it.
func (c *Cluster) Wait(ctx context.Context, pods []*corev1.Pod, quiet time.Duration) (Outcome, error) {
	lister := c.pods.Core().V1().Pods().Lister()
	lastBinds, lastChange := -1, time.Now()
	for {
		out := Outcome{Bound: map[string]string{}, Unbound: map[string]string{}}
		for _, want := range pods {
			k := nodeplan.PodKey(want)
			p, err := lister.Pods(want.Namespace).Get(want.Name)
			if err == nil && p.UID == want.UID && p.Spec.NodeName != "" {
				out.Bound[k] = p.Spec.NodeName
				continue
			}
			c.mu.Lock()
			out.Unbound[k] = c.failures[k]
			c.mu.Unlock()
		}
		if len(out.Unbound) == 0 {
			return out, nil
		}
		c.mu.Lock()
		binds := c.binds
		c.mu.Unlock()
		if binds != lastBinds {
			lastBinds, lastChange = binds, time.Now()
		}
		if time.Since(lastChange) > quiet {
			for k, msg := range out.Unbound {
				if msg == "" {
					out.Unbound[k] = "(no FailedScheduling event yet)"
				}
			}
			return out, nil
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// forget drops the FailedScheduling messages recorded for pods' names.
func (c *Cluster) forget(pods []*corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range pods {
		delete(c.failures, nodeplan.PodKey(p))
	}
}

// Evict deletes pods (as a drain would, after the evictions).
func (c *Cluster) Evict(ctx context.Context, keys ...string) error {
	var errs []error
	for _, k := range keys {
		ns, name, _ := cutKey(k)
		if err := c.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("kubesched: delete pod %s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

var _ kubernetes.Interface = (*fake.Clientset)(nil)

func cutKey(k string) (ns, name string, ok bool) { return strings.Cut(k, "/") }
