package kwok

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
)

// Run plays the kubelets of the provider's Nodes until ctx ends, then returns nil; it returns
// an error only when its watches cannot start. Every Interval it
//
//   - reports a Node Ready once ReadyAfter has passed since its launch (or Ready=False or
//     Unknown while a person has annotated it nodeplan.io/kwok-ready so), and then lifts the
//     claim's startup taints and the node lifecycle taints (not-ready, unreachable), as a CNI
//     and the node lifecycle controller would;
//   - renews each Node's Lease in kube-node-lease every LeaseInterval, so that a cluster's node
//     lifecycle controller (kind's, k3d's) does not find the Node unreachable;
//   - "runs" the pods bound to a Ready Node: their status becomes Running and Ready, with
//     every container started;
//   - finishes the deletion of pods on its Nodes (a kubelet confirms a pod's termination by
//     deleting it with no grace), so evictions and drains complete;
//   - queues an interruption for a Node annotated nodeplan.io/kwok-interrupt (once per value).
//
// Run it once per Provider, beside the controller: no controller calls it, because a cloud's
// kubelets are not the controller's business.
func (p *Provider) Run(ctx context.Context) error {
	if p.Client == nil {
		return errors.New("kwok: Provider.Client is nil")
	}
	nodeFactory := informers.NewSharedInformerFactoryWithOptions(p.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = LabelOwner + "=" + p.owner() }))
	podFactory := informers.NewSharedInformerFactoryWithOptions(p.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName!=" }))
	nodes := nodeFactory.Core().V1().Nodes().Informer()
	pods := podFactory.Core().V1().Pods().Informer()
	nodeFactory.Start(ctx.Done())
	podFactory.Start(ctx.Done())
	defer nodeFactory.Shutdown()
	defer podFactory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), nodes.HasSynced, pods.HasSynced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("kwok: the Node and pod watches did not sync")
	}
	t := time.NewTicker(cmp.Or(p.Interval, time.Second))
	defer t.Stop()
	for {
		var ns []*corev1.Node
		for _, o := range nodes.GetStore().List() {
			ns = append(ns, o.(*corev1.Node))
		}
		var ps []*corev1.Pod
		for _, o := range pods.GetStore().List() {
			ps = append(ps, o.(*corev1.Pod))
		}
		if err := p.step(ctx, ns, ps, p.now()); err != nil && ctx.Err() == nil {
			p.log().Warn("kwok: kubelet", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// step does one pass of the kubelets over nodes and pods as the caches have them; it returns
// the errors it met (each object's own, joined), having tried every object.
func (p *Provider) step(ctx context.Context, nodes []*corev1.Node, pods []*corev1.Pod, now time.Time) error {
	var errs []error
	ready := map[string]bool{} // live Nodes of this provider, by name: Ready?
	ips := map[string]string{} // their InternalIPs
	gone := map[string]bool{}  // terminated Nodes of this provider
	for _, n := range nodes {
		if n.Labels[LabelOwner] != p.owner() || !strings.HasPrefix(n.Spec.ProviderID, ProviderIDPrefix) {
			continue
		}
		if n.Annotations[AnnotationTerminated] != "" {
			gone[n.Name] = true
			continue
		}
		ok, err := p.stepNode(ctx, n, now)
		ready[n.Name] = ok
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ips[n.Name] = a.Address
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, pod := range pods {
		isReady, live := ready[pod.Spec.NodeName]
		switch {
		case !live && !gone[pod.Spec.NodeName]:
			continue // another kubelet's pod
		case pod.DeletionTimestamp != nil || gone[pod.Spec.NodeName]:
			// The containers stop at once; the kubelet confirms. A terminated node's pods go
			// with it (a cluster's pod garbage collector would delete them too).
			zero := int64(0)
			err := p.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero,
				Preconditions: &metav1.Preconditions{UID: &pod.UID}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				errs = append(errs, fmt.Errorf("deleting pod %s/%s on %s: %w", pod.Namespace, pod.Name, pod.Spec.NodeName, err))
			}
		case isReady && (pod.Status.Phase == "" || pod.Status.Phase == corev1.PodPending):
			if err := p.startPod(ctx, pod, ips[pod.Spec.NodeName], now); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// stepNode keeps one live Node's Ready condition, taints, Lease and interruption annotation;
// it reports whether the Node is Ready.
func (p *Provider) stepNode(ctx context.Context, n *corev1.Node, now time.Time) (bool, error) {
	launched := p.toClaim(n).Status.LaunchTime
	want := corev1.ConditionFalse
	if now.Sub(launched) >= cmp.Or(p.ReadyAfter, 5*time.Second) {
		want = corev1.ConditionTrue
	}
	if v := corev1.ConditionStatus(n.Annotations[AnnotationReady]); v == corev1.ConditionFalse || v == corev1.ConditionUnknown {
		want = v
	}
	if kind := cloudprovider.InterruptionKind(n.Annotations[AnnotationInterrupt]); kind != "" {
		p.mu.Lock()
		p.initLocked()
		key := n.Spec.ProviderID + "/" + string(kind)
		if !p.interrupted[key] {
			p.interrupted[key] = true
			p.queueLocked(n.Spec.ProviderID, n.Labels[nodeplan.LabelInstanceType], n.Labels[nodeplan.LabelZone],
				nodeplan.CapacityType(n.Labels[nodeplan.LabelCapacityType]), kind, now.Add(2*time.Minute))
		}
		p.mu.Unlock()
	}
	if readyStatus(n) != want {
		n = n.DeepCopy()
		setReady(n, want, now)
		updated, err := p.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return false, nil // the next pass
		}
		if err != nil {
			return false, fmt.Errorf("posting the Ready condition of Node %s: %w", n.Name, err)
		}
		n = updated
	}
	var errs []error
	if err := p.renewLease(ctx, n, now); err != nil {
		errs = append(errs, err)
	}
	if want != corev1.ConditionTrue {
		return false, errors.Join(errs...)
	}
	startup := strings.Split(n.Annotations[AnnotationStartupTaints], ",")
	lift := func(t corev1.Taint) bool {
		return t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable ||
			slices.Contains(startup, t.Key+":"+string(t.Effect))
	}
	if slices.ContainsFunc(n.Spec.Taints, lift) {
		n = n.DeepCopy()
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, lift)
		if _, err := p.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil &&
			!apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("lifting the startup taints of Node %s: %w", n.Name, err))
		}
	}
	return true, errors.Join(errs...)
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

func setReady(n *corev1.Node, status corev1.ConditionStatus, now time.Time) {
	cond := corev1.NodeCondition{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: metav1.NewTime(now),
		LastTransitionTime: metav1.NewTime(now)}
	switch status {
	case corev1.ConditionTrue:
		cond.Reason, cond.Message = "KubeletReady", "kwok: kubelet is posting ready status"
	case corev1.ConditionUnknown:
		cond.Reason, cond.Message = "NodeStatusUnknown", "kwok: kubelet stopped posting node status (nodeplan.io/kwok-ready=Unknown)"
	default:
		cond.Reason, cond.Message = "KubeletNotReady", "kwok: kubelet is not ready"
		if n.Annotations[AnnotationReady] != "" {
			cond.Message += " (nodeplan.io/kwok-ready=False)"
		}
	}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i] = cond
			return
		}
	}
	n.Status.Conditions = append(n.Status.Conditions, cond)
}

