package cloudprovider

import (
	"maps"
	"slices"

	"github.com/nodeplan/nodeplan"
	corev1 "k8s.io/api/core/v1"
)

// cloneClaim returns a copy of c that shares no mutable memory with it. Requirements is an
// immutable value and is shared.
func cloneClaim(c *nodeplan.NodeClaim) *nodeplan.NodeClaim {
	out := *c
	out.InstanceTypeOptions = slices.Clone(c.InstanceTypeOptions)
	out.Labels = maps.Clone(c.Labels)
	out.Annotations = maps.Clone(c.Annotations)
	out.Taints = cloneTaints(c.Taints)
	out.StartupTaints = cloneTaints(c.StartupTaints)
	out.Resources = cloneResources(c.Resources)
	out.Status.Capacity = cloneResources(c.Status.Capacity)
	out.Status.Allocatable = cloneResources(c.Status.Allocatable)
	return &out
}

func cloneTaints(ts []corev1.Taint) []corev1.Taint {
	if ts == nil {
		return nil
	}
	out := make([]corev1.Taint, len(ts))
	for i := range ts {
		ts[i].DeepCopyInto(&out[i])
	}
	return out
}

func cloneResources(rl corev1.ResourceList) corev1.ResourceList {
	if rl == nil {
		return nil
	}
	return rl.DeepCopy()
}

func cloneInstanceType(it *nodeplan.InstanceType) nodeplan.InstanceType {
	return nodeplan.InstanceType{
		Name:     it.Name,
		Labels:   maps.Clone(it.Labels),
		Capacity: cloneResources(it.Capacity),
		Overhead: nodeplan.Overhead{
			KubeReserved:      cloneResources(it.Overhead.KubeReserved),
			SystemReserved:    cloneResources(it.Overhead.SystemReserved),
			EvictionThreshold: cloneResources(it.Overhead.EvictionThreshold),
		},
		Offerings: slices.Clone(it.Offerings),
	}
}
