package kubesched

import (
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/daemon"
	daemonutil "k8s.io/kubernetes/pkg/controller/daemon/util"
	"k8s.io/utils/ptr"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// PlannedNode is a node of a plan as the cluster would see it once launched and registered.
type PlannedNode struct {
	Node *corev1.Node
	// Pods are the keys of the pending pods the plan puts on the node.
	Pods []string
}

// NodesFromPlan turns a plan's new NodeClaims into the Nodes they would register as: the claim's
// labels and the chosen instance type's, the offering's zone and capacity type, the pool's name
// and a hostname; the claim's taints (startup taints are gone by the time pods schedule); the
// instance type's capacity and allocatable; Ready. Nodes are named after the claims' order.
func NodesFromPlan(res scheduling.Result, catalog map[string]nodeplan.InstanceType, prefix string) ([]PlannedNode, error) {
	var out []PlannedNode
	for i, c := range res.NodeClaims {
		it, ok := catalog[c.InstanceType]
		if !ok {
			return nil, fmt.Errorf("kubesched: claim %s: instance type %q is not in the catalog", c.Name, c.InstanceType)
		}
		name := fmt.Sprintf("%s-%d", prefix, i)
		out = append(out, PlannedNode{Node: NewNode(name, c.NodeClaim, it, c.Offering), Pods: slices.Clone(c.Pods)})
	}
	return out, nil
}

// NewNode is the Node a claim registers as when launched as it at offering o.
func NewNode(name string, c nodeplan.NodeClaim, it nodeplan.InstanceType, o nodeplan.Offering) *corev1.Node {
	labels := maps.Clone(it.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, c.Labels)
	labels[nodeplan.LabelInstanceType] = it.Name
	labels[nodeplan.LabelZone] = o.Zone
	labels[nodeplan.LabelCapacityType] = string(o.CapacityType)
	if c.NodePool != "" {
		labels[nodeplan.LabelNodePool] = c.NodePool
	}
	labels[nodeplan.LabelHostname] = name
	if _, ok := labels[nodeplan.LabelOS]; !ok {
		labels[nodeplan.LabelOS] = "linux"
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: slices.Clone(c.Taints), ProviderID: "aws:///" + o.Zone + "/i-" + name},
		Status: corev1.NodeStatus{
			Capacity:    it.Capacity.DeepCopy(),
			Allocatable: it.Allocatable(),
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				Message: "kubelet is posting ready status"}},
			Phase: corev1.NodeRunning,
		},
	}
}

// DaemonPods returns the pods the DaemonSet controller creates for a node: one for each
// DaemonSet the controller's own NodeShouldRunDaemonPod admits, with the controller's default
// tolerations and its node-name affinity (a required matchFields metadata.name term).
func DaemonPods(node *corev1.Node, dss []*appsv1.DaemonSet) []*corev1.Pod {
	var out []*corev1.Pod
	for _, ds := range dss {
		if run, _ := daemon.NodeShouldRunDaemonPod(klog.Background(), node, ds); !run {
			continue
		}
		tmpl := ds.Spec.Template.DeepCopy()
		pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
		pod.Namespace = ds.Namespace
		pod.Name = ds.Name + "-" + node.Name
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		daemonutil.AddOrUpdateDaemonPodTolerations(&pod.Spec)
		pod.Spec.Affinity = daemonutil.ReplaceDaemonSetPodNodeNameNodeAffinity(pod.Spec.Affinity, node.Name)
		out = append(out, pod)
	}
	return out
}

// Catalog indexes instance types by name.
func Catalog(its []nodeplan.InstanceType) map[string]nodeplan.InstanceType {
	m := make(map[string]nodeplan.InstanceType, len(its))
	for _, it := range its {
		m[it.Name] = it
	}
	return m
}