// leaseNamespace is where kubelets keep their heartbeat Leases.
const leaseNamespace = corev1.NamespaceNodeLease

// renewLease renews the Node's heartbeat Lease when LeaseInterval has passed since the last
// renewal. A cluster without the kube-node-lease namespace gets none.
func (p *Provider) renewLease(ctx context.Context, n *corev1.Node, now time.Time) error {
	p.mu.Lock()
	p.initLocked()
	last, ok := p.leases[n.Name]
	p.mu.Unlock()
	if ok && now.Sub(last) < cmp.Or(p.LeaseInterval, 10*time.Second) {
		return nil
	}
	leases := p.Client.CoordinationV1().Leases(leaseNamespace)
	renew := metav1.NewMicroTime(now)
	l, err := leases.Get(ctx, n.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		secs := int32(40)
		l = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Namespace: leaseNamespace, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &n.Name, LeaseDurationSeconds: &secs, RenewTime: &renew},
		}
		_, err = leases.Create(ctx, l, metav1.CreateOptions{})
	case err == nil:
		l.Spec.RenewTime = &renew
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return nil // the next pass
	}
	if err != nil {
		return fmt.Errorf("renewing the Lease %s/%s of Node %s: %w", leaseNamespace, n.Name, n.Name, err)
	}
	p.mu.Lock()
	p.leases[n.Name] = now
	p.mu.Unlock()
	return nil
}

// startPod reports a pod bound to a Ready Node as running: every container started and ready,
// init containers completed.
func (p *Provider) startPod(ctx context.Context, pod *corev1.Pod, hostIP string, now time.Time) error {
	pod = pod.DeepCopy()
	t := metav1.NewTime(now)
	s := &pod.Status
	s.Phase = corev1.PodRunning
	s.StartTime = &t
	if hostIP != "" {
		s.HostIP, s.HostIPs = hostIP, []corev1.HostIP{{IP: hostIP}}
	}
	for _, ct := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized,
		corev1.ContainersReady, corev1.PodReady, corev1.PodScheduled} {
		setPodCondition(s, ct, t)
	}
	s.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		s.InitContainerStatuses = append(s.InitContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
			Ready: true, ImageID: "kwok://" + c.Image, ContainerID: "kwok://" + string(pod.UID) + "/" + c.Name,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", StartedAt: t, FinishedAt: t}}})
	}
	s.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		s.ContainerStatuses = append(s.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
			Ready: true, Started: new(true), ImageID: "kwok://" + c.Image, ContainerID: "kwok://" + string(pod.UID) + "/" + c.Name,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}}})
	}
	_, err := p.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("posting the Running status of pod %s/%s on %s: %w", pod.Namespace, pod.Name, pod.Spec.NodeName, err)
	}
	return nil
}

func setPodCondition(s *corev1.PodStatus, ct corev1.PodConditionType, t metav1.Time) {
	for i := range s.Conditions {
		if s.Conditions[i].Type == ct {
			if s.Conditions[i].Status != corev1.ConditionTrue {
				s.Conditions[i] = corev1.PodCondition{Type: ct, Status: corev1.ConditionTrue, LastTransitionTime: t}
			}
			return
		}
	}
	s.Conditions = append(s.Conditions, corev1.PodCondition{Type: ct, Status: corev1.ConditionTrue, LastTransitionTime: t})
}
