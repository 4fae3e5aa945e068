package ec2

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestKubeReservedCPU(t *testing.T) {
	for cpus, want := range map[int64]int64{1: 60, 2: 70, 4: 80, 8: 90, 16: 110, 64: 230, 192: 550} {
		if got := KubeReservedCPU(cpus * 1000); got != want {
			t.Errorf("KubeReservedCPU(%d) = %d, want %d", cpus*1000, got, want)
		}
	}
}

// c5a2xlarge is the worked example of the reference: 8 vCPU, 16384 MiB, 4 ENIs × 15 IPv4.
var c5a2xlarge = TypeInfo{Name: "c5a.2xlarge", VCPUs: 8, MemoryMiB: 16384, Arch: "amd64", MaxENIs: 4, IPv4PerENI: 15, BranchENIs: 38}

func TestAllocatableOptions(t *testing.T) {
	q := resource.MustParse
	tests := []struct {
		name string
		opts CapacityOptions
		want map[string]string
	}{
		{"defaults", CapacityOptions{}, map[string]string{"cpu": "7910m", "memory": "14162Mi", "pods": "58", "ephemeral-storage": "17Gi", "vpc.amazonaws.com/pod-eni": "38"}},
		// AL2023 keeps the ENI-limited kube-reserved memory even with maxPods set.
		{"maxPods 110 AL2023", CapacityOptions{MaxPods: 110}, map[string]string{"cpu": "7910m", "memory": "14162Mi", "pods": "110", "ephemeral-storage": "17Gi", "vpc.amazonaws.com/pod-eni": "38"}},
		{"maxPods 110 Bottlerocket", CapacityOptions{Family: "Bottlerocket", MaxPods: 110}, map[string]string{"cpu": "7910m", "memory": "13590Mi", "pods": "110", "ephemeral-storage": "17Gi", "vpc.amazonaws.com/pod-eni": "38"}},
		{"no VM overhead", CapacityOptions{VMMemoryOverhead: -1}, map[string]string{"cpu": "7910m", "memory": "15391Mi", "pods": "58", "ephemeral-storage": "17Gi", "vpc.amazonaws.com/pod-eni": "38"}},
		{"podsPerCore", CapacityOptions{PodsPerCore: 2, Family: "Custom"}, map[string]string{"cpu": "7910m", "memory": "14624Mi", "pods": "16", "ephemeral-storage": "17Gi", "vpc.amazonaws.com/pod-eni": "38"}},
		{"reservations and eviction", CapacityOptions{
			KubeReserved:   corev1.ResourceList{"cpu": q("200m")},
			SystemReserved: corev1.ResourceList{"memory": q("100Mi")},
			EvictionHard:   map[string]string{"memory.available": "5%", "nodefs.available": "1Gi"},
			RootVolume:     q("100Gi"),
		}, map[string]string{"cpu": "7800m", "memory": "14055374848", "pods": "58", "ephemeral-storage": "98Gi", "vpc.amazonaws.com/pod-eni": "38"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.opts.Validate(); err != nil {
				t.Fatal(err)
			}
			capacity := Capacity(c5a2xlarge, tt.opts)
			alloc := subtract(capacity, Overhead(c5a2xlarge, tt.opts, capacity))
			if diff := cmp.Diff(quantities(tt.want), resourceMap(alloc), equateQuantities); diff != "" {
				t.Errorf("allocatable mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func subtract(capacity corev1.ResourceList, o interface{ Total() corev1.ResourceList }) corev1.ResourceList {
	out := capacity.DeepCopy()
	for k, v := range o.Total() {
		q := out[k]
		q.Sub(v)
		out[k] = q
	}
	return out
}

func TestCapacityOptionsValidate(t *testing.T) {
	bad := CapacityOptions{Family: "Windows95", MaxPods: -1, VMMemoryOverhead: 1.5, EvictionHard: map[string]string{"memory.available": "lots", "pid.available": "1"}}
	err := bad.Validate()
	if err == nil {
		t.Fatal("Validate() = nil, want errors")
	}
	for _, want := range []string{"Family", "MaxPods", "VMMemoryOverhead", "memory.available", "pid.available"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want a mention of %s", err, want)
		}
	}
}
