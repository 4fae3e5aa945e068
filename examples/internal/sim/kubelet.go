package sim

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
)

// Kubelet plays the kubelets of the simulated cloud: BootTime after an instance is launched it
// registers a Node with the instance's provider ID, labels, capacity and allocatable, carrying
// the instance's taints and startup taints and karpenter.sh/unregistered; ReadyTime later it
// reports the Node Ready and removes the startup taints, as a CNI or device plugin would.
// Each instance registers once: a Node deleted while its instance runs stays deleted. Against a
// real API server it also plays the node lifecycle controller, lifting the not-ready taint.
//
// It learns of instances only through Provider.List, so it works with any provider.
type Kubelet struct {
	Client   kubernetes.Interface
	Provider cloudprovider.Provider
	// BootTime is launch → Node registered; zero means 20s.
	BootTime time.Duration
	// ReadyTime is registered → Ready; zero means 5s.
	ReadyTime time.Duration
	Logger    *slog.Logger

	mu         sync.Mutex
	registered map[string]string // provider ID → node name
	seq        int
}

func (k *Kubelet) log() *slog.Logger {
	if k.Logger != nil {
		return k.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// SetBootTime changes BootTime while Step may be running (a test holding nodes back).
func (k *Kubelet) SetBootTime(d time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.BootTime = d
}

// NodeName returns the Node an instance registered as, or "".
func (k *Kubelet) NodeName(providerID string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.registered[providerID]
}

// Step registers and readies the Nodes that are due at now.
func (k *Kubelet) Step(ctx context.Context, now time.Time) error {
	insts, err := k.Provider.List(ctx)
	if err != nil {
		return fmt.Errorf("sim: kubelet: list instances: %w", err)
	}
	nodes, err := readNodes(ctx, k.Client)
	if err != nil {
		return fmt.Errorf("sim: kubelet: list nodes: %w", err)
	}
	byID := map[string]*corev1.Node{}
	for _, n := range nodes {
		byID[n.Spec.ProviderID] = n
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.registered == nil {
		k.registered = map[string]string{}
	}
	for _, inst := range insts {
		id := inst.Status.ProviderID
		n := byID[id]
		if n == nil {
			if _, done := k.registered[id]; done || now.Sub(inst.Status.LaunchTime) < orDefault(k.BootTime, 20*time.Second) {
				continue
			}
			node := k.newNode(inst, now)
			created, err := k.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("sim: kubelet: register %s: %w", node.Name, err)
			}
			if err == nil {
				// A real API server drops the status of a created object; post it, as a
				// kubelet does.
				created.Status = node.Status
				if _, err := k.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
					return fmt.Errorf("sim: kubelet: post status of %s: %w", node.Name, err)
				}
			}
			k.registered[id] = node.Name
			k.log().Debug("kubelet registered node", "node", node.Name, "provider-id", id)
			continue
		}
		if now.Sub(n.CreationTimestamp.Time) < orDefault(k.ReadyTime, 5*time.Second) {
			continue
		}
		if isReady(n) && !hasAnyTaint(n, inst.StartupTaints) && !hasAnyTaint(n, lifecycleTaints) {
			continue
		}
		n = n.DeepCopy()
		if !isReady(n) {
			setReady(n, now)
			updated, err := k.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				continue // next step
			}
			if err != nil {
				return fmt.Errorf("sim: kubelet: ready %s: %w", n.Name, err)
			}
			n = updated
		}
		if hasAnyTaint(n, inst.StartupTaints) || hasAnyTaint(n, lifecycleTaints) {
			n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool {
				return slices.ContainsFunc(inst.StartupTaints, func(s corev1.Taint) bool { return s.MatchTaint(&t) }) ||
					slices.ContainsFunc(lifecycleTaints, func(s corev1.Taint) bool { return s.MatchTaint(&t) })
			})
			if _, err := k.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil &&
				!apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("sim: kubelet: remove startup taints of %s: %w", n.Name, err)
			}
		}
	}
	return nil
}

func (k *Kubelet) newNode(inst *nodeplan.NodeClaim, now time.Time) *corev1.Node {
	k.seq++
	name := fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", 10+k.seq/200, 10+k.seq%200)
	l := maps.Clone(inst.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l[nodeplan.LabelHostname] = name
	if _, ok := l[nodeplan.LabelOS]; !ok {
		l[nodeplan.LabelOS] = "linux"
	}
	taints := slices.Clone(inst.Taints)
	taints = append(taints, inst.StartupTaints...)
	taints = append(taints, corev1.Taint{Key: nodeplan.TaintUnregistered, Effect: corev1.TaintEffectNoExecute})
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l, CreationTimestamp: metav1.NewTime(now)},
		Spec:       corev1.NodeSpec{ProviderID: inst.Status.ProviderID, Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    inst.Status.Capacity.DeepCopy(),
			Allocatable: inst.Status.Allocatable.DeepCopy(),
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse,
				Reason: "KubeletNotReady", LastTransitionTime: metav1.NewTime(now)}},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OSImage: "Amazon Linux 2023 (simulated)"},
		},
	}
}

// lifecycleTaints are put on new nodes by a real API server (TaintNodesByCondition) and lifted
// by the node lifecycle controller once the node is Ready; with no controller-manager around,
// the simulated kubelet lifts them.
var lifecycleTaints = []corev1.Taint{
	{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
}

func isReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func setReady(n *corev1.Node, now time.Time) {
	cond := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastTransitionTime: metav1.NewTime(now), LastHeartbeatTime: metav1.NewTime(now)}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i] = cond
			return
		}
	}
	n.Status.Conditions = append(n.Status.Conditions, cond)
}

func hasAnyTaint(n *corev1.Node, ts []corev1.Taint) bool {
	for _, t := range n.Spec.Taints {
		if slices.ContainsFunc(ts, func(s corev1.Taint) bool { return s.MatchTaint(&t) }) {
			return true
		}
	}
	return false
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
