package check_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/check"
)

func rl(cpu, mem string) corev1.ResourceList {
	out := corev1.ResourceList{}
	if cpu != "" {
		out[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		out[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return out
}

func withPods(r corev1.ResourceList, n int64) corev1.ResourceList {
	r[corev1.ResourcePods] = *resource.NewQuantity(n, resource.DecimalSI)
	return r
}

func pod(key, cpu, mem string) *corev1.Pod {
	ns, name, _ := strings.Cut(key, "/")
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: rl(cpu, mem)}}}},
	}
}

func itype(name, arch, cpu, mem string, offerings ...nodeplan.Offering) nodeplan.InstanceType {
	capacity := rl(cpu, mem)
	capacity[corev1.ResourcePods] = resource.MustParse("110")
	return nodeplan.InstanceType{
		Name:      name,
		Labels:    map[string]string{nodeplan.LabelArch: arch, nodeplan.LabelInstanceType: name, nodeplan.LabelOS: "linux"},
		Capacity:  capacity,
		Overhead:  nodeplan.Overhead{KubeReserved: rl("100m", "256Mi")},
		Offerings: offerings,
	}
}

func off(zone string, ct nodeplan.CapacityType, price float64) nodeplan.Offering {
	return nodeplan.Offering{Zone: zone, CapacityType: ct, Price: price, Available: true}
}

const (
	od   = nodeplan.CapacityTypeOnDemand
	spot = nodeplan.CapacityTypeSpot
)

// base returns a small input and a result that keeps every rule: pods a and b on a new claim
// (small, zone-a spot, $0.04), pod c on the existing node-1.
func base() (scheduling.Input, scheduling.Result) {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "logs"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "logs"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "logs",
				Resources: corev1.ResourceRequirements{Requests: rl("100m", "128Mi")}}}},
		}},
	}
	dsPod := pod("kube-system/logs-x", "100m", "128Mi")
	dsPod.Labels = map[string]string{"app": "logs"}
	dsPod.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "logs"}}
	bound := pod("kube-system/bound-1", "500m", "512Mi")
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{
			nodeplan.LabelZone: "zone-a", nodeplan.LabelHostname: "node-1", nodeplan.LabelNodePool: "default",
			nodeplan.LabelArch: "amd64", nodeplan.LabelCapacityType: "on-demand", "team": "infra"}},
		Status: corev1.NodeStatus{Capacity: rl("2", "4Gi"), Allocatable: rl("2", "4Gi")},
	}
	node.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("110")
	poolReqs := nodeplan.NewRequirements(nodeplan.In(nodeplan.LabelCapacityType, "on-demand", "spot"))
	in := scheduling.Input{
		Pods: []*corev1.Pod{pod("default/a", "1", "1Gi"), pod("default/b", "500m", "512Mi"), pod("default/c", "200m", "256Mi")},
		NodePools: []nodeplan.NodePool{{Name: "default", Template: nodeplan.NodeClaimTemplate{
			Labels: map[string]string{"team": "infra"}, Requirements: poolReqs}}},
		InstanceTypes: []nodeplan.InstanceType{
			itype("small", "amd64", "2", "4Gi", off("zone-a", od, 0.10), off("zone-a", spot, 0.04), off("zone-b", od, 0.10), off("zone-b", spot, 0.05)),
			itype("large", "amd64", "4", "8Gi", off("zone-a", od, 0.20), off("zone-a", spot, 0.08), off("zone-b", od, 0.20), off("zone-b", spot, 0.09)),
		},
		DaemonSets: []*appsv1.DaemonSet{ds},
		Nodes:      []scheduling.Node{{Node: node, Pods: []*corev1.Pod{bound, dsPod}}},
	}
	claimReqs := poolReqs.Add(nodeplan.In(nodeplan.LabelNodePool, "default"))
	res := scheduling.Result{
		NodeClaims: []scheduling.NewNodeClaim{{
			NodeClaim: nodeplan.NodeClaim{
				Name: "default-1", NodePool: "default", Requirements: claimReqs,
				InstanceTypeOptions: []string{"small", "large"},
				Labels:              map[string]string{"team": "infra"},
				Resources:           withPods(rl("1600m", "1664Mi"), 3),
			},
			Pods:         []string{"default/a", "default/b"},
			InstanceType: "small",
			Offering:     off("zone-a", spot, 0.04),
		}},
		Existing:   []scheduling.Placement{{Name: "node-1", Pods: []string{"default/c"}}},
		Cost:       0.04,
		LowerBound: 0.03,
	}
	return in, res
}

