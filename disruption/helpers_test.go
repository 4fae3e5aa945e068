package disruption_test

import (
	"fmt"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
)

// tb is what the helpers need of *testing.T, *testing.B and *rapid.T.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// t0 is a Monday, 10:00 UTC.
var t0 = time.Date(2026, 11, 16, 10, 0, 0, 0, time.UTC)

var (
	catalogOnce sync.Once
	catalogList []nodeplan.InstanceType
	catalogErr  error
)

// testCatalog is testdata/catalog.json: 36 us-east-1 types, on-demand and (synthetic) spot.
func testCatalog(t tb) []nodeplan.InstanceType {
	t.Helper()
	catalogOnce.Do(func() {
		data, err := os.ReadFile("testdata/catalog.json")
		if err != nil {
			catalogErr = err
			return
		}
		catalogList, catalogErr = nodeplan.DecodeCatalog(data)
	})
	if catalogErr != nil {
		t.Fatal(catalogErr)
	}
	return catalogList
}

func instanceType(t tb, name string) *nodeplan.InstanceType {
	t.Helper()
	cat := testCatalog(t)
	for i := range cat {
		if cat[i].Name == name {
			return &cat[i]
		}
	}
	t.Fatalf("instance type %s not in testdata/catalog.json", name)
	return nil
}

// offeringPrice is the catalog price of a type in a zone and capacity type.
func offeringPrice(it *nodeplan.InstanceType, zone string, ct nodeplan.CapacityType) float64 {
	for _, o := range it.Offerings {
		if o.Zone == zone && o.CapacityType == ct {
			return o.Price
		}
	}
	return 0
}

type nodeOpt func(*disruption.Node)

// newNode is an initialized, on-demand node in us-east-1a, created and last touched a day
// before t0, at its catalog price.
func newNode(t tb, name, typ, pool string, opts ...nodeOpt) disruption.Node {
	t.Helper()
	it := instanceType(t, typ)
	n := disruption.Node{NodePool: pool, InstanceType: typ, Zone: "us-east-1a", CapacityType: nodeplan.CapacityTypeOnDemand,
		Created: t0.Add(-24 * time.Hour), Initialized: t0.Add(-24 * time.Hour), LastPodEvent: t0.Add(-24 * time.Hour)}
	for _, o := range opts {
		o(&n)
	}
	labels := map[string]string{}
	for k, v := range it.Labels {
		labels[k] = v
	}
	labels[nodeplan.LabelZone] = n.Zone
	labels[nodeplan.LabelCapacityType] = string(n.CapacityType)
	labels[nodeplan.LabelHostname] = name
	if pool != "" {
		labels[nodeplan.LabelNodePool] = pool
	}
	n.Node = &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{}},
		Status:     corev1.NodeStatus{Capacity: it.Capacity, Allocatable: it.Allocatable()},
	}
	if n.Price == 0 {
		n.Price = offeringPrice(it, n.Zone, n.CapacityType)
	}
	for _, p := range n.Pods {
		p.Spec.NodeName = name
	}
	return n
}

func withPods(pods ...*corev1.Pod) nodeOpt {
	return func(n *disruption.Node) { n.Pods = append(n.Pods, pods...) }
}
func spot(n *disruption.Node)          { n.CapacityType = nodeplan.CapacityTypeSpot }
func drifted(n *disruption.Node)       { n.Drift = "NodePoolDrifted" }
func withPrice(p float64) nodeOpt      { return func(n *disruption.Node) { n.Price = p } }
func inZone(z string) nodeOpt          { return func(n *disruption.Node) { n.Zone = z } }
func uninitialized(n *disruption.Node) { n.Initialized = time.Time{} }

type podOpt func(*corev1.Pod)

// newPod is a running, ready pod of a ReplicaSet in namespace default.
func newPod(name, cpu, mem string, opts ...podOpt) *corev1.Pod {
	tr := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"},
			Annotations:       map[string]string{},
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-web", Controller: &tr}},
			CreationTimestamp: metav1.NewTime(t0.Add(-48 * time.Hour))},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: t0.Add(-48 * time.Hour)},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func app(a string) podOpt { return func(p *corev1.Pod) { p.Labels = map[string]string{"app": a} } }
func doNotDisrupt(v string) podOpt {
	return func(p *corev1.Pod) { p.Annotations[nodeplan.AnnotationDoNotDisrupt] = v }
}
func unowned(p *corev1.Pod) { p.OwnerReferences = nil }

// pods returns n pods named prefix-i.
func pods(prefix string, n int, cpu, mem string, opts ...podOpt) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = newPod(fmt.Sprintf("%s-%d", prefix, i), cpu, mem, opts...)
	}
	return out
}

func pdbMinAvailable(name, appLabel string, min int) *policyv1.PodDisruptionBudget {
	v := intstr.FromInt32(int32(min))
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &v,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": appLabel}}},
	}
}

// pool is a pool over the test catalog with the given budgets (nil: the default 10%).
func pool(name string, budgets ...nodeplan.Budget) nodeplan.NodePool {
	np := nodeplan.NodePool{Name: name}
	np.Template.Requirements = nodeplan.NewRequirements(
		nodeplan.In(nodeplan.LabelCapacityType, "on-demand"),
		nodeplan.In(nodeplan.LabelZone, "us-east-1a"))
	np.Disruption.Budgets = budgets
	return np
}

func budget(nodes string) nodeplan.Budget {
	c, err := nodeplan.ParseNodeCount(nodes)
	if err != nil {
		panic(err)
	}
	return nodeplan.Budget{Nodes: c}
}

func blockedOf(r disruption.Result, node string) (disruption.Blocked, bool) {
	for _, b := range r.Blocked {
		if b.Node == node {
			return b, true
		}
	}
	return disruption.Blocked{}, false
}

func commandFor(r disruption.Result, node string) (disruption.Command, bool) {
	for _, c := range r.Commands {
		for _, n := range c.Nodes {
			if n == node {
				return c, true
			}
		}
	}
	return disruption.Command{}, false
}
