package nodeplan

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Two NodeClaims as `kubectl get nodeclaims -o yaml` prints them from Karpenter v1: one
// launched whose node has not registered, one still waiting for the cloud.
const nodeClaimsYAML = `apiVersion: v1
kind: List
items:
- apiVersion: karpenter.sh/v1
  kind: NodeClaim
  metadata:
    name: default-x7k2p
    uid: 0b0d5a57-2f0c-4d84-9a4e-6d3f8f4e9a10
    labels:
      karpenter.sh/nodepool: default
      node.kubernetes.io/instance-type: m5.large
      topology.kubernetes.io/zone: us-east-1a
      karpenter.sh/capacity-type: spot
      team: web
    annotations:
      karpenter.sh/nodepool-hash: "123"
    finalizers: [karpenter.sh/termination]
  spec:
    expireAfter: 720h
    nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
    requirements:
    - {key: karpenter.sh/nodepool, operator: In, values: [default]}
    - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge], minValues: 2}
    - {key: kubernetes.io/os, operator: In, values: [linux, windows]}
    resources:
      requests: {cpu: 1500m, pods: "3"}
    taints:
    - {key: dedicated, value: web, effect: NoSchedule}
    startupTaints:
    - {key: node.cilium.io/agent-not-ready, value: "true", effect: NoExecute}
  status:
    providerID: aws:///us-east-1a/i-0123456789abcdef0
    imageID: ami-0abc
    capacity: {cpu: "2", memory: 8Gi, pods: "29"}
    allocatable: {cpu: 1930m, memory: 7Gi, pods: "29"}
    conditions:
    - {type: Launched, status: "True", reason: Launched, message: "", lastTransitionTime: "2026-12-07T10:00:00Z"}
    - {type: Registered, status: Unknown, reason: NodeNotFound, message: "Node not registered with cluster", lastTransitionTime: "2026-12-07T10:00:00Z"}
- apiVersion: karpenter.sh/v1
  kind: NodeClaim
  metadata:
    name: default-q9w4z
    labels: {karpenter.sh/nodepool: default}
    deletionTimestamp: "2026-12-07T10:05:00Z"
  spec:
    expireAfter: Never
    nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
    requirements:
    - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.large]}
    resources:
      requests: {cpu: 500m}
`

func TestDecodeNodeClaims(t *testing.T) {
	got, err := DecodeNodeClaims([]byte(nodeClaimsYAML))
	if err != nil {
		t.Fatalf("DecodeNodeClaims() error = %v, want nil", err)
	}
	deleted := time.Date(2026, 12, 7, 10, 5, 0, 0, time.UTC)
	it := In(LabelInstanceType, "m5.large", "m5.xlarge")
	it.MinValues = 2
	want := []NodeClaim{{
		Name:                "default-x7k2p",
		NodePool:            "default",
		NodeClassRef:        NodeClassRef{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		Requirements:        NewRequirements(In(LabelNodePool, "default"), it, In(LabelOS, "linux", "windows")),
		InstanceTypeOptions: []string{"m5.large", "m5.xlarge"},
		Labels: map[string]string{LabelNodePool: "default", LabelInstanceType: "m5.large", LabelZone: "us-east-1a",
			LabelCapacityType: "spot", "team": "web"},
		Annotations:   map[string]string{"karpenter.sh/nodepool-hash": "123"},
		Taints:        []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}},
		StartupTaints: []corev1.Taint{{Key: "node.cilium.io/agent-not-ready", Value: "true", Effect: corev1.TaintEffectNoExecute}},
		Resources:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourcePods: resource.MustParse("3")},
		ExpireAfter:   720 * time.Hour,
		Status: NodeClaimStatus{
			ProviderID: "aws:///us-east-1a/i-0123456789abcdef0", ImageID: "ami-0abc",
			InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: CapacityTypeSpot,
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"),
				corev1.ResourcePods: resource.MustParse("29")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m"), corev1.ResourceMemory: resource.MustParse("7Gi"),
				corev1.ResourcePods: resource.MustParse("29")},
			LaunchTime: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC),
		},
	}, {
		Name:                "default-q9w4z",
		NodePool:            "default",
		NodeClassRef:        NodeClassRef{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		Requirements:        NewRequirements(In(LabelInstanceType, "c5.large")),
		InstanceTypeOptions: []string{"c5.large"},
		Labels:              map[string]string{LabelNodePool: "default"},
		Resources:           corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
		ExpireAfter:         Never,
		DeletionTimestamp:   &deleted,
	}}
	opts := cmp.Options{cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
		cmp.Comparer(Requirements.Equal),
		cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })}
	if diff := cmp.Diff(want, got, opts); diff != "" {
		t.Errorf("DecodeNodeClaims() mismatch (-want +got):\n%s", diff)
	}
}

func TestDecodeNodeClaimsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"bad version and operator", `apiVersion: karpenter.sh/v1beta1
kind: NodeClaim
metadata: {name: a}
spec:
  requirements: [{key: zone, operator: Near, values: [x]}]
`, []string{`NodeClaim "a"`, "apiVersion", "spec.requirements[0]"}},
		{"duplicate names", `apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: a}
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: a}
`, []string{`NodeClaim "a"`, "metadata.name"}},
		{"minValues above values", `apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: b}
spec:
  expireAfter: soon
  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large], minValues: 2}]
`, []string{"spec.requirements[0].minValues", "spec.expireAfter"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeNodeClaims([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("DecodeNodeClaims(%s) = %v, nil; want an error", tc.name, got)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("DecodeNodeClaims(%s) error = %v, want it to name %q", tc.name, err, w)
				}
			}
		})
	}
}
