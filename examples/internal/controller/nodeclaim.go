package controller

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
)

const (
	// FinalizerTermination holds NodeClaims and their Nodes until the node is drained and its
	// instance terminated, so `kubectl delete nodeclaim/node` goes through the drain.
	FinalizerTermination = "karpenter.sh/termination"
	// AnnotationInstallation marks a NodeClaim as this installation's (value: the
	// installation's name). Claims without it belong to someone else — a Karpenter controller,
	// another nodeplan — and are left alone unless adopted on purpose (Controller.Adopt).
	AnnotationInstallation = "nodeplan.io/installation"
	// labelEC2NodeClass names the claim's node class, as Karpenter's AWS provider labels it.
	labelEC2NodeClass = "karpenter.k8s.aws/ec2nodeclass"
)

// NodeClaim condition types, as Karpenter v1 sets them.
const (
	CondLaunched         = "Launched"
	CondRegistered       = "Registered"
	CondInitialized      = "Initialized"
	CondReady            = "Ready"
	CondDrifted          = "Drifted"
	CondConsolidatable   = "Consolidatable"
	CondDisruptionReason = "DisruptionReason"
)

// nodeClaimObject is the part of a karpenter.sh/v1 NodeClaim the controller reads and writes.
type nodeClaimObject struct {
	APIVersion        string `json:"apiVersion"`
	Kind              string `json:"kind"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              nodeClaimSpec   `json:"spec"`
	Status            nodeClaimStatus `json:"status,omitempty"`
}

type nodeClaimSpec struct {
	Taints                 []corev1.Taint     `json:"taints,omitempty"`
	StartupTaints          []corev1.Taint     `json:"startupTaints,omitempty"`
	Requirements           []claimRequirement `json:"requirements"`
	Resources              claimResources     `json:"resources,omitempty"`
	NodeClassRef           claimNodeClassRef  `json:"nodeClassRef"`
	TerminationGracePeriod *metav1.Duration   `json:"terminationGracePeriod,omitempty"`
	ExpireAfter            string             `json:"expireAfter,omitempty"`
}

type claimRequirement struct {
	Key       string                      `json:"key"`
	Operator  corev1.NodeSelectorOperator `json:"operator"`
	Values    []string                    `json:"values,omitempty"`
	MinValues *int                        `json:"minValues,omitempty"`
}

type claimResources struct {
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

type claimNodeClassRef struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
	Name  string `json:"name"`
}

type nodeClaimStatus struct {
	ProviderID       string              `json:"providerID,omitempty"`
	ImageID          string              `json:"imageID,omitempty"`
	NodeName         string              `json:"nodeName,omitempty"`
	Capacity         corev1.ResourceList `json:"capacity,omitempty"`
	Allocatable      corev1.ResourceList `json:"allocatable,omitempty"`
	Conditions       []metav1.Condition  `json:"conditions,omitempty"`
	LastPodEventTime *metav1.Time        `json:"lastPodEventTime,omitempty"`
}

// restrictedRequirement reports whether the NodeClaim CRD refuses key in spec.requirements
// (its CEL rules: kubernetes.io/hostname, and the karpenter.sh domain but for the capacity
// type and the pool). Such keys only narrow where pods go on the node; the claim keeps them in
// memory.
func restrictedRequirement(key string) bool {
	if key == nodeplan.LabelHostname {
		return true
	}
	domain, _, ok := strings.Cut(key, "/")
	return ok && strings.HasSuffix(domain, "karpenter.sh") && key != nodeplan.LabelCapacityType && key != nodeplan.LabelNodePool
}

// newClaimObject renders a claim about to launch as a NodeClaim: its spec as the solver made
// it (the instance types it may be launched as in an In requirement, cheapest first), the
// termination finalizer, this installation's annotation, and the labels Karpenter puts on a
// claim. Its status is written by [writeClaimStatus] as the claim advances.
func newClaimObject(cl *Claim, installation string, owner *metav1.OwnerReference) (*unstructured.Unstructured, error) {
	o := nodeClaimObject{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim"}
	o.Name = cl.Name
	o.Labels = claimLabels(cl)
	o.Annotations = maps.Clone(cl.Annotations)
	if o.Annotations == nil {
		o.Annotations = map[string]string{}
	}
	o.Annotations[AnnotationInstallation] = installation
	o.Finalizers = []string{FinalizerTermination}
	if owner != nil {
		o.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	o.Spec = claimSpec(cl)
	return toUnstructured(o)
}

func claimLabels(cl *Claim) map[string]string {
	l := maps.Clone(cl.Labels)
	if l == nil {
		l = map[string]string{}
	}
	if cl.NodePool != "" {
		l[nodeplan.LabelNodePool] = cl.NodePool
	}
	if cl.NodeClassRef.Kind == ec2.KindNodeClass && cl.NodeClassRef.Name != "" {
		l[labelEC2NodeClass] = cl.NodeClassRef.Name
	}
	st := cl.Status
	if st.InstanceType != "" {
		l[nodeplan.LabelInstanceType] = st.InstanceType
	}
	if st.Zone != "" {
		l[nodeplan.LabelZone] = st.Zone
	}
	if st.CapacityType != "" {
		l[nodeplan.LabelCapacityType] = string(st.CapacityType)
	}
	return l
}

func claimSpec(cl *Claim) nodeClaimSpec {
	s := nodeClaimSpec{
		Taints:        cl.Taints,
		StartupTaints: cl.StartupTaints,
		Resources:     claimResources{Requests: cl.Resources},
		NodeClassRef:  claimNodeClassRef{Group: cl.NodeClassRef.Group, Kind: cl.NodeClassRef.Kind, Name: cl.NodeClassRef.Name},
		ExpireAfter:   "Never",
		Requirements:  []claimRequirement{},
	}
	if s.NodeClassRef.Group == "" {
		s.NodeClassRef.Group = "karpenter.k8s.aws"
	}
	if s.NodeClassRef.Kind == "" {
		s.NodeClassRef.Kind = ec2.KindNodeClass
	}
	if s.NodeClassRef.Name == "" {
		s.NodeClassRef.Name = "default"
	}
	// Karpenter's CRD takes whole units only ("720h0m0s", never "16.85s") and "Never" for
	// nodeplan.Never: the API server refuses anything else.
	if cl.ExpireAfter > 0 && cl.ExpireAfter != nodeplan.Never {
		s.ExpireAfter = max(cl.ExpireAfter.Truncate(time.Second), time.Second).String()
	}
	if cl.TerminationGracePeriod > 0 && cl.TerminationGracePeriod != nodeplan.Never {
		s.TerminationGracePeriod = &metav1.Duration{Duration: max(cl.TerminationGracePeriod.Truncate(time.Second), time.Second)}
	}
	for _, r := range cl.Requirements.All() {
		if restrictedRequirement(r.Key) || (r.Key == nodeplan.LabelInstanceType && len(cl.InstanceTypeOptions) > 0) {
			continue
		}
		for i, e := range r.NodeSelectorRequirements() {
			cr := claimRequirement{Key: e.Key, Operator: e.Operator, Values: e.Values}
			if i == 0 && r.MinValues > 0 && e.Operator == corev1.NodeSelectorOpIn {
				cr.MinValues = new(min(r.MinValues, 50))
			}
			s.Requirements = append(s.Requirements, cr)
		}
	}
	if len(cl.InstanceTypeOptions) > 0 {
		cr := claimRequirement{Key: nodeplan.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: slices.Clone(cl.InstanceTypeOptions)}
		if r, ok := cl.Requirements.Get(nodeplan.LabelInstanceType); ok && r.MinValues > 0 {
			cr.MinValues = new(min(r.MinValues, len(cr.Values), 50))
		}
		s.Requirements = append(s.Requirements, cr)
	}
	if cl.NodePool != "" && !cl.Requirements.Has(nodeplan.LabelNodePool) {
		s.Requirements = append(s.Requirements, claimRequirement{Key: nodeplan.LabelNodePool, Operator: corev1.NodeSelectorOpIn, Values: []string{cl.NodePool}})
	}
	return s
}

// claimMarks are the verdicts the controller keeps about a claim beyond its phase.
type claimMarks struct {
	// Drift is "Reason: message" while the claim has drifted, "" otherwise.
	Drift string
	// Consolidatable is true once the claim's pool would let it be consolidated: not static,
	// consolidateAfter not Never and passed since the last pod event.
	Consolidatable bool
	// Disrupting is the reason of the disruption command the claim is a candidate of, from
	// the moment the command starts (its replacements may still be on their way).
	Disrupting string
}

// claimConditions works out the claim's conditions from what the controller knows, keeping
// each condition's lastTransitionTime while its status stays (meta.SetStatusCondition):
// Launched, Registered, Initialized and the root Ready that depends on them; Drifted while
// drift is not empty (removed otherwise, as Karpenter does); DisruptionReason while the claim
// is being disrupted for a planner's reason.
func claimConditions(cl *Claim, marks claimMarks, old []metav1.Condition, now time.Time, generation int64) []metav1.Condition {
	drift := marks.Drift
	conds := slices.Clone(old)
	set := func(typ string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&conds, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message,
			LastTransitionTime: metav1.NewTime(now), ObservedGeneration: generation})
	}
	launched := cl.Status.ProviderID != ""
	registered := launched && cl.Status.NodeName != "" && cl.Phase >= PhaseRegistered
	initialized := registered && !cl.Initialized.IsZero()
	switch {
	case launched:
		set(CondLaunched, metav1.ConditionTrue, CondLaunched, "")
	default:
		set(CondLaunched, metav1.ConditionUnknown, "AwaitingReconciliation", "object is awaiting reconciliation")
	}
	switch {
	case registered:
		set(CondRegistered, metav1.ConditionTrue, CondRegistered, "")
	case launched:
		set(CondRegistered, metav1.ConditionUnknown, "NodeNotFound", "Node not registered with cluster")
	default:
		set(CondRegistered, metav1.ConditionUnknown, "AwaitingReconciliation", "object is awaiting reconciliation")
	}
	switch {
	case initialized:
		set(CondInitialized, metav1.ConditionTrue, CondInitialized, "")
	case registered:
		set(CondInitialized, metav1.ConditionUnknown, "NodeNotReady", "Node status is NotReady")
	case launched:
		set(CondInitialized, metav1.ConditionUnknown, "NodeNotFound", "Node not registered with cluster")
	default:
		set(CondInitialized, metav1.ConditionUnknown, "AwaitingReconciliation", "object is awaiting reconciliation")
	}
	var waiting []string
	for _, typ := range []string{CondLaunched, CondRegistered, CondInitialized} {
		if c := meta.FindStatusCondition(conds, typ); c.Status != metav1.ConditionTrue {
			waiting = append(waiting, fmt.Sprintf("%s=%s", typ, c.Status))
		}
	}
	if len(waiting) == 0 {
		set(CondReady, metav1.ConditionTrue, CondReady, "")
	} else {
		set(CondReady, metav1.ConditionUnknown, "ReconcilingDependents", strings.Join(waiting, ", "))
	}
	if drift != "" && launched {
		reason, message, _ := strings.Cut(drift, ": ")
		if message == "" {
			message = reason
		}
		set(CondDrifted, metav1.ConditionTrue, reason, message)
	} else {
		meta.RemoveStatusCondition(&conds, CondDrifted)
	}
	if marks.Consolidatable && cl.Phase == PhaseInitialized {
		set(CondConsolidatable, metav1.ConditionTrue, CondConsolidatable, "")
	} else {
		meta.RemoveStatusCondition(&conds, CondConsolidatable)
	}
	r := nodeplan.DisruptionReason(cl.Reason)
	if cl.Phase != PhaseTerminating && marks.Disrupting != "" {
		r = nodeplan.DisruptionReason(marks.Disrupting)
	} else if cl.Phase != PhaseTerminating {
		r = ""
	}
	switch {
	case r == nodeplan.ReasonEmpty || r == nodeplan.ReasonUnderutilized || r == nodeplan.ReasonDrifted:
		set(CondDisruptionReason, metav1.ConditionTrue, string(r), string(r))
	default:
		meta.RemoveStatusCondition(&conds, CondDisruptionReason)
	}
	slices.SortStableFunc(conds, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) })
	return conds
}

// setClaimStatus writes what the controller knows of the claim into the object: the labels
// of what was launched, and the status (provider ID, image, node, capacity, conditions).
func setClaimStatus(u *unstructured.Unstructured, cl *Claim, marks claimMarks, now time.Time) error {
	var o nodeClaimObject
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &o); err != nil {
		return fmt.Errorf("NodeClaim %s: %w", u.GetName(), err)
	}
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, claimLabels(cl))
	u.SetLabels(labels)
	st := nodeClaimStatus{
		ProviderID:  cl.Status.ProviderID,
		ImageID:     cl.Status.ImageID,
		NodeName:    cl.Status.NodeName,
		Capacity:    cl.Status.Capacity,
		Allocatable: cl.Status.Allocatable,
		Conditions:  claimConditions(cl, marks, o.Status.Conditions, now, u.GetGeneration()),
	}
	if !cl.LastPodEvent.IsZero() {
		st.LastPodEventTime = &metav1.Time{Time: cl.LastPodEvent}
	}
	m, err := toMap(st)
	if err != nil {
		return err
	}
	u.Object["status"] = m
	return nil
}

// claimFromObject reads a NodeClaim back into a claim: what it asked for, what was launched,
// and when it was created, launched and initialized. The phase is left to the caller, who
// knows the Nodes.
func claimFromObject(u *unstructured.Unstructured) (*Claim, error) {
	var o nodeClaimObject
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &o); err != nil {
		return nil, fmt.Errorf("NodeClaim %s: %w", u.GetName(), err)
	}
	cl := &Claim{Created: o.CreationTimestamp.Time, UID: string(o.UID), Adopted: true}
	cl.Name = o.Name
	cl.NodePool = o.Labels[nodeplan.LabelNodePool]
	cl.NodeClassRef = nodeplan.NodeClassRef{Group: o.Spec.NodeClassRef.Group, Kind: o.Spec.NodeClassRef.Kind, Name: o.Spec.NodeClassRef.Name}
	cl.Labels = maps.Clone(o.Labels)
	cl.Annotations = maps.Clone(o.Annotations)
	cl.Taints = o.Spec.Taints
	cl.StartupTaints = o.Spec.StartupTaints
	cl.Resources = o.Spec.Resources.Requests
	if o.Spec.TerminationGracePeriod != nil {
		cl.TerminationGracePeriod = o.Spec.TerminationGracePeriod.Duration
	}
	if o.Spec.ExpireAfter == "Never" {
		cl.ExpireAfter = nodeplan.Never
	} else if d, err := time.ParseDuration(o.Spec.ExpireAfter); err == nil {
		cl.ExpireAfter = d
	}
	var errs []error
	for i, r := range o.Spec.Requirements {
		req, err := nodeplan.NewRequirement(r.Key, r.Operator, r.Values...)
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.requirements[%d]: %w", i, err))
			continue
		}
		if r.MinValues != nil {
			req.MinValues = *r.MinValues
		}
		cl.Requirements = cl.Requirements.Add(req)
		if r.Key == nodeplan.LabelInstanceType && r.Operator == corev1.NodeSelectorOpIn {
			cl.InstanceTypeOptions = slices.Clone(r.Values)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("NodeClaim %s: %v", o.Name, errs)
	}
	cl.Status = nodeplan.NodeClaimStatus{
		ProviderID:   o.Status.ProviderID,
		ImageID:      o.Status.ImageID,
		NodeName:     o.Status.NodeName,
		Capacity:     o.Status.Capacity,
		Allocatable:  o.Status.Allocatable,
		InstanceType: o.Labels[nodeplan.LabelInstanceType],
		Zone:         o.Labels[nodeplan.LabelZone],
		CapacityType: nodeplan.CapacityType(o.Labels[nodeplan.LabelCapacityType]),
	}
	if c := meta.FindStatusCondition(o.Status.Conditions, CondLaunched); c != nil && c.Status == metav1.ConditionTrue {
		cl.Status.LaunchTime = c.LastTransitionTime.Time
	}
	if c := meta.FindStatusCondition(o.Status.Conditions, CondInitialized); c != nil && c.Status == metav1.ConditionTrue {
		cl.Initialized = c.LastTransitionTime.Time
	}
	if o.Status.LastPodEventTime != nil {
		cl.LastPodEvent = o.Status.LastPodEventTime.Time
	} else {
		cl.LastPodEvent = cl.Initialized
	}
	if c := meta.FindStatusCondition(o.Status.Conditions, CondDisruptionReason); c != nil && c.Status == metav1.ConditionTrue {
		cl.Reason = c.Reason
	}
	if o.DeletionTimestamp != nil {
		cl.Deleting = true
	}
	return cl, nil
}

func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func toUnstructured(v any) (*unstructured.Unstructured, error) {
	m, err := toMap(v)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}
