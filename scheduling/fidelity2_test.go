package scheduling_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
)

// Where the solver left pending, or placed elsewhere, a pod Karpenter and kube-scheduler would
// place (issue 27, items 4–9), one case each, every pod shaped as the API server returns it.
// Every case failed before the fix it names; each plan must also pass package check.

func preferZone(weight int32, zone string) corev1.PreferredSchedulingTerm {
	return corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: nodeplan.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}
}

func preferring(terms ...corev1.PreferredSchedulingTerm) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: terms}}
	}
}

func apiServerShaped(pods []*corev1.Pod) []*corev1.Pod {
	return schedulingtest.APIServerShapedPods(pods)
}

// Karpenter relaxes a pod's preferred node affinity by removing its heaviest term and treating
// the next heaviest as required; kube-scheduler's NodeAffinity score also favours zone b here
// (50 > 1). Before, an unsatisfiable heaviest term dropped every preferred term at once and
// the pod went to the cheapest zone, a.
func TestPreferredNodeAffinityRelaxesHeaviestFirst(t *testing.T) {
	for _, tc := range []struct {
		name  string
		terms []corev1.PreferredSchedulingTerm
	}{
		{"unsatisfiable heaviest", []corev1.PreferredSchedulingTerm{preferZone(1, "zone-a"), preferZone(100, "zone-z"), preferZone(50, "zone-b")}},
		{"satisfiable heaviest", []corev1.PreferredSchedulingTerm{preferZone(1, "zone-a"), preferZone(50, "zone-b")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := onePool(zonedType("m", "4", map[string]float64{"zone-a": 0.200, "zone-b": 0.205, "zone-c": 0.205}))
			in.Pods = apiServerShaped(replicas("web", 2, "1", preferring(tc.terms...)))
			res := solveAndCheck(t, in)
			zones := placedZones(in, res)
			if len(zones) != 2 {
				t.Fatalf("placed %v, want both pods (unschedulable: %s)", zones, unplacedKeys(res))
			}
			for k, z := range zones {
				if z != "zone-b" {
					t.Errorf("pod %s placed in %s, want zone-b (the heaviest satisfiable term)", k, z)
				}
			}
		})
	}
}

// A node's not-ready, unreachable and cloud-uninitialized taints and its pool's startup taints
// are expected to go only while a NodePool's node is coming up (not yet karpenter.sh/initialized):
// Karpenter counts it as room then. Once initialized, or on a node no pool launched, they are
// real and kube-scheduler will not bind there. Before, they were dropped on every node, so the
// pending pod was planned onto a NotReady node and nothing was launched.
func TestNodeTaintsEphemeralOnlyBeforeInitialized(t *testing.T) {
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	agent := corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name       string
		labels     map[string]string
		taint      corev1.Taint
		wantOnNode bool
	}{
		{"managed, initializing, not-ready", map[string]string{nodeplan.LabelNodePool: "default"}, notReady, true},
		{"managed, initializing, startup taint", map[string]string{nodeplan.LabelNodePool: "default", nodeplan.LabelInitialized: "false"}, agent, true},
		{"managed, initialized, not-ready", map[string]string{nodeplan.LabelNodePool: "default", nodeplan.LabelInitialized: "true"}, notReady, false},
		{"managed, initialized, startup taint back", map[string]string{nodeplan.LabelNodePool: "default", nodeplan.LabelInitialized: "true"}, agent, false},
		{"unmanaged, not-ready", map[string]string{}, notReady, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := onePool(zonedType("m", "4", map[string]float64{"zone-a": 0.2}))
			in.NodePools[0].Template.StartupTaints = []corev1.Taint{agent}
			n := zonalNode("node-1", "zone-a", "4", nil)
			for k, v := range tc.labels {
				n.Node.Labels[k] = v
			}
			n.Node.Spec.Taints = []corev1.Taint{tc.taint}
			in.Nodes = []scheduling.Node{n}
			in.Pods = apiServerShaped(replicas("web", 1, "1"))
			res := solveAndCheck(t, in)
			onNode := len(existingPlacement(res, "node-1")) == 1
			if onNode != tc.wantOnNode || len(res.Unschedulable) > 0 {
				t.Errorf("pod on node-1 = %v, want %v (new claims %d, unschedulable: %s)", onNode, tc.wantOnNode, len(res.NodeClaims), unplacedKeys(res))
			}
			if !tc.wantOnNode && len(res.NodeClaims) != 1 {
				t.Errorf("Solve launched %d claims, want 1 for the pod node-1 cannot take", len(res.NodeClaims))
			}
			want := 0.2
			if tc.wantOnNode {
				want = 0
			}
			if cost, unplaced, ok := schedulingtest.Optimal(in); !ok || cost != want || len(unplaced) > 0 {
				t.Errorf("schedulingtest.Optimal(in) = %v, %v, %v, want %v, [], true", cost, unplaced, ok, want)
			}
		})
	}
}

