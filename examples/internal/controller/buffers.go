package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// CapacityBuffers (autoscaling.x-k8s.io/v1beta1, the SIG Autoscaling API that Karpenter v1.14
// implements behind its CapacityBuffer gate) keep spare room: a pod template times a count.
// Each provisioning pass adds a buffer's slots to the pending pods as virtual pods — never
// created, never bound — so the solver finds them room on existing nodes, on nodes on their
// way, or launches for them; the planner sees them as pending pods too, so the nodes whose
// free room they take are not consolidated. Real pods take that room first (the scheduler
// binds them to it at once); the next pass finds the slots without room and launches anew.

// CapacityBufferGVR addresses CapacityBuffers.
var CapacityBufferGVR = schema.GroupVersionResource{Group: "autoscaling.x-k8s.io", Version: "v1beta1", Resource: "capacitybuffers"}

// Buffer annotations on virtual pods, as Karpenter names them (they never reach the API server).
const (
	AnnotationBufferPod       = "karpenter.sh/capacity-buffer-fake-pod"
	AnnotationBufferName      = "karpenter.sh/capacity-buffer-name"
	AnnotationBufferNamespace = "karpenter.sh/capacity-buffer-namespace"
	// BufferStrategyActive is the only provisioning strategy served (the API's default).
	BufferStrategyActive = "buffer.x-k8s.io/active-capacity"
)

// bufferInterval is how often buffers are resolved, solved for and their status written.
const bufferInterval = 10 * time.Second

