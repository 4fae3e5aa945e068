package cloudprovider

import (
	"maps"
	"slices"

	"github.com/nodeplan/nodeplan"
	corev1 "k8s.io/api/core/v1"
)

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
