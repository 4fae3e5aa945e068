// Package apiserverpod turns a hand-built pod into the pod a kube-apiserver v1.37 returns after a
// Deployment's ReplicaSet created it: every field the API server's defaulting, its admission
// plugins (DefaultTolerationSeconds, Priority, ServiceAccount) and its pod strategy add, plus the
// metadata the ReplicaSet controller sets and the status kube-scheduler writes when it cannot
// place the pod. Tests and benchmarks use it to show that none of those fields changes a plan.
//
// It is public to users as schedulingtest.APIServerShaped; it lives here so the solver's own
// in-package tests can use it without an import cycle.
//
// What it does not do: run admission webhooks, LimitRanges or ResourceQuotas, resolve
// PriorityClasses other than Kubernetes' two built-in ones, or talk to any server. The facts
// come from Kubernetes v1.37's pkg/apis/core/v1 defaulting, pkg/registry/core/pod's
// PrepareForCreate, the three admission plugins and the ReplicaSet controller; the
// differential test against a real API server checks the result.
package apiserverpod

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
)

// Created is the creationTimestamp every shaped pod carries: a fixed instant keeps results
// reproducible (the solver reads no clock, so its value cannot matter).
var Created = time.Date(2026, time.January, 2, 3, 4, 5, 0, time.UTC)

// Well-known values the API server writes.
const (
	defaultTolerationSeconds = 300 // DefaultTolerationSeconds admission: --default-not-ready-toleration-seconds
	tokenVolumePrefix        = "kube-api-access-"
	tokenMountPath           = "/var/run/secrets/kubernetes.io/serviceaccount"
	tokenExpirationSeconds   = 3607 // an hour and seven seconds: the bound token's warn-only expiry
	defaultFileMode          = 0o644
	unschedulableMessage     = "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
)

// Shape returns a deep copy of p as the API server returns it (see the package doc). The pod's
// name becomes <replicaset>-<five characters>, where the ReplicaSet is named after the
// Deployment (the pod's "app" label, else its name without a trailing "-<number>") and a hash
// of its template, as the Deployment controller names it. A pod that already has a controller
// owner keeps its owner. Shape is deterministic: the same pod gives the same result.
func Shape(p *corev1.Pod) *corev1.Pod {
	return shape(p, nil)
}

// ShapeAll shapes every pod, drawing name suffixes so no two results share a namespace and name
// (as the API server's generateName retries on a clash).
func ShapeAll(pods []*corev1.Pod) []*corev1.Pod {
	used := make(map[string]bool, len(pods))
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		out[i] = shape(p, used)
	}
	return out
}

func shape(in *corev1.Pod, used map[string]bool) *corev1.Pod {
	p := in.DeepCopy()
	bound := p.Spec.NodeName != ""

	// The ReplicaSet controller: template labels plus pod-template-hash, generateName, owner.
	owner := controllerOf(p)
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	if owner == nil {
		hash := templateHash(in)
		rs := deploymentName(in) + "-" + hash
		if _, ok := p.Labels["pod-template-hash"]; !ok {
			p.Labels["pod-template-hash"] = hash
		}
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs, UID: uid("replicaset", p.Namespace, rs),
			Controller: ptr(true), BlockOwnerDeletion: ptr(true),
		})
		owner = &p.OwnerReferences[len(p.OwnerReferences)-1]
	}
	if p.Namespace == "" {
		p.Namespace = metav1.NamespaceDefault
	}
	p.GenerateName = owner.Name + "-"
	seed := in.Namespace + "/" + in.Name
	for attempt := 0; ; attempt++ {
		name := p.GenerateName + suffix(seed, attempt)
		if used == nil || !used[p.Namespace+"/"+name] {
			p.Name = name
			if used != nil {
				used[p.Namespace+"/"+name] = true
			}
			break
		}
	}
	p.UID = uid("pod", p.Namespace, p.Name)
	rv := sum(p.Namespace, p.Name)
	p.ResourceVersion = strconv.FormatUint(1000+uint64(binary.BigEndian.Uint32(rv[:4])), 10)
	p.Generation = 1
	p.CreationTimestamp = metav1.NewTime(Created)

	defaultSpec(p)
	admit(p)
	prepareForCreate(p)
	p.Status = status(p, bound)
	p.ManagedFields = managedFields(p, bound)
	return p
}

