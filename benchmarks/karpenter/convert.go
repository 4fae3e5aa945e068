package main

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	v1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	kscheduling "sigs.k8s.io/karpenter/pkg/scheduling"
	"sigs.k8s.io/karpenter/pkg/utils/daemonset"
	nodepoolutils "sigs.k8s.io/karpenter/pkg/utils/nodepool"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// problem is a scenario in Karpenter's types, converted once and reused by every run.
type problem struct {
	pools   []*v1.NodePool
	types   map[string][]*cloudprovider.InstanceType
	daemons []*corev1.Pod
	pods    []*corev1.Pod
}

// awsLabelDomain is the label domain Karpenter's AWS provider registers as well known.
const awsLabelDomain = "karpenter.k8s.aws/"

// registerProviderLabels does what the AWS provider does at start-up: it makes its
// instance-type labels well known, so pods and pools may select on them and instance types
// that lack one are treated as not having it.
func registerProviderLabels(catalog []nodeplan.InstanceType) []string {
	var keys []string
	for _, it := range catalog {
		for k := range it.Labels {
			if strings.HasPrefix(k, awsLabelDomain) && !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	v1.WellKnownLabels.Insert(keys...)
	return keys
}

// convert builds Karpenter's view of in: NodePools sorted by weight as its provisioner sorts
// them, one cloudprovider.InstanceType per catalog entry (shared by every pool that draws from
// the same list), and one pod per DaemonSet.
func convert(in scheduling.Input, providerKeys []string) (*problem, error) {
	p := &problem{types: map[string][]*cloudprovider.InstanceType{}, pods: in.Pods}
	if len(in.Nodes) > 0 || len(in.NodeClaims) > 0 {
		return nil, fmt.Errorf("karpenter: existing nodes and claims are not converted")
	}
	shared := instanceTypes(in.InstanceTypes, providerKeys)
	for _, np := range in.NodePools {
		pool, err := nodePool(np)
		if err != nil {
			return nil, err
		}
		p.pools = append(p.pools, pool)
		if its, ok := in.PoolInstanceTypes[np.Name]; ok {
			p.types[np.Name] = instanceTypes(its, providerKeys)
		} else {
			p.types[np.Name] = shared
		}
	}
	nodepoolutils.OrderByWeight(p.pools)
	for _, ds := range in.DaemonSets {
		p.daemons = append(p.daemons, daemonset.PodForDaemonSet(ds))
	}
	return p, nil
}

// nodePool converts a nodeplan NodePool into a karpenter.sh/v1 NodePool.
func nodePool(np nodeplan.NodePool) (*v1.NodePool, error) {
	out := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: np.Name, UID: types.UID("nodepool-" + np.Name)},
		Spec: v1.NodePoolSpec{
			Limits: v1.Limits(np.Limits.DeepCopy()),
			Template: v1.NodeClaimTemplate{
				ObjectMeta: v1.ObjectMeta{Labels: np.Template.Labels, Annotations: np.Template.Annotations},
				Spec: v1.NodeClaimTemplateSpec{
					Taints:        np.Template.Taints,
					StartupTaints: np.Template.StartupTaints,
					NodeClassRef: &v1.NodeClassReference{
						Group: np.Template.NodeClassRef.Group,
						Kind:  np.Template.NodeClassRef.Kind,
						Name:  np.Template.NodeClassRef.Name,
					},
				},
			},
		},
	}
	if np.Weight != 0 {
		w := np.Weight
		out.Spec.Weight = &w
	}
	for _, r := range np.Template.Requirements.All() {
		for _, e := range r.NodeSelectorRequirements() {
			req := v1.NodeSelectorRequirementWithMinValues{Key: e.Key, Operator: e.Operator, Values: e.Values}
			if r.MinValues > 0 {
				mv := r.MinValues
				req.MinValues = &mv
			}
			out.Spec.Template.Spec.Requirements = append(out.Spec.Template.Spec.Requirements, req)
		}
	}
	if _, ok := np.Limits[nodeplan.ResourceNodes]; ok {
		return nil, fmt.Errorf("karpenter: NodePool %s: a node-count limit is not converted", np.Name)
	}
	return out, nil
}

// instanceTypes converts a catalog the way Karpenter's AWS provider describes instance types:
// a requirement for every label (In its value), DoesNotExist for each provider label the type
// lacks, zone and capacity type In the values its available offerings have, and one offering
// per (zone, capacity type) with its price.
func instanceTypes(catalog []nodeplan.InstanceType, providerKeys []string) []*cloudprovider.InstanceType {
	out := make([]*cloudprovider.InstanceType, 0, len(catalog))
	for _, it := range catalog {
		reqs := kscheduling.NewRequirements()
		for _, k := range providerKeys {
			if _, ok := it.Labels[k]; !ok {
				reqs.Add(kscheduling.NewRequirement(k, corev1.NodeSelectorOpDoesNotExist))
			}
		}
		for k, v := range it.Labels {
			reqs.Add(kscheduling.NewRequirement(k, corev1.NodeSelectorOpIn, v))
		}
		if _, ok := it.Labels[corev1.LabelInstanceTypeStable]; !ok {
			reqs.Add(kscheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, it.Name))
		}
		var zones, cts []string
		var offerings cloudprovider.Offerings
		for _, o := range it.Offerings {
			offerings = append(offerings, &cloudprovider.Offering{
				Requirements: kscheduling.NewRequirements(
					kscheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, o.Zone),
					kscheduling.NewRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, string(o.CapacityType)),
				),
				Price:     o.Price,
				Available: o.Available,
			})
			if o.Available {
				zones = append(zones, o.Zone)
				cts = append(cts, string(o.CapacityType))
			}
		}
		reqs.Add(kscheduling.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...))
		reqs.Add(kscheduling.NewRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, cts...))
		reqs.Add(kscheduling.NewRequirement(corev1.LabelWindowsBuild, corev1.NodeSelectorOpDoesNotExist))
		out = append(out, &cloudprovider.InstanceType{
			Name:         it.Name,
			Requirements: reqs,
			Offerings:    offerings,
			Capacity:     it.Capacity.DeepCopy(),
			Overhead: &cloudprovider.InstanceTypeOverhead{
				KubeReserved:      it.Overhead.KubeReserved.DeepCopy(),
				SystemReserved:    it.Overhead.SystemReserved.DeepCopy(),
				EvictionThreshold: it.Overhead.EvictionThreshold.DeepCopy(),
			},
		})
	}
	return out
}
