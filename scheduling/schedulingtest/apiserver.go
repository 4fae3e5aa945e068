package schedulingtest

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan/internal/apiserverpod"
)

// APIServerShaped returns a copy of p shaped exactly as a kube-apiserver v1.37 returns a pod a
// Deployment's ReplicaSet created: the defaults of pkg/apis/core/v1 (dnsPolicy, restartPolicy,
// schedulerName, enableServiceLinks, terminationGracePeriodSeconds, securityContext,
// imagePullPolicy, terminationMessage*, requests from limits, quantities rounded up to milli-units,
// port protocols, probe and volume defaults), the DefaultTolerationSeconds admission plugin (the
// not-ready and unreachable NoExecute tolerations with tolerationSeconds 300), the Priority
// plugin (priority 0 and PreemptLowerPriority when there is no class), the ServiceAccount plugin
// (serviceAccountName "default" and the projected kube-api-access token volume mounted in every
// container), the pod strategy at creation (generation 1, matchLabelKeys merged into selectors,
// pod-level requests defaulted, the QoS class), the ReplicaSet controller's metadata
// (generateName-derived name, pod-template-hash label, controller owner reference, uid,
// resourceVersion, creationTimestamp, managedFields) and the status kube-scheduler writes for a
// pod it cannot place (PodScheduled=False, reason Unschedulable). A pod with a node name gets a
// running pod's status instead, with its containers' allocated resources.
//
// The result is deterministic. Use [APIServerShapedPods] for a set of pods: it keeps their
// generated names distinct.
func APIServerShaped(p *corev1.Pod) *corev1.Pod { return apiserverpod.Shape(p) }

// APIServerShapedPods shapes every pod as [APIServerShaped] does, with distinct names.
func APIServerShapedPods(pods []*corev1.Pod) []*corev1.Pod { return apiserverpod.ShapeAll(pods) }