// defaultSpec applies pkg/apis/core/v1's defaulting (SetDefaults_Pod, _PodSpec, _Container and
// the generated defaults for volumes, ports, probes and field selectors).
func defaultSpec(p *corev1.Pod) {
	s := &p.Spec
	if s.ServiceAccountName == "" {
		s.ServiceAccountName = s.DeprecatedServiceAccount //nolint:staticcheck // kept in sync as the API server does
	}
	s.DeprecatedServiceAccount = s.ServiceAccountName //nolint:staticcheck
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptr(int64(corev1.DefaultTerminationGracePeriodSeconds))
	} else if *s.TerminationGracePeriodSeconds < 0 {
		s.TerminationGracePeriodSeconds = ptr(int64(1))
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	if s.EnableServiceLinks == nil {
		s.EnableServiceLinks = ptr(corev1.DefaultEnableServiceLinks)
	}
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			defaultContainer(&cs[i], s.HostNetwork)
		}
	}
	if s.Resources != nil {
		roundUp(s.Resources.Requests)
		roundUp(s.Resources.Limits)
	}
	roundUp(s.Overhead)
	for i := range s.Volumes {
		defaultVolume(&s.Volumes[i])
	}
}

func defaultContainer(c *corev1.Container, hostNetwork bool) {
	if c.ImagePullPolicy == "" {
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = corev1.PullAlways
		} else {
			c.ImagePullPolicy = corev1.PullIfNotPresent
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	// Requests default to limits on a Pod (not on a template).
	if c.Resources.Limits != nil {
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		for k, v := range c.Resources.Limits {
			if _, ok := c.Resources.Requests[k]; !ok {
				c.Resources.Requests[k] = v.DeepCopy()
			}
		}
	}
	roundUp(c.Resources.Requests)
	roundUp(c.Resources.Limits)
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
		if hostNetwork && c.Ports[i].HostPort == 0 {
			c.Ports[i].HostPort = c.Ports[i].ContainerPort
		}
	}
	for _, pr := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if pr == nil {
			continue
		}
		if pr.TimeoutSeconds == 0 {
			pr.TimeoutSeconds = 1
		}
		if pr.PeriodSeconds == 0 {
			pr.PeriodSeconds = 10
		}
		if pr.SuccessThreshold == 0 {
			pr.SuccessThreshold = 1
		}
		if pr.FailureThreshold == 0 {
			pr.FailureThreshold = 3
		}
		if g := pr.HTTPGet; g != nil {
			if g.Path == "" {
				g.Path = "/"
			}
			if g.Scheme == "" {
				g.Scheme = corev1.URISchemeHTTP
			}
		}
		if g := pr.GRPC; g != nil && g.Service == nil {
			g.Service = ptr("")
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
}

func defaultVolume(v *corev1.Volume) {
	vs := &v.VolumeSource
	switch {
	case vs.Secret != nil && vs.Secret.DefaultMode == nil:
		vs.Secret.DefaultMode = ptr(int32(defaultFileMode))
	case vs.ConfigMap != nil && vs.ConfigMap.DefaultMode == nil:
		vs.ConfigMap.DefaultMode = ptr(int32(defaultFileMode))
	case vs.DownwardAPI != nil && vs.DownwardAPI.DefaultMode == nil:
		vs.DownwardAPI.DefaultMode = ptr(int32(defaultFileMode))
	case vs.Projected != nil && vs.Projected.DefaultMode == nil:
		vs.Projected.DefaultMode = ptr(int32(defaultFileMode))
	case vs.HostPath != nil && vs.HostPath.Type == nil:
		vs.HostPath.Type = ptr(corev1.HostPathUnset)
	}
	if vs.Projected != nil {
		for i := range vs.Projected.Sources {
			if t := vs.Projected.Sources[i].ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				t.ExpirationSeconds = ptr(int64(3600))
			}
		}
	}
	empty := *vs == corev1.VolumeSource{}
	if empty {
		vs.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
}

// admit applies the three admission plugins that change every pod of a default cluster.
func admit(p *corev1.Pod) {
	s := &p.Spec

	// DefaultTolerationSeconds: tolerate not-ready and unreachable for five minutes, unless a
	// toleration already covers them (an empty key or effect covers all).
	notReady, unreachable := false, false
	for _, t := range s.Tolerations {
		noExec := t.Effect == "" || t.Effect == corev1.TaintEffectNoExecute
		notReady = notReady || noExec && (t.Key == "" || t.Key == corev1.TaintNodeNotReady)
		unreachable = unreachable || noExec && (t.Key == "" || t.Key == corev1.TaintNodeUnreachable)
	}
	if !notReady {
		s.Tolerations = append(s.Tolerations, corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(defaultTolerationSeconds))})
	}
	if !unreachable {
		s.Tolerations = append(s.Tolerations, corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(defaultTolerationSeconds))})
	}

	// Priority: no class and no global default class gives 0 and PreemptLowerPriority; the
	// built-in classes resolve to their values. Other classes need the cluster's objects: a
	// priority the caller set is kept.
	if s.Priority == nil {
		switch s.PriorityClassName {
		case "":
			s.Priority = ptr(int32(0))
		case "system-cluster-critical":
			s.Priority = ptr(int32(2000000000))
		case "system-node-critical":
			s.Priority = ptr(int32(2000001000))
		}
	}
	if s.PreemptionPolicy == nil && s.Priority != nil {
		s.PreemptionPolicy = ptr(corev1.PreemptLowerPriority)
	}

	// ServiceAccount: the namespace's default account and its projected token, mounted into
	// every container that does not mount something at the token path already. Mirror pods
	// are left alone.
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return
	}
	if s.ServiceAccountName == "" {
		s.ServiceAccountName = "default"
		s.DeprecatedServiceAccount = "default" //nolint:staticcheck
	}
	if s.AutomountServiceAccountToken != nil && !*s.AutomountServiceAccountToken {
		return
	}
	volName := ""
	for _, v := range s.Volumes {
		if strings.HasPrefix(v.Name, tokenVolumePrefix) {
			volName = v.Name
			break
		}
	}
	hasVolume := volName != ""
	if !hasVolume {
		volName = tokenVolumePrefix + suffix(p.Namespace+"/"+p.Name+"/token", 0)
	}
	mount := corev1.VolumeMount{Name: volName, ReadOnly: true, MountPath: tokenMountPath}
	needed := false
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			if !slices.ContainsFunc(cs[i].VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == tokenMountPath }) {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, mount)
				needed = true
			}
		}
	}
	if needed && !hasVolume {
		s.Volumes = append(s.Volumes, corev1.Volume{Name: volName, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr(int32(defaultFileMode)),
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(tokenExpirationSeconds))}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
					Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
					FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
			},
		}}})
	}
}