// capacityBuffer is the part of a CapacityBuffer the controller reads.
type capacityBuffer struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`
		PodTemplateRef       *struct {
			Name string `json:"name"`
		} `json:"podTemplateRef,omitempty"`
		ScalableRef *struct {
			APIGroup string `json:"apiGroup,omitempty"`
			Kind     string `json:"kind"`
			Name     string `json:"name"`
		} `json:"scalableRef,omitempty"`
		Replicas   *int32              `json:"replicas,omitempty"`
		Percentage *int32              `json:"percentage,omitempty"`
		Limits     corev1.ResourceList `json:"limits,omitempty"`
	} `json:"spec"`
	Status struct {
		Conditions []metav1.Condition `json:"conditions,omitempty"`
	} `json:"status,omitempty"`
}

// resolvedBuffer is a buffer with its template and slot count worked out.
type resolvedBuffer struct {
	key      string // namespace/name
	obj      *unstructured.Unstructured
	strategy string
	// ready is the ReadyForProvisioning condition.
	ready metav1.Condition
	// template is the slots' pod template (valid when ready is True).
	template    corev1.PodTemplateSpec
	templateRef string
	templateGen int64
	replicas    int32
	pods        []*corev1.Pod
}

// bufferReplicas is the slot count of a buffer, as Karpenter computes it: the larger of
// spec.replicas and spec.percentage of the scalable workload's replicas (rounded up, at least
// one); then, with limits, no more than fit in them (the fewest over the limited resources the
// slot requests; limits alone when neither count is set).
func bufferReplicas(replicas, percentage *int32, workload *int32, limits, slot corev1.ResourceList) int32 {
	n := int32(-1)
	if replicas != nil {
		n = *replicas
	}
	if percentage != nil && workload != nil {
		p := int32(math.Ceil(float64(*percentage) * float64(*workload) / 100))
		if *percentage > 0 {
			p = max(p, 1)
		}
		n = max(n, p)
	}
	if len(limits) > 0 {
		fit := int64(-1)
		for name, limit := range limits {
			req, ok := slot[name]
			if !ok || req.IsZero() {
				continue
			}
			k := limit.MilliValue() / req.MilliValue()
			if fit < 0 || k < fit {
				fit = k
			}
		}
		if fit >= 0 && (n < 0 || int64(n) > fit) {
			n = int32(min(fit, math.MaxInt32))
		}
	}
	return max(n, 0)
}

// virtualPod is slot i (from 1) of a buffer: the template's pod, unbound, marked unschedulable
// (so the solver takes it for a pod waiting), at the lowest priority, without the volumes a
// real pod would claim (a slot reserves room, not storage).
func virtualPod(b *capacityBuffer, t corev1.PodTemplateSpec, i int) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: *t.ObjectMeta.DeepCopy(), Spec: *t.Spec.DeepCopy()}
	p.Name = fmt.Sprintf("capacity-buffer-%s-%d", b.Name, i)
	p.Namespace = b.Namespace
	p.UID = types.UID(fmt.Sprintf("%s-%d", b.UID, i))
	p.GenerateName, p.ResourceVersion, p.OwnerReferences = "", "", nil
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[AnnotationBufferPod] = "true"
	p.Annotations[AnnotationBufferName] = b.Name
	p.Annotations[AnnotationBufferNamespace] = b.Namespace
	p.Spec.NodeName = ""
	prio := int32(math.MinInt32)
	p.Spec.Priority = &prio
	p.Spec.PriorityClassName = ""
	if p.Spec.SchedulerName == "" {
		p.Spec.SchedulerName = corev1.DefaultSchedulerName
	}
	claimed := map[string]bool{}
	p.Spec.Volumes = slices.DeleteFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			claimed[v.Name] = true
			return true
		}
		return false
	})
	strip := func(cs []corev1.Container) {
		for i := range cs {
			cs[i].VolumeMounts = slices.DeleteFunc(cs[i].VolumeMounts, func(m corev1.VolumeMount) bool { return claimed[m.Name] })
			cs[i].VolumeDevices = slices.DeleteFunc(cs[i].VolumeDevices, func(d corev1.VolumeDevice) bool { return claimed[d.Name] })
		}
	}
	strip(p.Spec.InitContainers)
	strip(p.Spec.Containers)
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}
	return p
}

// isBufferPod reports whether a pod is a buffer's virtual pod.
func isBufferPod(p *corev1.Pod) bool { return p.Annotations[AnnotationBufferPod] == "true" }

// bufferInformers are the caches buffers are resolved from; nil when buffers are off.
type bufferInformers struct {
	buffers, podTemplates, deployments, replicaSets, statefulSets cache.Indexer

	mu sync.Mutex
	// provisioning is the Provisioning condition of each buffer from the last solve, by key.
	provisioning map[string]metav1.Condition
}

// resolveBuffers reads every buffer and works out its virtual pods; a buffer that cannot be
// resolved gets ReadyForProvisioning False and no pods.
func (c *Controller) resolveBuffers() []*resolvedBuffer {
	if c.buffers == nil {
		return nil
	}
	var out []*resolvedBuffer
	for _, o := range c.buffers.buffers.List() {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		out = append(out, c.resolveBuffer(u))
	}
	slices.SortFunc(out, func(a, b *resolvedBuffer) int { return strings.Compare(a.key, b.key) })
	return out
}

func (c *Controller) resolveBuffer(u *unstructured.Unstructured) *resolvedBuffer {
	rb := &resolvedBuffer{key: u.GetNamespace() + "/" + u.GetName(), obj: u, strategy: BufferStrategyActive}
	fail := func(reason, format string, args ...any) *resolvedBuffer {
		rb.ready = metav1.Condition{Type: "ReadyForProvisioning", Status: metav1.ConditionFalse, Reason: reason, Message: fmt.Sprintf(format, args...)}
		return rb
	}
	var b capacityBuffer
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &b); err != nil {
		return fail("ResolutionFailed", "CapacityBuffer %s: %v", rb.key, err)
	}
	if s := b.Spec.ProvisioningStrategy; s != nil && *s != "" {
		rb.strategy = *s
	}
	if rb.strategy != BufferStrategyActive {
		return fail("ResolutionFailed", "provisioningStrategy %q is not served (want %s)", rb.strategy, BufferStrategyActive)
	}
	var workload *int32
	switch {
	case b.Spec.PodTemplateRef != nil && b.Spec.ScalableRef != nil:
		return fail("ResolutionFailed", "spec.podTemplateRef and spec.scalableRef are mutually exclusive")
	case b.Spec.PodTemplateRef != nil:
		o, ok, _ := c.buffers.podTemplates.GetByKey(b.Namespace + "/" + b.Spec.PodTemplateRef.Name)
		if !ok {
			return fail("PodTemplateNotFound", "PodTemplate %s/%s not found (spec.podTemplateRef)", b.Namespace, b.Spec.PodTemplateRef.Name)
		}
		pt := o.(*corev1.PodTemplate)
		rb.template, rb.templateRef, rb.templateGen = pt.Template, pt.Name, pt.Generation
	case b.Spec.ScalableRef != nil:
		ref := b.Spec.ScalableRef
		if ref.APIGroup != "" && ref.APIGroup != "apps" {
			return fail("ResolutionFailed", "spec.scalableRef.apiGroup %q is not served (want apps)", ref.APIGroup)
		}
		key := b.Namespace + "/" + ref.Name
		var idx cache.Indexer
		switch ref.Kind {
		case "Deployment":
			idx = c.buffers.deployments
		case "ReplicaSet":
			idx = c.buffers.replicaSets
		case "StatefulSet":
			idx = c.buffers.statefulSets
		default:
			return fail("ResolutionFailed", "spec.scalableRef.kind %q is not served (want Deployment, StatefulSet or ReplicaSet)", ref.Kind)
		}
		o, ok, _ := idx.GetByKey(key)
		if !ok {
			return fail("ScalableRefNotFound", "%s %s not found (spec.scalableRef)", ref.Kind, key)
		}
		switch w := o.(type) {
		case *appsv1.Deployment:
			rb.template, workload = w.Spec.Template, w.Spec.Replicas
		case *appsv1.ReplicaSet:
			rb.template, workload = w.Spec.Template, w.Spec.Replicas
		case *appsv1.StatefulSet:
			rb.template, workload = w.Spec.Template, w.Spec.Replicas
		}
		if workload == nil {
			one := int32(1)
			workload = &one
		}
	default:
		return fail("ResolutionFailed", "Neither podTemplateRef nor scalableRef is set")
	}
	slot := nodeplan.PodRequests(&corev1.Pod{Spec: rb.template.Spec})
	rb.replicas = bufferReplicas(b.Spec.Replicas, b.Spec.Percentage, workload, b.Spec.Limits, slot)
	rb.ready = metav1.Condition{Type: "ReadyForProvisioning", Status: metav1.ConditionTrue, Reason: "Resolved", Message: "Pod template resolved successfully"}
	for i := 1; i <= int(rb.replicas); i++ {
		rb.pods = append(rb.pods, virtualPod(&b, rb.template, i))
	}
	return rb
}

// bufferPods returns every buffer's virtual pods.
func (c *Controller) bufferPods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, rb := range c.resolveBuffers() {
		out = append(out, rb.pods...)
	}
	return out
}

// noteBufferPlacement records, per buffer, where the last solve put its virtual pods: the
// Provisioning condition Karpenter writes after each pass.
func (c *Controller) noteBufferPlacement(pods []*corev1.Pod, res scheduling.Result) {
	if c.buffers == nil || len(pods) == 0 {
		return
	}
	fresh := map[string]bool{}
	for _, nc := range res.NodeClaims {
		for _, k := range nc.Pods {
			fresh[k] = true
		}
	}
	failed := map[string]bool{}
	for _, u := range res.Unschedulable {
		failed[u.Pod] = true
	}
	type tally struct{ total, fresh, failed int }
	per := map[string]*tally{}
	for _, p := range pods {
		key := p.Annotations[AnnotationBufferNamespace] + "/" + p.Annotations[AnnotationBufferName]
		t := per[key]
		if t == nil {
			t = &tally{}
			per[key] = t
		}
		t.total++
		switch k := nodeplan.PodKey(p); {
		case fresh[k]:
			t.fresh++
		case failed[k]:
			t.failed++
		}
	}
	c.buffers.mu.Lock()
	defer c.buffers.mu.Unlock()
	if c.buffers.provisioning == nil {
		c.buffers.provisioning = map[string]metav1.Condition{}
	}
	for key, t := range per {
		cond := metav1.Condition{Type: "Provisioning", Status: metav1.ConditionTrue, Reason: "FitsExistingCapacity",
			Message: fmt.Sprintf("All %d virtual pods fit on existing capacity", t.total)}
		if t.fresh > 0 || t.failed > 0 {
			cond = metav1.Condition{Type: "Provisioning", Status: metav1.ConditionFalse, Reason: "RequiresNewCapacity",
				Message: fmt.Sprintf("%d/%d virtual pods required new capacity, %d failed", t.fresh, t.total, t.failed)}
		}
		c.buffers.provisioning[key] = cond
	}
}

// buffersPass resolves the buffers, writes their status, and opens a provisioning batch when
// any has slots, so the slots are solved for even when no real pod is pending.
func (c *Controller) buffersPass(ctx context.Context, now time.Time) {
	if c.buffers == nil {
		return
	}
	rbs := c.resolveBuffers()
	for _, rb := range rbs {
		if len(rb.pods) > 0 {
			c.batch.trigger(now)
			break
		}
	}
	if !c.claimBusy("bufferstatus") {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer c.release("bufferstatus")
		for _, rb := range rbs {
			c.writeBufferStatus(ctx, rb)
		}
	}()
}

// writeBufferStatus writes a buffer's status where it changed: replicas, provisioningStrategy,
// podTemplateRef and its generation, and the conditions ReadyForProvisioning and Provisioning.
func (c *Controller) writeBufferStatus(ctx context.Context, rb *resolvedBuffer) {
	prov := metav1.Condition{Type: "Provisioning", Status: metav1.ConditionFalse, Reason: "NotReadyForProvisioning", Message: "Buffer is not ReadyForProvisioning"}
	if rb.ready.Status == metav1.ConditionTrue {
		c.buffers.mu.Lock()
		last, ok := c.buffers.provisioning[rb.key]
		c.buffers.mu.Unlock()
		switch {
		case rb.replicas == 0:
			prov = metav1.Condition{Type: "Provisioning", Status: metav1.ConditionFalse, Reason: "BufferEmpty", Message: "Buffer has zero desired replicas"}
		case ok:
			prov = last
		default:
			prov = metav1.Condition{} // not solved yet: left as it is
		}
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := c.Dynamic.Resource(CapacityBufferGVR).Namespace(rb.obj.GetNamespace()).Get(ctx, rb.obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		status, _, _ := unstructured.NestedMap(u.Object, "status")
		if status == nil {
			status = map[string]any{}
		}
		before, _ := json.Marshal(status)
		var conds []metav1.Condition
		if raw, ok := status["conditions"]; ok {
			b, _ := json.Marshal(raw)
			_ = json.Unmarshal(b, &conds)
		}
		now := metav1.NewTime(c.now())
		for _, cond := range []metav1.Condition{rb.ready, prov} {
			if cond.Type == "" {
				continue
			}
			if old := meta.FindStatusCondition(conds, cond.Type); old != nil && old.Status == cond.Status &&
				old.Reason == cond.Reason && old.Message == cond.Message && old.ObservedGeneration == u.GetGeneration() {
				continue
			}
			cond.LastTransitionTime, cond.ObservedGeneration = now, u.GetGeneration()
			meta.SetStatusCondition(&conds, cond)
		}
		slices.SortStableFunc(conds, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
		cm, err := toMap(struct {
			Conditions []metav1.Condition `json:"conditions"`
		}{conds})
		if err != nil {
			return err
		}
		status["conditions"] = cm["conditions"]
		status["provisioningStrategy"] = rb.strategy
		if rb.ready.Status == metav1.ConditionTrue {
			status["replicas"] = int64(rb.replicas)
		} else {
			delete(status, "replicas")
		}
		if rb.templateRef != "" {
			status["podTemplateRef"] = map[string]any{"name": rb.templateRef}
			if rb.templateGen > 0 {
				status["podTemplateGeneration"] = rb.templateGen
			}
		}
		after, _ := json.Marshal(status)
		if bytes.Equal(before, after) {
			return nil
		}
		u.Object["status"] = status
		_, err = c.Dynamic.Resource(CapacityBufferGVR).Namespace(u.GetNamespace()).UpdateStatus(ctx, u, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		c.log().Error("could not update capacitybuffer status", "capacitybuffer", rb.key, "err", err)
	}
}
