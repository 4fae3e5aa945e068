package nodeplan

import (
	corev1 "k8s.io/api/core/v1"
)

// InstanceType is a kind of machine a node can be launched as, with everything the solver needs:
// its labels, its resources and where and how it can be bought.
type InstanceType struct {
	// Name is the cloud's name for the type, e.g. m5.large.
	Name string
	// Labels are the labels a node of this type gets, independent of where it runs: arch, os,
	// instance-type and the karpenter.k8s.aws/instance-* family. Zone and capacity type come
	// from the offering.
	Labels map[string]string
	// Capacity is what the machine has: cpu, memory, pods, ephemeral-storage and extended
	// resources (nvidia.com/gpu, vpc.amazonaws.com/pod-eni…).
	Capacity corev1.ResourceList
	// Overhead is what the kubelet and system keep for themselves.
	Overhead Overhead
	// Offerings are the (zone, capacity type) pairs the type can be bought in, with prices.
	Offerings []Offering
}

// Overhead is the part of a node's capacity pods cannot use.
type Overhead struct {
	KubeReserved      corev1.ResourceList
	SystemReserved    corev1.ResourceList
	EvictionThreshold corev1.ResourceList
}

// Total returns the sum of the three.
func (o Overhead) Total() corev1.ResourceList {
	return AddResources(AddResources(o.KubeReserved, o.SystemReserved), o.EvictionThreshold)
}

// Allocatable returns what pods can use on a node of this type: capacity minus overhead, floored
// at zero. DaemonSet pods come out of this too; the solver subtracts them per node.
func (it *InstanceType) Allocatable() corev1.ResourceList {
	return SubtractResources(it.Capacity, it.Overhead.Total())
}

// Requirements returns what a node of this type may be: its labels, plus the zones and capacity
// types of its available offerings.
func (it *InstanceType) Requirements() Requirements {
	rs := RequirementsFromLabels(it.Labels)
	var zones, cts []string
	for _, o := range it.Offerings {
		if o.Available {
			zones = append(zones, o.Zone)
			cts = append(cts, string(o.CapacityType))
		}
	}
	return rs.Add(In(LabelZone, zones...)).Add(In(LabelCapacityType, cts...))
}

// Offering is one way to buy an instance type: a zone and a capacity type, at a price.
type Offering struct {
	Zone         string
	CapacityType CapacityType
	// Price is in USD per hour. A price is never zero for a real offering: an offering whose
	// price is unknown is not Available.
	Price float64
	// Available is false while the cloud cannot supply the offering (recent capacity errors, no
	// price, no subnet in the zone).
	Available bool
	// ReservationID names the capacity reservation of a reserved offering.
	ReservationID string `json:",omitempty"`
}

// Accepts reports whether a node launched through this offering satisfies the zone and
// capacity-type parts of rs.
func (o Offering) Accepts(rs Requirements) bool {
	if z, ok := rs.Get(LabelZone); ok && !z.Accepts(o.Zone, true) {
		return false
	}
	if c, ok := rs.Get(LabelCapacityType); ok && !c.Accepts(string(o.CapacityType), true) {
		return false
	}
	return true
}

// Cheapest returns the cheapest available offering of it that satisfies rs (ties: zone, then
// capacity type, so the choice is deterministic). ok is false when there is none.
func (it *InstanceType) Cheapest(rs Requirements) (best Offering, ok bool) {
	for _, o := range it.Offerings {
		if !o.Available || !o.Accepts(rs) {
			continue
		}
		if !ok || o.Price < best.Price || (o.Price == best.Price && (o.Zone < best.Zone ||
			(o.Zone == best.Zone && o.CapacityType < best.CapacityType))) {
			best, ok = o, true
		}
	}
	return best, ok
}