// prepareForCreate applies the pod strategy's create-time changes: matchLabelKeys and
// mismatchLabelKeys merged into their selectors, and pod-level requests (and limits) defaulted.
func prepareForCreate(p *corev1.Pod) {
	merge := func(sel *metav1.LabelSelector, keys []string, op metav1.LabelSelectorOperator) {
		for _, k := range keys {
			if v, ok := p.Labels[k]; ok {
				sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: op, Values: []string{v}})
			}
		}
	}
	for i := range p.Spec.TopologySpreadConstraints {
		c := &p.Spec.TopologySpreadConstraints[i]
		if c.LabelSelector != nil {
			merge(c.LabelSelector, c.MatchLabelKeys, metav1.LabelSelectorOpIn)
		}
	}
	if a := p.Spec.Affinity; a != nil {
		var terms []*corev1.PodAffinityTerm
		if pa := a.PodAffinity; pa != nil {
			for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				terms = append(terms, &pa.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
			}
			for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				terms = append(terms, &pa.RequiredDuringSchedulingIgnoredDuringExecution[i])
			}
		}
		if pa := a.PodAntiAffinity; pa != nil {
			for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				terms = append(terms, &pa.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
			}
			for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				terms = append(terms, &pa.RequiredDuringSchedulingIgnoredDuringExecution[i])
			}
		}
		for _, t := range terms {
			if t.LabelSelector != nil {
				merge(t.LabelSelector, t.MatchLabelKeys, metav1.LabelSelectorOpIn)
				merge(t.LabelSelector, t.MismatchLabelKeys, metav1.LabelSelectorOpNotIn)
			}
		}
	}
	defaultPodLevelResources(p)
}