// Karpenter's provisioner leaves out a NodePool with a deletionTimestamp or whose Ready
// condition is not True. Before, both still got nodes (the heavier pool took every pod).
func TestNoLaunchIntoDeletingOrNotReadyPool(t *testing.T) {
	deleted := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		closed nodeplan.NodePool
		why    string
	}{
		{"deleting", nodeplan.NodePool{Name: "preferred", Weight: 10, DeletionTimestamp: &deleted}, "is being deleted"},
		{"not ready", nodeplan.NodePool{Name: "preferred", Weight: 10, Ready: nodeplan.Condition{Status: metav1.ConditionFalse, Reason: "NodeClassNotReady"}},
			"is not ready (status.conditions Ready=False, NodeClassNotReady)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := zonedType("m", "4", map[string]float64{"zone-a": 0.2})
			in := scheduling.Input{NodePools: []nodeplan.NodePool{tc.closed, {Name: "default"}}, InstanceTypes: []nodeplan.InstanceType{it},
				PoolInstanceTypes: map[string][]nodeplan.InstanceType{"preferred": {zonedType("m", "4", map[string]float64{"zone-a": 0.1})}}}
			in.Pods = apiServerShaped(replicas("web", 2, "1"))
			res := solveAndCheck(t, in)
			if len(res.Unschedulable) > 0 || len(res.NodeClaims) != 1 || res.NodeClaims[0].NodePool != "default" {
				t.Errorf("Solve: claims %+v, unschedulable %s; want one claim of pool default", res.NodeClaims, unplacedKeys(res))
			}
			if cost, unplaced, ok := schedulingtest.Optimal(in); !ok || cost != 0.2 || len(unplaced) > 0 {
				t.Errorf("schedulingtest.Optimal(in) = %v, %v, %v, want 0.2, [], true", cost, unplaced, ok)
			}

			// Alone, the pool explains itself; its existing node still takes a pod.
			in.NodePools = in.NodePools[:1]
			n := zonalNode("node-1", "zone-a", "4", nil)
			n.Node.Labels[nodeplan.LabelNodePool] = "preferred"
			n.Node.Labels[nodeplan.LabelInitialized] = "true"
			in.Nodes = []scheduling.Node{n}
			in.Pods = apiServerShaped(replicas("web", 2, "3"))
			res = solveAndCheck(t, in)
			if len(existingPlacement(res, "node-1")) != 1 || len(res.NodeClaims) != 0 || len(res.Unschedulable) != 1 {
				t.Fatalf("Solve: on node-1 %v, claims %d, unschedulable %s; want 1 pod on node-1 and 1 unschedulable", existingPlacement(res, "node-1"), len(res.NodeClaims), unplacedKeys(res))
			}
			u := res.Unschedulable[0]
			if want := "nodepool preferred: " + tc.why; u.Code != scheduling.ReasonNodePoolUnavailable || !strings.HasPrefix(u.Message, want) {
				t.Errorf("Unschedulable = %s %q, want %s %q…", u.Code, u.Message, scheduling.ReasonNodePoolUnavailable, want)
			}
		})
	}
}

