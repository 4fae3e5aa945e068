// Package ec2 implements [cloudprovider.Provider] for Amazon EC2 with aws-sdk-go-v2, for EKS
// and for self-managed (kubeadm) clusters alike.
//
// The capacity model — what each instance type holds and what the kubelet keeps — reproduces
// Karpenter's AWS provider exactly, so a solver plans with the same allocatable a Karpenter
// cluster would see (see [Capacity], [Overhead] and [NewInstanceType]). Its assumptions are
// configurable through [CapacityOptions]: clusters with overlay CNIs set MaxPods, and clusters
// that measured their VM memory overhead set VMMemoryOverhead.
package ec2