// podLevel reports whether a resource may be set at pod level (cpu, memory, hugepages).
func podLevel(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func hugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// defaultPodLevelResources fills pod-level hugepage limits, requests and limits from the
// containers, in that order, when the pod sets pod-level resources at all.
func defaultPodLevelResources(p *corev1.Pod) {
	r := p.Spec.Resources
	if r == nil || len(r.Requests) == 0 && len(r.Limits) == 0 {
		return
	}
	// Hugepage limits from the containers', unless the pod requests that size.
	ctrLimits := aggregate(p, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Limits })
	for k, v := range ctrLimits {
		if !hugePages(k) {
			continue
		}
		if _, ok := r.Requests[k]; ok {
			continue
		}
		if _, ok := r.Limits[k]; !ok {
			if r.Limits == nil {
				r.Limits = corev1.ResourceList{}
			}
			r.Limits[k] = v.DeepCopy()
		}
	}
	// Requests: the containers' aggregate for overcommittable resources, else the pod's limit.
	reqs := r.Requests
	if reqs == nil {
		reqs = corev1.ResourceList{}
	}
	for k, v := range aggregate(p, func(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests }) {
		if _, ok := reqs[k]; !ok && podLevel(k) && !hugePages(k) {
			reqs[k] = v
		}
	}
	for k, v := range r.Limits {
		if _, ok := reqs[k]; !ok && podLevel(k) {
			reqs[k] = v.DeepCopy()
		}
	}
	if len(reqs) > 0 {
		r.Requests = reqs
	}
	// Limits: where every container has a limit, their aggregate (at least the pod request).
	for k := range r.Requests {
		if _, ok := r.Limits[k]; ok || !podLevel(k) {
			continue
		}
		all := true
		for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for i := range cs {
				if _, ok := cs[i].Resources.Limits[k]; !ok {
					all = false
				}
			}
		}
		if !all {
			continue
		}
		v, ok := ctrLimits[k]
		if !ok {
			continue
		}
		if req := r.Requests[k]; req.Cmp(v) > 0 {
			v = req
		}
		if r.Limits == nil {
			r.Limits = corev1.ResourceList{}
		}
		r.Limits[k] = v.DeepCopy()
	}
}

// aggregate is what the containers of a pod need together, by the sidecar rules: regular
// containers and sidecars add up; each ordinary init container needs its own amount plus the
// sidecars started before it, and the pod needs the largest of those.
func aggregate(p *corev1.Pod, of func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	add := func(dst, src corev1.ResourceList) {
		for k, v := range src {
			q := dst[k].DeepCopy()
			q.Add(v)
			dst[k] = q
		}
	}
	maxInto := func(dst, src corev1.ResourceList) {
		for k, v := range src {
			if q, ok := dst[k]; !ok || v.Cmp(q) > 0 {
				dst[k] = v.DeepCopy()
			}
		}
	}
	for i := range p.Spec.Containers {
		add(out, of(&p.Spec.Containers[i]))
	}
	sidecars, peak := corev1.ResourceList{}, corev1.ResourceList{}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(out, of(c))
			add(sidecars, of(c))
			maxInto(peak, sidecars)
			continue
		}
		step := corev1.ResourceList{}
		add(step, of(c))
		add(step, sidecars)
		maxInto(peak, step)
	}
	maxInto(out, peak)
	return out
}

