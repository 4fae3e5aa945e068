package sim

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeplan/nodeplan"
)

// Scheduler plays kube-scheduler (and the kubelet's pod start, and pod garbage collection) in
// a simulation: each Step binds pending pods to Ready nodes that fit them — first fit in node
// name order, checking node selector, required node affinity, taints and resources — marks the
// bound pods Running and Ready, marks the rest PodScheduled=False/Unschedulable as the real
// scheduler does, and deletes pods bound to nodes that no longer exist.
//
// With NoBind set it leaves binding to a real kube-scheduler and only plays the kubelets' part:
// bound pods are started, pods being deleted are finished, pods on vanished nodes collected.
type Scheduler struct {
	Client kubernetes.Interface
	NoBind bool
	Logger *slog.Logger
}

func (s *Scheduler) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Step schedules at now.
func (s *Scheduler) Step(ctx context.Context, now time.Time) error {
	nodeList, err := readNodes(ctx, s.Client)
	if err != nil {
		return fmt.Errorf("sim: scheduler: list nodes: %w", err)
	}
	podList, err := readPods(ctx, s.Client, "", nil)
	if err != nil {
		return fmt.Errorf("sim: scheduler: list pods: %w", err)
	}
	nodes := map[string]*corev1.Node{}
	var names []string
	for _, n := range nodeList {
		nodes[n.Name] = n
		names = append(names, n.Name)
	}
	slices.Sort(names)
	used := map[string]corev1.ResourceList{}
	var pending []*corev1.Pod
	for _, p := range podList {
		if nodeplan.PodTerminal(p) {
			continue
		}
		if p.Spec.NodeName == "" {
			if p.DeletionTimestamp == nil {
				pending = append(pending, p)
			}
			continue
		}
		if p.DeletionTimestamp != nil && nodes[p.Spec.NodeName] != nil {
			// The kubelet's part of a graceful deletion: the containers stopped, the pod goes.
			zero := int64(0)
			if err := s.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("sim: scheduler: finish deleting %s: %w", nodeplan.PodKey(p), err)
			}
			continue
		}
		if p.Status.Phase != corev1.PodRunning && nodes[p.Spec.NodeName] != nil {
			if err := s.start(ctx, p, now); err != nil {
				return err
			}
		}
		if nodes[p.Spec.NodeName] == nil {
			// The pod GC controller's job: a pod on a node that is gone is deleted.
			if err := s.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("sim: scheduler: gc pod %s: %w", nodeplan.PodKey(p), err)
			}
			continue
		}
		used[p.Spec.NodeName] = nodeplan.AddResources(used[p.Spec.NodeName], withPod(nodeplan.PodRequests(p)))
	}
	if s.NoBind {
		return nil
	}
	slices.SortFunc(pending, func(a, b *corev1.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(nodeplan.PodKey(a), nodeplan.PodKey(b))
	})
	for _, p := range pending {
		req := withPod(nodeplan.PodRequests(p))
		target, why := "", ""
		for _, name := range names {
			if reason := fits(p, nodes[name], req, used[name]); reason != "" {
				if why == "" {
					why = reason
				}
				continue
			}
			target = name
			break
		}
		if target == "" {
			if err := s.markUnschedulable(ctx, p, len(names), why, now); err != nil {
				return err
			}
			continue
		}
		if err := s.bind(ctx, p, target, now); err != nil {
			return err
		}
		used[target] = nodeplan.AddResources(used[target], req)
	}
	return nil
}

func withPod(rl corev1.ResourceList) corev1.ResourceList {
	return nodeplan.AddResources(rl, corev1.ResourceList{corev1.ResourcePods: *resourceOne()})
}

// fits returns "" when the pod can go on the node, else why not, in kube-scheduler's words.
func fits(p *corev1.Pod, n *corev1.Node, req, used corev1.ResourceList) string {
	if !isReady(n) {
		return "node(s) were not ready"
	}
	if n.Spec.Unschedulable {
		return "node(s) were unschedulable"
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !nodeplan.Tolerates(p.Spec.Tolerations, t) {
			return fmt.Sprintf("node(s) had untolerated taint {%s}", nodeplan.TaintString(t))
		}
	}
	for k, v := range p.Spec.NodeSelector {
		if n.Labels[k] != v {
			return "node(s) didn't match Pod's node affinity/selector"
		}
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		ok := false
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			rs, err := nodeplan.RequirementsFromNodeSelector(term.MatchExpressions)
			if err == nil && rs.Matches(n.Labels) {
				ok = true
				break
			}
		}
		if !ok {
			return "node(s) didn't match Pod's node affinity/selector"
		}
	}
	if r, ok := nodeplan.Fits(nodeplan.AddResources(used, req), n.Status.Allocatable); !ok {
		return fmt.Sprintf("Insufficient %s", r)
	}
	return ""
}

func (s *Scheduler) bind(ctx context.Context, p *corev1.Pod, node string, now time.Time) error {
	err := s.Client.CoreV1().Pods(p.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sim: scheduler: bind %s: %w", nodeplan.PodKey(p), err)
	}
	fresh, err := s.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		return nil // deleted meanwhile
	}
	if err := s.start(ctx, fresh, now); err != nil {
		return err
	}
	s.log().Debug("bound pod", "pod", nodeplan.PodKey(p), "node", node)
	return nil
}

// start marks a bound pod Running and Ready, as its kubelet would.
func (s *Scheduler) start(ctx context.Context, fresh *corev1.Pod, now time.Time) error {
	fresh = fresh.DeepCopy()
	fresh.Status.Phase = corev1.PodRunning
	start := metav1.NewTime(now)
	fresh.Status.StartTime = &start
	setPodCondition(fresh, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: start})
	setPodCondition(fresh, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: start})
	if _, err := s.Client.CoreV1().Pods(fresh.Namespace).UpdateStatus(ctx, fresh, metav1.UpdateOptions{}); err != nil &&
		!apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("sim: scheduler: start %s: %w", nodeplan.PodKey(fresh), err)
	}
	return nil
}

func (s *Scheduler) markUnschedulable(ctx context.Context, p *corev1.Pod, nodes int, why string, now time.Time) error {
	msg := fmt.Sprintf("0/%d nodes are available", nodes)
	if why != "" {
		msg += ": " + why
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable && c.Message == msg {
			return nil
		}
	}
	p = p.DeepCopy()
	p.Status.Phase = corev1.PodPending
	setPodCondition(p, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: msg, LastTransitionTime: metav1.NewTime(now)})
	if _, err := s.Client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("sim: scheduler: mark %s unschedulable: %w", nodeplan.PodKey(p), err)
	}
	return nil
}

func setPodCondition(p *corev1.Pod, c corev1.PodCondition) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == c.Type {
			p.Status.Conditions[i] = c
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, c)
}

func resourceOne() *resource.Quantity { q := resource.MustParse("1"); return &q }