// Karpenter provisions room for the pods of a node being deleted (a deletionTimestamp, or the
// karpenter.sh/disrupted:NoSchedule taint) ahead of their eviction: its provisioner adds the
// node's reschedulable pods to the pending ones. Before, nothing said so: Input building left
// them on the node, and the plan launched nothing for them.
func TestDeletingNodePodsGetCapacity(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	running := func(node string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.NodeName = node; p.Status.Phase = corev1.PodRunning }
	}
	ownedBy := func(kind string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: p.Labels["app"], Controller: new(true)}}
		}
	}
	annotated := func(k, v string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Annotations = map[string]string{k: v} }
	}
	done := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	onNode := func(node string) []*corev1.Pod {
		return slices.Concat(
			replicas(node+"-web", 1, "1", running(node)),
			replicas(node+"-db", 1, "1", running(node), ownedBy("StatefulSet"), terminating),
			replicas(node+"-old", 1, "1", running(node), terminating),
			replicas(node+"-ds", 1, "100m", running(node), ownedBy("DaemonSet")),
			replicas(node+"-pinned", 1, "1", running(node), annotated(nodeplan.AnnotationDoNotDisrupt, "true")),
			replicas(node+"-job", 1, "1", running(node), done))
	}
	node := func(name string) scheduling.Node {
		n := zonalNode(name, "zone-a", "8", apiServerShaped(onNode(name)))
		n.Node.Labels[nodeplan.LabelNodePool] = "default"
		n.Node.Labels[nodeplan.LabelInitialized] = "true"
		return n
	}
	deleting, disrupted, live := node("deleting"), node("disrupted"), node("live")
	deleting.Node.DeletionTimestamp = &metav1.Time{Time: now}
	disrupted.Node.Spec.Taints = []corev1.Taint{{Key: nodeplan.TaintDisrupted, Effect: corev1.TaintEffectNoSchedule}}
	live.Pods = nil

	moving, nodes := scheduling.DeletingNodePods([]scheduling.Node{deleting, disrupted, live}, now)
	var keys []string
	for _, p := range moving {
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
			t.Errorf("moved pod %s: nodeName %q, deletionTimestamp %v; want a pending, live copy", nodeplan.PodKey(p), p.Spec.NodeName, p.DeletionTimestamp)
		}
		keys = append(keys, p.Labels["app"])
	}
	if want := []string{"deleting-db", "deleting-web", "disrupted-db", "disrupted-web"}; !slices.Equal(slices.Sorted(slices.Values(keys)), want) {
		t.Errorf("DeletingNodePods moved %v, want %v", keys, want)
	}
	for i, n := range nodes {
		if want := map[int]int{0: 4, 1: 4, 2: 0}[i]; len(n.Pods) != want {
			t.Errorf("DeletingNodePods left %d pods on %s, want %d", len(n.Pods), n.Node.Name, want)
		}
	}
	if deleting.Pods[0].Spec.NodeName != "deleting" || len(deleting.Pods) != 6 {
		t.Errorf("DeletingNodePods changed its input")
	}

	// The moved pods get room: the live node takes them, not the nodes being deleted.
	in := onePool(zonedType("m", "4", map[string]float64{"zone-a": 0.2}))
	in.Nodes = nodes
	in.Pods = moving
	res := solveAndCheck(t, in)
	if got := len(existingPlacement(res, "live")); got != 4 || len(res.Unschedulable) > 0 {
		t.Errorf("Solve placed %d moved pods on live, want 4 (claims %d, unschedulable %s)", got, len(res.NodeClaims), unplacedKeys(res))
	}
}

// A nodeSelector or node affinity on a deprecated beta label means its stable label, as
// Karpenter normalizes it (and as the kubelet and cloud node controller still set both on a
// node). Before, each was refused: no NodePool or instance type has the beta key.
func TestDeprecatedBetaLabelsMeanStableOnes(t *testing.T) {
	it := zonedType("m", "4", map[string]float64{"zone-a": 0.2, "zone-b": 0.1})
	it.Labels[nodeplan.LabelArch] = "amd64"
	it.Labels[nodeplan.LabelOS] = "linux"
	for _, tc := range []struct {
		key, value string
		wantZone   string
	}{
		{"beta.kubernetes.io/instance-type", "m", "zone-b"},
		{"failure-domain.beta.kubernetes.io/zone", "zone-a", "zone-a"},
		{"beta.kubernetes.io/arch", "amd64", "zone-b"},
		{"beta.kubernetes.io/os", "linux", "zone-b"},
	} {
		for _, how := range []string{"nodeSelector", "nodeAffinity"} {
			t.Run(tc.key+"/"+how, func(t *testing.T) {
				in := onePool(it)
				sel := func(p *corev1.Pod) {
					if how == "nodeSelector" {
						p.Spec.NodeSelector = map[string]string{tc.key: tc.value}
						return
					}
					p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
						NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
							{Key: tc.key, Operator: corev1.NodeSelectorOpIn, Values: []string{tc.value}}}}}}}}
				}
				in.Pods = apiServerShaped(replicas("web", 1, "1", sel))
				res := solveAndCheck(t, in)
				zones := placedZones(in, res)
				if len(zones) != 1 {
					t.Fatalf("placed %v, want the pod placed (unschedulable: %s)", zones, unplacedKeys(res))
				}
				for _, z := range zones {
					if z != tc.wantZone {
						t.Errorf("pod placed in %s, want %s", z, tc.wantZone)
					}
				}
				if cost, unplaced, ok := schedulingtest.Optimal(in); !ok || len(unplaced) > 0 || cost != res.Cost {
					t.Errorf("schedulingtest.Optimal(in) = %v, %v, %v, want %v, [], true", cost, unplaced, ok, res.Cost)
				}
			})
		}
	}
}