// status is what the API server stores at creation (phase Pending, the QoS class) plus what
// kube-scheduler writes: PodScheduled=False/Unschedulable for a pending pod; for a bound pod,
// the kubelet's Running status with its containers' allocated resources.
func status(p *corev1.Pod, bound bool) corev1.PodStatus {
	st := corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qosClass(p)}
	if len(p.Spec.SchedulingGates) > 0 {
		st.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonSchedulingGated, Message: "Scheduling is blocked due to non-empty scheduling gates"}}
		return st
	}
	if !bound {
		// kube-scheduler records the generation it looked at (PodObservedGenerationTracking);
		// seen against a real kube-scheduler by examples/e2e's round-trip test.
		st.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, ObservedGeneration: 1,
			Reason: corev1.PodReasonUnschedulable, Message: unschedulableMessage, LastTransitionTime: metav1.NewTime(Created.Add(time.Second))}}
		return st
	}
	// A bound pod: keep a terminal phase the caller set.
	if in := p.Status.Phase; in == corev1.PodSucceeded || in == corev1.PodFailed {
		st.Phase = in
	} else {
		st.Phase = corev1.PodRunning
	}
	at := metav1.NewTime(Created.Add(2 * time.Second))
	st.StartTime = &at
	for _, t := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: at})
	}
	cstatus := func(c *corev1.Container) corev1.ContainerStatus {
		res := c.Resources.DeepCopy()
		return corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: true, Started: ptr(true),
			State:              corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}},
			AllocatedResources: c.Resources.Requests.DeepCopy(), Resources: res}
	}
	for i := range p.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, cstatus(&p.Spec.InitContainers[i]))
	}
	for i := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, cstatus(&p.Spec.Containers[i]))
	}
	return st
}

// qosClass computes the QoS class as the API server stores it: from the pod-level resources
// when the pod sets them, else from every container.
func qosClass(p *corev1.Pod) corev1.PodQOSClass {
	if r := p.Spec.Resources; r != nil && podLevelSet(r) {
		return requirementsQOS(r)
	}
	var q corev1.PodQOSClass
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			c := requirementsQOS(&cs[i].Resources)
			switch {
			case c == corev1.PodQOSBurstable:
				return c
			case q == "":
				q = c
			case q != c:
				return corev1.PodQOSBurstable
			}
		}
	}
	if q == "" {
		q = corev1.PodQOSBestEffort
	}
	return q
}

func podLevelSet(r *corev1.ResourceRequirements) bool {
	for _, l := range []corev1.ResourceList{r.Requests, r.Limits} {
		for k := range l {
			if podLevel(k) {
				return true
			}
		}
	}
	return false
}

func requirementsQOS(r *corev1.ResourceRequirements) corev1.PodQOSClass {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	var q corev1.PodQOSClass
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := r.Requests[name], r.Limits[name]
		var c corev1.PodQOSClass
		switch {
		case !req.Equal(lim):
			return corev1.PodQOSBurstable
		case req.IsZero():
			c = corev1.PodQOSBestEffort
		default:
			c = corev1.PodQOSGuaranteed
		}
		if q == "" {
			q = c
		} else if q != c {
			return corev1.PodQOSBurstable
		}
	}
	return q
}