func findPod(in *scheduling.Input, key string) *corev1.Pod {
	for _, p := range in.Pods {
		if nodeplan.PodKey(p) == key {
			return p
		}
	}
	panic("no pod " + key)
}

func setCPU(p *corev1.Pod, cpu string) {
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
}

func hostPort(p *corev1.Pod, ip string, port int32) {
	p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, HostIP: ip})
}

func spread(key string, maxSkew int32, app string) corev1.TopologySpreadConstraint {
	return corev1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}
}

func term(key, app string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}
}

// web relabels pods a and b as app=web.
func web(in *scheduling.Input) (a, b *corev1.Pod) {
	a, b = findPod(in, "default/a"), findPod(in, "default/b")
	a.Labels["app"], b.Labels["app"] = "web", "web"
	return a, b
}

func TestResult(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(in *scheduling.Input, res *scheduling.Result)
		want   []check.Rule // exactly these rules are broken; none for a valid result
	}{
		{"valid", func(in *scheduling.Input, res *scheduling.Result) {}, nil},
		{"pod missing", func(in *scheduling.Input, res *scheduling.Result) { res.Existing = nil },
			[]check.Rule{check.RuleAccounted}},
		{"pod twice", func(in *scheduling.Input, res *scheduling.Result) {
			res.Unschedulable = []scheduling.Unschedulable{{Pod: "default/c", Code: scheduling.ReasonLimit, Message: "x"}}
		}, []check.Rule{check.RuleAccounted}},
		{"unknown pod", func(in *scheduling.Input, res *scheduling.Result) {
			res.Existing[0].Pods = append(res.Existing[0].Pods, "default/zz")
		}, []check.Rule{check.RuleAccounted}},
		{"unschedulable without reason", func(in *scheduling.Input, res *scheduling.Result) {
			res.Existing = nil
			res.Unschedulable = []scheduling.Unschedulable{{Pod: "default/c"}}
		}, []check.Rule{check.RuleAccounted}},
		{"bound pod moved", func(in *scheduling.Input, res *scheduling.Result) {
			res.Existing[0].Pods = []string{"default/c", "kube-system/bound-1"}
		}, []check.Rule{check.RuleBoundPod}},
		{"pending pod with nodeName is bound", func(in *scheduling.Input, res *scheduling.Result) {
			findPod(in, "default/c").Spec.NodeName = "node-1"
		}, []check.Rule{check.RuleBoundPod}},
		{"unknown node", func(in *scheduling.Input, res *scheduling.Result) { res.Existing[0].Name = "node-9" },
			[]check.Rule{check.RuleTarget}},
		{"node being deleted", func(in *scheduling.Input, res *scheduling.Result) {
			in.Nodes[0].Node.DeletionTimestamp = &metav1.Time{}
		}, []check.Rule{check.RuleTarget}},
		{"unknown in-flight claim", func(in *scheduling.Input, res *scheduling.Result) {
			res.Existing = nil
			res.InFlight = []scheduling.Placement{{Name: "nc-9", Pods: []string{"default/c"}}}
		}, []check.Rule{check.RuleTarget}},
		{"claim pods overflow", func(in *scheduling.Input, res *scheduling.Result) {
			setCPU(findPod(in, "default/a"), "1500m")
			res.NodeClaims[0].Resources = withPods(rl("2100m", "1664Mi"), 3)
		}, []check.Rule{check.RuleResources}},
		{"daemonset overhead tips the claim over", func(in *scheduling.Input, res *scheduling.Result) {
			in.DaemonSets[0].Spec.Template.Spec.Containers[0].Resources.Requests = rl("500m", "128Mi")
			in.Nodes[0].Pods[1].Spec.Containers[0].Resources.Requests = rl("500m", "128Mi")
		}, []check.Rule{check.RuleResources}},
		{"daemonset selecting other nodes costs nothing", func(in *scheduling.Input, res *scheduling.Result) {
			in.DaemonSets[0].Spec.Template.Spec.Containers[0].Resources.Requests = rl("500m", "128Mi")
			in.DaemonSets[0].Spec.Template.Spec.NodeSelector = map[string]string{nodeplan.LabelArch: "arm64"}
		}, nil},
		{"daemonset not tolerating the pool taint costs nothing", func(in *scheduling.Input, res *scheduling.Result) {
			taint := corev1.Taint{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}
			in.NodePools[0].Template.Taints = []corev1.Taint{taint}
			for _, k := range []string{"default/a", "default/b"} {
				findPod(in, k).Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
			}
			in.DaemonSets[0].Spec.Template.Spec.Containers[0].Resources.Requests = rl("500m", "128Mi")
			in.Nodes[0].Pods[1].Spec.Containers[0].Resources.Requests = rl("500m", "128Mi")
		}, nil},
		{"an option too small", func(in *scheduling.Input, res *scheduling.Result) {
			in.InstanceTypes = append(in.InstanceTypes, itype("tiny", "amd64", "1", "4Gi", off("zone-a", od, 0.30)))
			res.NodeClaims[0].InstanceTypeOptions = []string{"small", "large", "tiny"}
		}, []check.Rule{check.RuleResources}},
		{"existing node overflows", func(in *scheduling.Input, res *scheduling.Result) {
			setCPU(findPod(in, "default/c"), "1500m")
		}, []check.Rule{check.RuleResources}},
		{"daemonset not yet running counts on an existing node", func(in *scheduling.Input, res *scheduling.Result) {
			in.Nodes[0].Pods = in.Nodes[0].Pods[:1]   // 500m bound; 2 cpu allocatable
			setCPU(findPod(in, "default/c"), "1450m") // + 100m daemon = 2050m
		}, []check.Rule{check.RuleResources}},
		{"terminal bound pods free their room", func(in *scheduling.Input, res *scheduling.Result) {
			in.Nodes[0].Pods[0].Status.Phase = corev1.PodSucceeded
			setCPU(findPod(in, "default/c"), "1800m") // 100m daemon + 1800m
		}, nil},
		{"nodeSelector zone mismatch", func(in *scheduling.Input, res *scheduling.Result) {
			findPod(in, "default/a").Spec.NodeSelector = map[string]string{nodeplan.LabelZone: "zone-b"}
		}, []check.Rule{check.RuleNodeAffinity}},
		{"nodeSelector on a pool label", func(in *scheduling.Input, res *scheduling.Result) {
			findPod(in, "default/a").Spec.NodeSelector = map[string]string{"team": "infra", nodeplan.LabelNodePool: "default"}
		}, nil},
		{"an option of another arch", func(in *scheduling.Input, res *scheduling.Result) {
			in.InstanceTypes[1].Labels[nodeplan.LabelArch] = "arm64"
			findPod(in, "default/a").Spec.NodeSelector = map[string]string{nodeplan.LabelArch: "amd64"}
		}, []check.Rule{check.RuleNodeAffinity}},
		{"required affinity terms are ORed", func(in *scheduling.Input, res *scheduling.Result) {
			findPod(in, "default/a").Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
					{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: nodeplan.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-b"}}}},
					{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: nodeplan.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}}}},
				}}}}
		}, nil},
		{"required affinity expressions are ANDed", func(in *scheduling.Input, res *scheduling.Result) {
			findPod(in, "default/c").Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
					{MatchExpressions: []corev1.NodeSelectorRequirement{
						{Key: nodeplan.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}},
						{Key: "gpu", Operator: corev1.NodeSelectorOpExists},
					}},
				}}}}
		}, []check.Rule{check.RuleNodeAffinity}},
		{"pool taint not tolerated", func(in *scheduling.Input, res *scheduling.Result) {
			in.NodePools[0].Template.Taints = []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
		}, []check.Rule{check.RuleTaints}},
		{"startup taints need no toleration", func(in *scheduling.Input, res *scheduling.Result) {
			in.NodePools[0].Template.StartupTaints = []corev1.Taint{{Key: "cni", Effect: corev1.TaintEffectNoSchedule}}
		}, nil},
		{"node NoExecute taint not tolerated", func(in *scheduling.Input, res *scheduling.Result) {
			in.Nodes[0].Node.Spec.Taints = []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoExecute}}
		}, []check.Rule{check.RuleTaints}},
		{"cordoned node", func(in *scheduling.Input, res *scheduling.Result) { in.Nodes[0].Node.Spec.Unschedulable = true },
			[]check.Rule{check.RuleTaints}},
		{"offering unavailable", func(in *scheduling.Input, res *scheduling.Result) {
			in.InstanceTypes[0].Offerings[1].Available = false
		}, []check.Rule{check.RuleOffering}},
		{"offering not the cheapest", func(in *scheduling.Input, res *scheduling.Result) {
			res.NodeClaims[0].Offering = off("zone-a", od, 0.10)
			res.Cost = 0.10
		}, []check.Rule{check.RuleOffering}},
		{"an equally cheap offering is fine", func(in *scheduling.Input, res *scheduling.Result) {
			in.InstanceTypes[1].Offerings[1].Price = 0.04
		}, nil},
		{"offering outside the requirements", func(in *scheduling.Input, res *scheduling.Result) {
			res.NodeClaims[0].Requirements = res.NodeClaims[0].Requirements.Add(nodeplan.In(nodeplan.LabelCapacityType, "on-demand"))
		}, []check.Rule{check.RuleOffering}},
		{"offering of another price", func(in *scheduling.Input, res *scheduling.Result) {
			res.NodeClaims[0].Offering.Price = 0.03
			res.Cost = 0.03
		}, []check.Rule{check.RuleOffering}},
		{"chosen type not an option", func(in *scheduling.Input, res *scheduling.Result) {
			res.NodeClaims[0].InstanceTypeOptions = []string{"large"}
		}, []check.Rule{check.RuleOffering}},
		{"options not cheapest first", func(in *scheduling.Input, res *scheduling.Result) {
			res.NodeClaims[0].InstanceTypeOptions = []string{"large", "small"}
		}, []check.Rule{check.RuleOrder}},
		{"requirements wider than the pool's", func(in *scheduling.Input, res *scheduling.Result) {
			in.NodePools[0].Template.Requirements = in.NodePools[0].Template.Requirements.Add(nodeplan.In(nodeplan.LabelZone, "zone-a"))
		}, []check.Rule{check.RuleRequirements}},
		{"requirements narrower than the pool's", func(in *scheduling.Input, res *scheduling.Result) {
			res.NodeClaims[0].Requirements = res.NodeClaims[0].Requirements.Add(nodeplan.In(nodeplan.LabelZone, "zone-a"))
		}, nil},
		{"pool label missing", func(in *scheduling.Input, res *scheduling.Result) { res.NodeClaims[0].Labels = nil },
			[]check.Rule{check.RuleRequirements}},
		{"label contradicting the offering", func(in *scheduling.Input, res *scheduling.Result) {
			res.NodeClaims[0].Labels[nodeplan.LabelZone] = "zone-b"
		}, []check.Rule{check.RuleRequirements}},
		{"option outside the pool's catalog", func(in *scheduling.Input, res *scheduling.Result) {
			in.PoolInstanceTypes = map[string][]nodeplan.InstanceType{"default": in.InstanceTypes[:1]}
		}, []check.Rule{check.RuleRequirements}},
		{"option incompatible with the requirements", func(in *scheduling.Input, res *scheduling.Result) {
			res.NodeClaims[0].Requirements = res.NodeClaims[0].Requirements.Add(nodeplan.In(nodeplan.LabelInstanceType, "small"))
		}, []check.Rule{check.RuleRequirements}},
		{"claim Resources below its pods", func(in *scheduling.Input, res *scheduling.Result) {
			res.NodeClaims[0].Resources = rl("1", "1Gi")
		}, []check.Rule{check.RuleResources}},
		{"cpu limit", func(in *scheduling.Input, res *scheduling.Result) {
			in.NodePools[0].Limits = rl("3", "")
		}, []check.Rule{check.RuleLimits}},
		{"cpu limit met exactly", func(in *scheduling.Input, res *scheduling.Result) {
			in.NodePools[0].Limits = rl("4", "")
		}, nil},
		{"node limit", func(in *scheduling.Input, res *scheduling.Result) {
			in.NodePools[0].Limits = corev1.ResourceList{nodeplan.ResourceNodes: resource.MustParse("1")}
		}, []check.Rule{check.RuleLimits}},
		{"in-flight claims count toward limits", func(in *scheduling.Input, res *scheduling.Result) {
			in.NodePools[0].Limits = rl("6", "")
			in.NodeClaims = []nodeplan.NodeClaim{{Name: "nc-1", NodePool: "default", InstanceTypeOptions: []string{"small"},
				Status: nodeplan.NodeClaimStatus{Capacity: rl("2", "4Gi")}}}
		}, nil},
		{"in-flight claims count toward limits, over", func(in *scheduling.Input, res *scheduling.Result) {
			in.NodePools[0].Limits = rl("5", "")
			in.NodeClaims = []nodeplan.NodeClaim{{Name: "nc-1", NodePool: "default", InstanceTypeOptions: []string{"small"},
				Status: nodeplan.NodeClaimStatus{Capacity: rl("2", "4Gi")}}}
		}, []check.Rule{check.RuleLimits}},
		{"in-flight claim room", func(in *scheduling.Input, res *scheduling.Result) {
			in.NodeClaims = []nodeplan.NodeClaim{{Name: "nc-1", NodePool: "default", InstanceTypeOptions: []string{"small"},
				Labels: map[string]string{"team": "infra"}, Requirements: res.NodeClaims[0].Requirements,
				Resources: rl("1500m", "1Gi")}}
			res.Existing = nil
			res.InFlight = []scheduling.Placement{{Name: "nc-1", Pods: []string{"default/c"}}} // 1500m + 200m ≤ 1900m
		}, nil},
		{"in-flight claim overflows", func(in *scheduling.Input, res *scheduling.Result) {
			in.NodeClaims = []nodeplan.NodeClaim{{Name: "nc-1", NodePool: "default", InstanceTypeOptions: []string{"small"},
				Labels: map[string]string{"team": "infra"}, Requirements: res.NodeClaims[0].Requirements,
				Resources: rl("1800m", "1Gi")}}
			res.Existing = nil
			res.InFlight = []scheduling.Placement{{Name: "nc-1", Pods: []string{"default/c"}}}
		}, []check.Rule{check.RuleResources}},
		{"cost", func(in *scheduling.Input, res *scheduling.Result) { res.Cost = 0.05 }, []check.Rule{check.RuleCost}},
		{"cost with a node cost", func(in *scheduling.Input, res *scheduling.Result) {
			in.Options.NodeCost = scheduling.NodeCost{PerNode: 0.01, Pools: map[string]float64{"default": 0.005}}
			res.Cost += 0.015
			res.NodeCost = 0.015
		}, nil},
		{"node cost left out", func(in *scheduling.Input, res *scheduling.Result) {
			in.Options.NodeCost = scheduling.NodeCost{PerNode: 0.01}
		}, []check.Rule{check.RuleCost}},
		{"lower bound above cost", func(in *scheduling.Input, res *scheduling.Result) { res.LowerBound = 0.05 },
			[]check.Rule{check.RuleLowerBound}},
		{"negative lower bound", func(in *scheduling.Input, res *scheduling.Result) { res.LowerBound = -1 },
			[]check.Rule{check.RuleLowerBound}},
		{"claim pods unsorted", func(in *scheduling.Input, res *scheduling.Result) {
			res.NodeClaims[0].Pods = []string{"default/b", "default/a"}
		}, []check.Rule{check.RuleOrder}},
		{"placements unsorted", func(in *scheduling.Input, res *scheduling.Result) {
			in.Nodes = append(in.Nodes, scheduling.Node{Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"},
				Status: corev1.NodeStatus{Allocatable: withPods(rl("1", "1Gi"), 10)}}})
			in.Pods = append(in.Pods, pod("default/d", "100m", "100Mi"))
			res.Existing = append(res.Existing, scheduling.Placement{Name: "node-0", Pods: []string{"default/d"}})
		}, []check.Rule{check.RuleOrder}},
		{"unschedulable unsorted", func(in *scheduling.Input, res *scheduling.Result) {
			res.Existing = nil
			res.NodeClaims[0].Pods = []string{"default/a"}
			res.Unschedulable = []scheduling.Unschedulable{{Pod: "default/c", Code: "x", Message: "y"}, {Pod: "default/b", Code: "x", Message: "y"}}
		}, []check.Rule{check.RuleOrder}},
		{"claims out of weight order", func(in *scheduling.Input, res *scheduling.Result) {
			heavy := in.NodePools[0]
			heavy.Name, heavy.Weight = "heavy", 10
			in.NodePools = append(in.NodePools, heavy)
			c := res.NodeClaims[0]
			c.Name, c.NodePool, c.Pods = "heavy-1", "heavy", []string{"default/b"}
			c.Requirements = heavy.Template.Requirements.Add(nodeplan.In(nodeplan.LabelNodePool, "heavy"))
			res.NodeClaims[0].Pods = []string{"default/a"}
			res.NodeClaims = append(res.NodeClaims, c)
			res.Cost = 0.08
		}, []check.Rule{check.RuleOrder}},
		{"claim of an unknown pool", func(in *scheduling.Input, res *scheduling.Result) { res.NodeClaims[0].NodePool = "nope" },
			[]check.Rule{check.RuleClaim}},
		{"empty claim", func(in *scheduling.Input, res *scheduling.Result) {
			c := res.NodeClaims[0]
			c.Name, c.Pods = "default-2", nil
			res.NodeClaims = append(res.NodeClaims, c)
			res.Cost = 0.08
		}, []check.Rule{check.RuleClaim}},
		{"host port clash on a claim", func(in *scheduling.Input, res *scheduling.Result) {
			hostPort(findPod(in, "default/a"), "", 8080)
			hostPort(findPod(in, "default/b"), "10.0.0.1", 8080)
		}, []check.Rule{check.RuleHostPorts}},
		{"host ports on distinct IPs", func(in *scheduling.Input, res *scheduling.Result) {
			hostPort(findPod(in, "default/a"), "10.0.0.2", 8080)
			hostPort(findPod(in, "default/b"), "10.0.0.1", 8080)
		}, nil},
		{"host port clash with a daemonset", func(in *scheduling.Input, res *scheduling.Result) {
			in.DaemonSets[0].Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 9100, HostPort: 9100}}
			hostPort(findPod(in, "default/a"), "", 9100)
		}, []check.Rule{check.RuleHostPorts}},
		{"host port clash with a bound pod", func(in *scheduling.Input, res *scheduling.Result) {
			hostPort(in.Nodes[0].Pods[0], "", 53)
			hostPort(findPod(in, "default/c"), "", 53)
		}, []check.Rule{check.RuleHostPorts}},
		{"volume zone", func(in *scheduling.Input, res *scheduling.Result) {
			in.VolumeZones = map[string][]string{"default/a": {"zone-b"}, "default/c": {"zone-a"}}
		}, []check.Rule{check.RuleVolumeZone}},
		{"attach limit", func(in *scheduling.Input, res *scheduling.Result) {
			in.Nodes[0].AttachLimit, in.Nodes[0].VolumeCount = 2, 2
			findPod(in, "default/c").Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		}, []check.Rule{check.RuleAttachLimit}},
		{"zone spread skew", func(in *scheduling.Input, res *scheduling.Result) {
			a, b := web(in)
			a.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{spread(nodeplan.LabelZone, 1, "web")}
			b.Spec.TopologySpreadConstraints = a.Spec.TopologySpreadConstraints
		}, []check.Rule{check.RuleTopologySpread}},
		{"zone spread counts a placed pod that matches without carrying it", func(in *scheduling.Input, res *scheduling.Result) {
			// b binds first as often as not: kube-scheduler then sees 1 in a's zone, 0 in the other.
			a, _ := web(in)
			a.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{spread(nodeplan.LabelZone, 1, "web")}
		}, []check.Rule{check.RuleTopologySpread}},
		{"zone spread within skew", func(in *scheduling.Input, res *scheduling.Result) {
			a, b := web(in)
			a.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{spread(nodeplan.LabelZone, 2, "web")}
			b.Spec.TopologySpreadConstraints = a.Spec.TopologySpreadConstraints
		}, nil},
		{"zone spread with only one launchable zone", func(in *scheduling.Input, res *scheduling.Result) {
			a, b := web(in)
			a.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{spread(nodeplan.LabelZone, 1, "web")}
			b.Spec.TopologySpreadConstraints = a.Spec.TopologySpreadConstraints
			in.NodePools[0].Template.Requirements = in.NodePools[0].Template.Requirements.Add(nodeplan.In(nodeplan.LabelZone, "zone-a"))
			res.NodeClaims[0].Requirements = res.NodeClaims[0].Requirements.Add(nodeplan.In(nodeplan.LabelZone, "zone-a"))
		}, nil},
		{"zone spread counts running pods", func(in *scheduling.Input, res *scheduling.Result) {
			// zone-a already runs web; a and b make 3 there, zone-b has 0.
			in.Nodes[0].Pods[0].Labels["app"] = "web"
			in.Nodes[0].Pods[0].Namespace = "default"
			a, b := web(in)
			a.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{spread(nodeplan.LabelZone, 2, "web")}
			b.Spec.TopologySpreadConstraints = a.Spec.TopologySpreadConstraints
		}, []check.Rule{check.RuleTopologySpread}},
		{"spread ignores other namespaces", func(in *scheduling.Input, res *scheduling.Result) {
			in.Nodes[0].Pods[0].Labels["app"] = "web" // in kube-system
			a, b := web(in)
			a.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{spread(nodeplan.LabelZone, 2, "web")}
			b.Spec.TopologySpreadConstraints = a.Spec.TopologySpreadConstraints
		}, nil},
		{"hostname spread counts the empty existing node", func(in *scheduling.Input, res *scheduling.Result) {
			a, b := web(in)
			a.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{spread(nodeplan.LabelHostname, 1, "web")}
			b.Spec.TopologySpreadConstraints = a.Spec.TopologySpreadConstraints
		}, []check.Rule{check.RuleTopologySpread}},
		{"hostname spread honours node affinity", func(in *scheduling.Input, res *scheduling.Result) {
			a, b := web(in)
			a.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{spread(nodeplan.LabelHostname, 1, "web")}
			b.Spec.TopologySpreadConstraints = a.Spec.TopologySpreadConstraints
			a.Spec.NodeSelector = map[string]string{nodeplan.LabelCapacityType: "spot"}
			b.Spec.NodeSelector = a.Spec.NodeSelector
			res.NodeClaims[0].Requirements = res.NodeClaims[0].Requirements.Add(nodeplan.In(nodeplan.LabelCapacityType, "spot"))
		}, nil},
		{"minDomains", func(in *scheduling.Input, res *scheduling.Result) {
			a, b := web(in)
			tsc := spread(nodeplan.LabelZone, 2, "web")
			tsc.MinDomains = new(int32(3))
			a.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{tsc}
			b.Spec.TopologySpreadConstraints = a.Spec.TopologySpreadConstraints
		}, nil},
		{"minDomains above the domain count", func(in *scheduling.Input, res *scheduling.Result) {
			a, b := web(in)
			tsc := spread(nodeplan.LabelZone, 1, "web")
			tsc.MinDomains = new(int32(3))
			a.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{tsc}
			b.Spec.TopologySpreadConstraints = a.Spec.TopologySpreadConstraints
			in.NodePools[0].Template.Requirements = in.NodePools[0].Template.Requirements.Add(nodeplan.In(nodeplan.LabelZone, "zone-a"))
			res.NodeClaims[0].Requirements = res.NodeClaims[0].Requirements.Add(nodeplan.In(nodeplan.LabelZone, "zone-a"))
		}, []check.Rule{check.RuleTopologySpread}},
		{"ScheduleAnyway is a preference", func(in *scheduling.Input, res *scheduling.Result) {
			a, b := web(in)
			tsc := spread(nodeplan.LabelHostname, 1, "web")
			tsc.WhenUnsatisfiable = corev1.ScheduleAnyway
			a.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{tsc}
			b.Spec.TopologySpreadConstraints = a.Spec.TopologySpreadConstraints
		}, nil},
		{"anti-affinity on one claim", func(in *scheduling.Input, res *scheduling.Result) {
			a, _ := web(in)
			a.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nodeplan.LabelHostname, "web")}}}
		}, []check.Rule{check.RulePodAntiAffinity}},
		{"anti-affinity of a running pod", func(in *scheduling.Input, res *scheduling.Result) {
			web(in)
			in.Nodes[0].Pods[0].Namespace = "default"
			in.Nodes[0].Pods[0].Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nodeplan.LabelZone, "web")}}}
		}, []check.Rule{check.RulePodAntiAffinity}},
		{"anti-affinity of a running pod in another namespace", func(in *scheduling.Input, res *scheduling.Result) {
			web(in)
			in.Nodes[0].Pods[0].Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nodeplan.LabelZone, "web")}}}
		}, nil},
		{"anti-affinity through a namespaceSelector", func(in *scheduling.Input, res *scheduling.Result) {
			web(in)
			tm := term(nodeplan.LabelZone, "web")
			tm.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
			in.Namespaces = []*corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"env": "prod"}}}}
			in.Nodes[0].Pods[0].Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{tm}}}
		}, []check.Rule{check.RulePodAntiAffinity}},
		{"pod affinity without a partner", func(in *scheduling.Input, res *scheduling.Result) {
			findPod(in, "default/c").Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nodeplan.LabelZone, "db")}}}
		}, []check.Rule{check.RulePodAffinity}},
		{"pod affinity to a placed pod", func(in *scheduling.Input, res *scheduling.Result) {
			// a (app=a) is on the claim in zone-a; c on node-1 in zone-a wants app=a in its zone.
			findPod(in, "default/c").Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nodeplan.LabelZone, "a")}}}
		}, nil},
		{"pod affinity in another domain", func(in *scheduling.Input, res *scheduling.Result) {
			findPod(in, "default/c").Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nodeplan.LabelHostname, "a")}}}
		}, []check.Rule{check.RulePodAffinity}},
		{"self affinity bootstraps once", func(in *scheduling.Input, res *scheduling.Result) {
			a, b := web(in)
			a.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nodeplan.LabelHostname, "web")}}}
			b.Spec.Affinity = a.Spec.Affinity
		}, nil},
		{"affinities waiting on each other never bind", func(in *scheduling.Input, res *scheduling.Result) {
			// a wants b's label and b wants a's; neither matches its own term.
			a, b := findPod(in, "default/a"), findPod(in, "default/b")
			a.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nodeplan.LabelZone, "b")}}}
			b.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nodeplan.LabelZone, "a")}}}
		}, []check.Rule{check.RulePodAffinity}},
		{"a NoNewPods node takes no pods", func(in *scheduling.Input, res *scheduling.Result) {
			in.Nodes[0].NoNewPods = true
		}, []check.Rule{check.RuleTarget}},
		{"self affinity cannot start beside a match placed elsewhere", func(in *scheduling.Input, res *scheduling.Result) {
			// c matches the term without carrying it: kube-scheduler may bind it first,
			// and a and b must then follow it to node-1.
			a, b := web(in)
			findPod(in, "default/c").Labels["app"] = "web"
			a.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nodeplan.LabelHostname, "web")}}}
			b.Spec.Affinity = a.Spec.Affinity
		}, []check.Rule{check.RulePodAffinity}},
		{"self affinity cannot start beside a match that binds after its own partner", func(in *scheduling.Input, res *scheduling.Result) {
			// c (app=web) follows the running bound-1 on node-1, so it binds; a and b started
			// their group on the claim, but once c runs they must join it.
			// (Its term sorts after theirs, so a single pass would judge their start first.)
			in.Nodes[0].Pods[0].Namespace = "default"
			in.Nodes[0].Pods[0].Labels["app"] = "zz"
			a, b := web(in)
			c := findPod(in, "default/c")
			c.Labels["app"] = "web"
			c.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nodeplan.LabelHostname, "zz")}}}
			a.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nodeplan.LabelHostname, "web")}}}
			b.Spec.Affinity = a.Spec.Affinity
		}, []check.Rule{check.RulePodAffinity}},
		{"two self affinities that select each other start together", func(in *scheduling.Input, res *scheduling.Result) {
			// a over hostnames, b over zones, both app=web, on one claim: whichever binds
			// first starts, and the other finds it there.
			a, b := web(in)
			a.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nodeplan.LabelHostname, "web")}}}
			b.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nodeplan.LabelZone, "web")}}}
		}, nil},
		{"affinity counts only pods matching every term", func(in *scheduling.Input, res *scheduling.Result) {
			// node-1 runs a pod for each term but none for both.
			in.Nodes[0].Pods[0].Namespace, in.Nodes[0].Pods[1].Namespace = "default", "default"
			in.Nodes[0].Pods[1].Labels["tier"] = "x"
			findPod(in, "default/c").Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nodeplan.LabelHostname, "bound-1"),
					{TopologyKey: nodeplan.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "x"}}}}}}
		}, []check.Rule{check.RulePodAffinity}},
		{"a terminating pod still counts for affinity", func(in *scheduling.Input, res *scheduling.Result) {
			in.Nodes[0].Pods[0].Namespace = "default"
			in.Nodes[0].Pods[0].DeletionTimestamp = &metav1.Time{}
			findPod(in, "default/c").Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nodeplan.LabelHostname, "bound-1")}}}
		}, nil},
		{"an empty spread selector counts no pods", func(in *scheduling.Input, res *scheduling.Result) {
			a, b := findPod(in, "default/a"), findPod(in, "default/b")
			c := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: nodeplan.LabelZone, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{}}
			a.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{c}
			b.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{c}
		}, nil},
		{"self affinity split over two domains", func(in *scheduling.Input, res *scheduling.Result) {
			a, b := web(in)
			c := findPod(in, "default/c")
			c.Labels["app"] = "web"
			a.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term(nodeplan.LabelHostname, "web")}}}
			b.Spec.Affinity, c.Spec.Affinity = a.Spec.Affinity, a.Spec.Affinity
		}, []check.Rule{check.RulePodAffinity}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, res := base()
			tt.mutate(&in, &res)
			err := check.Result(in, res)
			got := map[check.Rule]bool{}
			for _, v := range check.Violations(err) {
				got[v.Rule] = true
			}
			want := map[check.Rule]bool{}
			for _, r := range tt.want {
				want[r] = true
			}
			if testing.Verbose() && err != nil {
				t.Log(err)
			}
			if !maps.Equal(got, want) {
				t.Errorf("Result(%s) = %v, want rules %v", tt.name, err, slices.Sorted(maps.Keys(want)))
			}
			if err != nil && !strings.HasPrefix(err.Error(), "check: ") {
				t.Errorf("Result(%s) error %q lacks the check: prefix", tt.name, err)
			}
		})
	}
}

func TestViolationsNamesEveryProblem(t *testing.T) {
	in, res := base()
	res.Cost = 1
	res.Existing = nil
	res.NodeClaims[0].Pods = []string{"default/b", "default/a"}
	vs := check.Violations(check.Result(in, res))
	var got []string
	for _, v := range vs {
		got = append(got, fmt.Sprintf("%s %s", v.Rule, v.Object))
	}
	want := []string{"pod-accounted pod default/c", "order new claim 0 \"default-1\"", "cost Cost"}
	if !slices.Equal(got, want) {
		t.Errorf("Violations(Result(...)) = %q, want %q", got, want)
	}
}