func antiAffineOver(key string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			{TopologyKey: key, LabelSelector: selectsApp(p.Labels["app"])}}}}
	}
}

// The sentence an unplaced pod gets must name the real cause. Before: with every offering of
// the fitting types unavailable (ICE), "no available offering … meets the pod's zone and
// capacity-type requirements" for a pod with neither; with zone anti-affinity leaving no zone,
// "no offering in topology.kubernetes.io/zone In [] (pod requires it …)".
func TestUnplacedExplanationsNameTheCause(t *testing.T) {
	t.Run("capacity unavailable", func(t *testing.T) {
		gpu := zonedType("g5.xlarge", "4", map[string]float64{"zone-a": 1.0, "zone-b": 1.0})
		for i := range gpu.Offerings {
			gpu.Offerings[i].Available = false
		}
		small := zonedType("m.small", "1", map[string]float64{"zone-a": 0.05})
		in := onePool(gpu, small)
		in.Pods = apiServerShaped(replicas("train", 1, "3"))
		res := solveAndCheck(t, in)
		if len(res.Unschedulable) != 1 {
			t.Fatalf("unschedulable %s, want the pod", unplacedKeys(res))
		}
		u := res.Unschedulable[0]
		for _, want := range []string{"unavailable", "g5.xlarge", "zone-a", "zone-b"} {
			if !strings.Contains(u.Message, want) {
				t.Errorf("Unschedulable message %q does not mention %q", u.Message, want)
			}
		}
		if strings.Contains(u.Message, "pod's zone") || u.Code != scheduling.ReasonNoOffering {
			t.Errorf("Unschedulable = %s %q, want %s naming unavailable capacity, not the pod's requirements", u.Code, u.Message, scheduling.ReasonNoOffering)
		}
	})
	t.Run("anti-affinity leaves no zone", func(t *testing.T) {
		in := onePool(zonedType("m", "4", map[string]float64{"zone-a": 0.2, "zone-b": 0.2}))
		in.Nodes = []scheduling.Node{zonalNode("node-a", "zone-a", "1", apiServerShaped(replicas("db", 1, "1", runningOn("node-a"))))}
		in.Pods = apiServerShaped(replicas("db", 1, "1", antiAffineOver(nodeplan.LabelZone),
			func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{nodeplan.LabelZone: "zone-a"} }))
		res := solveAndCheck(t, in)
		if len(res.Unschedulable) != 1 {
			t.Fatalf("unschedulable %s, want the pod (both zones run one)", unplacedKeys(res))
		}
		u := res.Unschedulable[0]
		if strings.Contains(u.Message, "In []") || strings.Contains(u.Message, "pod requires") || u.Code != scheduling.ReasonPodAntiAffinity ||
			!strings.Contains(u.Message, "anti-affinity") {
			t.Errorf("Unschedulable = %s %q, want %s saying the anti-affinity leaves no zone", u.Code, u.Message, scheduling.ReasonPodAntiAffinity)
		}
	})
	t.Run("affinity to a zone the pool cannot launch", func(t *testing.T) {
		in := onePool(zonedType("m", "4", map[string]float64{"zone-a": 0.2, "zone-b": 0.2}))
		in.Nodes = []scheduling.Node{zonalNode("node-c", "zone-c", "1", apiServerShaped(replicas("cache", 1, "1", runningOn("node-c"))))}
		in.Pods = apiServerShaped(replicas("web", 1, "1", affineToAll(nodeplan.LabelZone, map[string]string{"app": "cache"})))
		res := solveAndCheck(t, in)
		if len(res.Unschedulable) != 1 {
			t.Fatalf("unschedulable %s, want the pod (its affinity's zone, zone-c, cannot be launched and node-c is full)", unplacedKeys(res))
		}
		u := res.Unschedulable[0]
		if strings.Contains(u.Message, "pod requires") || u.Code != scheduling.ReasonPodAffinity || !strings.Contains(u.Message, "zone-c") {
			t.Errorf("Unschedulable = %s %q, want %s saying the affinity leaves only zone-c", u.Code, u.Message, scheduling.ReasonPodAffinity)
		}
	})
}