// managedFields are the two entries a ReplicaSet's pending pod carries: the controller manager
// wrote the object, kube-scheduler its status.
func managedFields(p *corev1.Pod, bound bool) []metav1.ManagedFieldsEntry {
	at := metav1.NewTime(Created)
	var spec strings.Builder
	spec.WriteString(`{"f:metadata":{"f:generateName":{},"f:labels":{`)
	for i, k := range slices.Sorted(maps.Keys(p.Labels)) {
		if i > 0 {
			spec.WriteByte(',')
		}
		fmt.Fprintf(&spec, `"f:%s":{}`, jsonEscape(k))
	}
	spec.WriteString(`},"f:ownerReferences":{".":{}`)
	for _, o := range p.OwnerReferences {
		fmt.Fprintf(&spec, `,"k:{\"uid\":\"%s\"}":{}`, o.UID)
	}
	spec.WriteString(`}},"f:spec":{"f:containers":{`)
	for i, c := range p.Spec.Containers {
		if i > 0 {
			spec.WriteByte(',')
		}
		fmt.Fprintf(&spec, `"k:{\"name\":\"%s\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}`, jsonEscape(c.Name))
	}
	spec.WriteString(`},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}`)
	out := []metav1.ManagedFieldsEntry{{
		Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &at,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(spec.String())},
	}}
	manager, status := "kube-scheduler", `{"f:status":{"f:conditions":{".":{},"k:{\"type\":\"PodScheduled\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}}}}`
	if bound {
		manager, status = "kubelet", `{"f:status":{"f:conditions":{},"f:containerStatuses":{},"f:phase":{},"f:startTime":{}}}`
	}
	statusAt := metav1.NewTime(Created.Add(time.Second))
	out = append(out, metav1.ManagedFieldsEntry{
		Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &statusAt,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(status)}, Subresource: "status",
	})
	return out
}

func jsonEscape(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

func controllerOf(p *corev1.Pod) *metav1.OwnerReference {
	for i := range p.OwnerReferences {
		if o := &p.OwnerReferences[i]; o.Controller != nil && *o.Controller {
			return o
		}
	}
	return nil
}

// deploymentName guesses the Deployment a hand-built pod stands for.
func deploymentName(p *corev1.Pod) string {
	if app := p.Labels["app"]; app != "" {
		return app
	}
	name := p.Name
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i]
		}
	}
	if name == "" {
		name = "deployment"
	}
	return name
}

// templateHash is a pod-template-hash in the Deployment controller's form (an FNV-32a hash
// written with the safe alphabet); it hashes the pod's labels and spec, so replicas share it.
func templateHash(p *corev1.Pod) string {
	h := fnv.New32a()
	for _, k := range slices.Sorted(maps.Keys(p.Labels)) {
		fmt.Fprintf(h, "%s=%s\n", k, p.Labels[k])
	}
	if data, err := p.Spec.Marshal(); err == nil {
		h.Write(data)
	}
	return utilrand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// suffix is a five-character generateName suffix from the API server's alphabet, derived from
// seed (and attempt, to resolve clashes) instead of drawn at random.
func suffix(seed string, attempt int) string {
	b := sum(seed, strconv.Itoa(attempt))
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	out := make([]byte, 5)
	for i := range out {
		out[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(out)
}

func sum(parts ...string) [32]byte {
	return sha256.Sum256([]byte(strings.Join(parts, "\x00")))
}

// uid is a version-4-shaped UUID derived from the object's identity.
func uid(kind, namespace, name string) types.UID {
	b := sum(kind, namespace, name)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:16])
	return types.UID(h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32])
}

func imageTag(image string) string {
	// The tag is after the last ':' of the last path component; a digest takes precedence.
	if image == "" || strings.Contains(image, "@") {
		return ""
	}
	last := image[strings.LastIndexByte(image, '/')+1:]
	if i := strings.LastIndexByte(last, ':'); i >= 0 {
		return last[i+1:]
	}
	return "latest"
}

// roundUp rounds every quantity up to a whole milli-unit, as the API server's ResourceList
// defaulting does.
func roundUp(l corev1.ResourceList) {
	for k, v := range l {
		v.RoundUp(resource.Milli)
		l[k] = v
	}
}

func ptr[T any](v T) *T { return &v }
