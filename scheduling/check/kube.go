package check

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/nodeplan/nodeplan"
)

// This file holds the Kubernetes rules the checker applies, written from the Kubernetes API
// semantics rather than from the solver's code, so the two can disagree.

// matchNode reports whether a pod's nodeSelector and required node affinity admit a node with
// this name and these labels, and if not, which part fails. Required terms are ORed, the
// expressions of a term ANDed; a term with nothing in it matches no node.
func matchNode(pod *corev1.Pod, nodeName string, lbls map[string]string) (bool, string) {
	// In key order, so the reason named is the same on every run.
	for _, k := range slices.Sorted(maps.Keys(pod.Spec.NodeSelector)) {
		v := pod.Spec.NodeSelector[k]
		if got, ok := lbls[k]; !ok || got != v {
			if !ok {
				return false, fmt.Sprintf("nodeSelector %s=%s, node has no label %s", k, v, k)
			}
			return false, fmt.Sprintf("nodeSelector %s=%s, node has %s=%s", k, v, k, got)
		}
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true, ""
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	var why []string
	for i, t := range terms {
		ok, w := matchTerm(t, nodeName, lbls)
		if ok {
			return true, ""
		}
		why = append(why, fmt.Sprintf("term %d: %s", i, w))
	}
	if len(terms) == 0 {
		return false, "required node affinity has no terms"
	}
	return false, "required node affinity: " + strings.Join(why, "; ")
}

func matchTerm(t corev1.NodeSelectorTerm, nodeName string, lbls map[string]string) (bool, string) {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return false, "empty term"
	}
	for _, e := range t.MatchExpressions {
		v, ok := lbls[e.Key]
		if !matchExpr(e, v, ok) {
			if ok {
				return false, fmt.Sprintf("%s %s %v, node has %s=%s", e.Key, e.Operator, e.Values, e.Key, v)
			}
			return false, fmt.Sprintf("%s %s %v, node has no label %s", e.Key, e.Operator, e.Values, e.Key)
		}
	}
	for _, e := range t.MatchFields {
		if e.Key != "metadata.name" || !matchExpr(e, nodeName, nodeName != "") {
			return false, fmt.Sprintf("field %s %s %v, node name %q", e.Key, e.Operator, e.Values, nodeName)
		}
	}
	return true, ""
}

func matchExpr(e corev1.NodeSelectorRequirement, v string, present bool) bool {
	switch e.Operator {
	case corev1.NodeSelectorOpIn:
		return present && slices.Contains(e.Values, v)
	case corev1.NodeSelectorOpNotIn:
		return !present || !slices.Contains(e.Values, v)
	case corev1.NodeSelectorOpExists:
		return present
	case corev1.NodeSelectorOpDoesNotExist:
		return !present
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !present || len(e.Values) != 1 {
			return false
		}
		n, err1 := strconv.ParseInt(v, 10, 64)
		want, err2 := strconv.ParseInt(e.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if e.Operator == corev1.NodeSelectorOpGt {
			return n > want
		}
		return n < want
	}
	return false
}

// untolerated returns the first NoSchedule or NoExecute taint the tolerations do not match.
func untolerated(tols []corev1.Toleration, taints []corev1.Taint) (corev1.Taint, bool) {
	return nodeplan.UntoleratedTaint(tols, taints)
}

// daemonPod is the pod a DaemonSet would run on a node: its template, in its namespace, with
// the tolerations the DaemonSet controller adds to every daemon pod.
func daemonPod(ds *appsv1.DaemonSet) *corev1.Pod {
	spec := ds.Spec.Template.Spec.DeepCopy()
	for _, k := range []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"} {
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: k, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})
	}
	for _, k := range []string{"node.kubernetes.io/disk-pressure", "node.kubernetes.io/memory-pressure",
		"node.kubernetes.io/pid-pressure", "node.kubernetes.io/unschedulable"} {
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: k, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	if spec.HostNetwork {
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: "node.kubernetes.io/network-unavailable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: ds.Name + "-daemon", Namespace: ds.Namespace, Labels: ds.Spec.Template.Labels},
		Spec:       *spec,
	}
}

// daemonRuns reports whether a DaemonSet's pod would run on a node with these labels and taints.
func daemonRuns(pod *corev1.Pod, nodeName string, lbls map[string]string, taints []corev1.Taint) bool {
	if ok, _ := matchNode(pod, nodeName, lbls); !ok {
		return false
	}
	_, bad := untolerated(pod.Spec.Tolerations, taints)
	return !bad
}

// ownedBy reports whether a bound pod is the given DaemonSet's pod.
func ownedBy(pod *corev1.Pod, ds *appsv1.DaemonSet) bool {
	if pod.Namespace != ds.Namespace {
		return false
	}
	for _, o := range pod.OwnerReferences {
		if o.Kind == "DaemonSet" && o.Name == ds.Name {
			return true
		}
	}
	return false
}

// terminal reports whether a pod no longer holds resources on its node.
func terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// hostPort is one (IP, port, protocol) a pod binds on its node.
type hostPort struct {
	ip       string
	port     int32
	protocol corev1.Protocol
}

