package ec2

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/nodeplan/nodeplan"
	corev1 "k8s.io/api/core/v1"
)

// nodeKubelet is the kubelet configuration one node gets, in the kubelet's own field names
// (kubelet.config.k8s.io/v1beta1 KubeletConfiguration). It holds every kubelet setting of the
// node class, plus the values the capacity model computed for the node's instance type: the pod
// capacity, the kube-reserved amounts and the hard-eviction thresholds for memory and nodefs.
// Writing the computed values out, rather than leaving them to the image's own defaults, is
// what makes the allocatable the solver planned with the allocatable the kubelet reports.
type nodeKubelet struct {
	MaxPods                     int32             `json:"maxPods,omitempty"`
	PodsPerCore                 int32             `json:"podsPerCore,omitempty"`
	ClusterDNS                  []string          `json:"clusterDNS,omitempty"`
	KubeReserved                map[string]string `json:"kubeReserved,omitempty"`
	SystemReserved              map[string]string `json:"systemReserved,omitempty"`
	EvictionHard                map[string]string `json:"evictionHard,omitempty"`
	EvictionSoft                map[string]string `json:"evictionSoft,omitempty"`
	EvictionSoftGracePeriod     map[string]string `json:"evictionSoftGracePeriod,omitempty"`
	EvictionMaxPodGracePeriod   int32             `json:"evictionMaxPodGracePeriod,omitempty"`
	ImageGCHighThresholdPercent *int32            `json:"imageGCHighThresholdPercent,omitempty"`
	ImageGCLowThresholdPercent  *int32            `json:"imageGCLowThresholdPercent,omitempty"`
	CPUCFSQuota                 *bool             `json:"cpuCFSQuota,omitempty"`
}

// Eviction signals whose hard thresholds the kubelet subtracts from capacity to get allocatable.
const (
	signalMemory = "memory.available"
	signalNodefs = "nodefs.available"
)

// kubeletFor returns the kubelet configuration of a node of type it (as InstanceTypes described
// it under the class) launched from class nc. clusterDNS is the cluster's DNS address, used
// when the class sets none.
//
// The memory and nodefs hard-eviction thresholds are written as the absolute quantities the
// model subtracted (a percentage such as "10%" becomes the amount it is of the modelled
// capacity), so the kubelet cannot round them differently; every other signal is written as
// the class gives it.
func kubeletFor(it *nodeplan.InstanceType, nc *NodeClass, clusterDNS string) nodeKubelet {
	k := nc.Kubelet
	out := nodeKubelet{
		PodsPerCore:               k.PodsPerCore,
		ClusterDNS:                slices.Clone(k.ClusterDNS),
		KubeReserved:              quantityMap(it.Overhead.KubeReserved),
		SystemReserved:            quantityMap(it.Overhead.SystemReserved),
		EvictionHard:              maps.Clone(k.EvictionHard),
		EvictionSoft:              maps.Clone(k.EvictionSoft),
		EvictionMaxPodGracePeriod: k.EvictionMaxPodGracePeriod,
		CPUCFSQuota:               k.CPUCFSQuota,
	}
	if len(out.ClusterDNS) == 0 && clusterDNS != "" {
		out.ClusterDNS = []string{clusterDNS}
	}
	if q, ok := it.Capacity[corev1.ResourcePods]; ok {
		out.MaxPods = int32(min(q.Value(), 1<<31-1))
	}
	if out.EvictionHard == nil {
		out.EvictionHard = map[string]string{}
	}
	for signal, res := range map[string]corev1.ResourceName{signalMemory: corev1.ResourceMemory, signalNodefs: corev1.ResourceEphemeralStorage} {
		if q, ok := it.Overhead.EvictionThreshold[res]; ok {
			out.EvictionHard[signal] = q.String()
		}
	}
	if len(k.EvictionSoftGracePeriod) > 0 {
		out.EvictionSoftGracePeriod = map[string]string{}
		for s, d := range k.EvictionSoftGracePeriod {
			out.EvictionSoftGracePeriod[s] = d.String()
		}
	}
	if k.ImageGCHighThresholdPercent > 0 {
		v := k.ImageGCHighThresholdPercent
		out.ImageGCHighThresholdPercent = &v
	}
	if k.ImageGCLowThresholdPercent > 0 {
		v := k.ImageGCLowThresholdPercent
		out.ImageGCLowThresholdPercent = &v
	}
	return out
}

// key identifies the configuration, for grouping instance types that can share a userData.
func (k *nodeKubelet) key() string {
	b, _ := json.Marshal(k) // maps marshal in key order
	return string(b)
}

func quantityMap(rl corev1.ResourceList) map[string]string {
	if len(rl) == 0 {
		return nil
	}
	out := make(map[string]string, len(rl))
	for name, q := range rl {
		out[string(name)] = q.String()
	}
	return out
}