func (h hostPort) String() string { return fmt.Sprintf("%s:%d/%s", h.ip, h.port, h.protocol) }

// conflicts reports whether two host ports cannot share a node: same port and protocol, and
// the same IP or either one the wildcard 0.0.0.0.
func (h hostPort) conflicts(o hostPort) bool {
	return h.port == o.port && h.protocol == o.protocol && (h.ip == o.ip || h.ip == "0.0.0.0" || o.ip == "0.0.0.0")
}

// hostPorts lists the host ports a pod binds: those of its containers and of its sidecars
// (restartable init containers), which run alongside them.
func hostPorts(pod *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(c *corev1.Container) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			h := hostPort{ip: p.HostIP, port: p.HostPort, protocol: p.Protocol}
			if h.ip == "" || h.ip == "::" {
				h.ip = "0.0.0.0"
			}
			if h.protocol == "" {
				h.protocol = corev1.ProtocolTCP
			}
			out = append(out, h)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	return out
}

// volumes lists the attachable volumes of a pod, by a key unique in the cluster: its
// PersistentVolumeClaims and generic ephemeral volumes.
func volumes(pod *corev1.Pod) []string {
	var out []string
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, "pvc:"+pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			out = append(out, "pvc:"+pod.Namespace+"/"+pod.Name+"-"+v.Name)
		}
	}
	return out
}

// podTerm is a pod-affinity term resolved for the pod that carries it: the namespaces it looks
// in (nil means all) and its selector with matchLabelKeys and mismatchLabelKeys folded in.
type podTerm struct {
	namespaces map[string]bool
	selector   labels.Selector
	key        string
	// id identifies equal terms across pods.
	id string
}

func (t podTerm) matches(pod *corev1.Pod) bool {
	if t.namespaces != nil && !t.namespaces[pod.Namespace] {
		return false
	}
	return t.selector.Matches(labels.Set(pod.Labels))
}

// resolveTerm resolves a PodAffinityTerm of owner. Namespaces and a namespaceSelector are
// ORed; with neither, the term looks in the owner's namespace; an empty namespaceSelector
// selects every namespace.
func resolveTerm(owner *corev1.Pod, t corev1.PodAffinityTerm, namespaces []*corev1.Namespace) (podTerm, error) {
	sel, err := selectorWithKeys(t.LabelSelector, owner, t.MatchLabelKeys, t.MismatchLabelKeys)
	if err != nil {
		return podTerm{}, err
	}
	out := podTerm{selector: sel, key: t.TopologyKey}
	switch {
	case t.NamespaceSelector != nil && len(t.NamespaceSelector.MatchLabels) == 0 && len(t.NamespaceSelector.MatchExpressions) == 0:
		// Every namespace.
	default:
		out.namespaces = map[string]bool{}
		for _, n := range t.Namespaces {
			out.namespaces[n] = true
		}
		if t.NamespaceSelector != nil {
			nsSel, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector)
			if err != nil {
				return podTerm{}, err
			}
			for _, ns := range namespaces {
				if ns != nil && nsSel.Matches(labels.Set(ns.Labels)) {
					out.namespaces[ns.Name] = true
				}
			}
		} else if len(t.Namespaces) == 0 {
			out.namespaces[owner.Namespace] = true
		}
	}
	var nss []string
	for n := range out.namespaces {
		nss = append(nss, n)
	}
	slices.Sort(nss)
	all := "*"
	if out.namespaces != nil {
		all = strings.Join(nss, ",")
	}
	out.id = fmt.Sprintf("%s|%s|%s", all, sel.String(), t.TopologyKey)
	return out, nil
}

// selectorWithKeys converts a label selector (nil selects nothing) and adds, for each
// matchLabelKeys key the pod has, "key in (its value)", and for each mismatchLabelKeys key,
// "key notin (its value)".
func selectorWithKeys(ls *metav1.LabelSelector, pod *corev1.Pod, match, mismatch []string) (labels.Selector, error) {
	if ls == nil {
		return labels.Nothing(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, err
	}
	add := func(keys []string, op selection.Operator) error {
		for _, k := range keys {
			v, ok := pod.Labels[k]
			if !ok {
				continue
			}
			r, err := labels.NewRequirement(k, op, []string{v})
			if err != nil {
				return err
			}
			sel = sel.Add(*r)
		}
		return nil
	}
	if err := add(match, selection.In); err != nil {
		return nil, err
	}
	if err := add(mismatch, selection.NotIn); err != nil {
		return nil, err
	}
	return sel, nil
}

// requiredAffinity returns a pod's required pod-affinity and anti-affinity terms.
func requiredAffinity(pod *corev1.Pod) (aff, anti []corev1.PodAffinityTerm) {
	a := pod.Spec.Affinity
	if a == nil {
		return nil, nil
	}
	if a.PodAffinity != nil {
		aff = a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if a.PodAntiAffinity != nil {
		anti = a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return aff, anti
}
