package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/examples/internal/controller/poolhash"
)

// karpenterNode is one node as Karpenter v1 leaves it: an EC2 instance with its tags, a
// NodeClaim with its labels, annotations, finalizer, owner reference and status, and a Node
// with the claim's labels, the finalizer and an owner reference to the claim.
type karpenterNode struct {
	claim, node string
	providerID  string
	instanceID  string
}

// adoptedType is what Karpenter launched: the cheapest offering the lab pool allows on this
// catalog (spot c6i.2xlarge in us-east-1c), so consolidation has no cheaper replacement to
// launch and only emptiness is in play.
const (
	adoptedType = "c6i.2xlarge"
	adoptedZone = "us-east-1c"
)

// karpenterLaunch makes a node the way Karpenter would have, ten minutes ago.
func (w *world) karpenterLaunch(t *testing.T, pool *unstructured.Unstructured, claim, node string) karpenterNode {
	t.Helper()
	ctx := context.Background()
	var data ec2test.InstanceTypeData
	all, err := ec2test.InstanceTypes()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range all {
		if d.Name == adoptedType {
			data = d
		}
	}
	launched := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	id := w.ec2.LaunchInstance(ec2test.Instance{Type: adoptedType, Zone: adoptedZone, SubnetID: "subnet-lab-c",
		ImageID: "ami-al2023x86", Lifecycle: "spot", State: "running", SecurityGroups: []string{"sg-lab"}, LaunchTime: launched,
		Tags: map[string]string{
			"kubernetes.io/cluster/" + worldCluster: "owned", "eks:eks-cluster-name": worldCluster,
			"karpenter.sh/nodepool": labPoolName, "karpenter.sh/nodeclaim": claim, "karpenter.k8s.aws/ec2nodeclass": labClassName,
			"karpenter.sh/managed-by": worldCluster, "Name": node,
		}})
	k := karpenterNode{claim: claim, node: node, instanceID: id, providerID: "aws:///" + adoptedZone + "/" + id}
	w.foreign[claim] = true

	capacity, allocatable := corev1.ResourceList{}, corev1.ResourceList{}
	for name, v := range data.Capacity {
		capacity[corev1.ResourceName(name)] = resource.MustParse(v)
	}
	for name, v := range data.Allocatable {
		allocatable[corev1.ResourceName(name)] = resource.MustParse(v)
	}
	labels := map[string]string{
		nodeplan.LabelNodePool: labPoolName, nodeplan.LabelInstanceType: adoptedType, nodeplan.LabelZone: adoptedZone,
		nodeplan.LabelCapacityType: "spot", nodeplan.LabelArch: "amd64", nodeplan.LabelOS: "linux",
		"karpenter.k8s.aws/ec2nodeclass": labClassName, "eks-team": "my-team", "topology.k8s.aws/zone-id": ec2test.ZoneID(adoptedZone),
		"karpenter.k8s.aws/instance-category": "c", "karpenter.k8s.aws/instance-family": "c6i", "karpenter.k8s.aws/instance-size": "2xlarge",
		"karpenter.k8s.aws/instance-generation": "6",
	}
	// The pool's template hash as Karpenter v1.14 stamps it on its claims (poolhash computes
	// Karpenter's own value): the adopted claims are not drifted.
	poolHash, err := poolhash.Template(pool.Object)
	if err != nil {
		t.Fatal(err)
	}
	at := metav1.NewTime(launched).Format(time.RFC3339)
	cond := func(typ string) map[string]any {
		return map[string]any{"type": typ, "status": "True", "reason": typ, "message": "", "lastTransitionTime": at, "observedGeneration": int64(1)}
	}
	nc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
		"metadata": map[string]any{
			"name": claim, "labels": toAny(labels),
			"annotations": map[string]any{
				"karpenter.k8s.aws/ec2nodeclass-hash": "8934792512309872431", "karpenter.k8s.aws/ec2nodeclass-hash-version": "v4",
				poolhash.AnnotationHash: poolHash, poolhash.AnnotationVersion: poolhash.Version,
			},
			"finalizers": []any{controller.FinalizerTermination},
			"ownerReferences": []any{map[string]any{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "name": labPoolName,
				"uid": string(pool.GetUID()), "blockOwnerDeletion": true}},
		},
		"spec": map[string]any{
			"expireAfter": "Never", "terminationGracePeriod": "5m0s",
			"nodeClassRef": map[string]any{"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": labClassName},
			"requirements": []any{
				map[string]any{"key": nodeplan.LabelArch, "operator": "In", "values": []any{"amd64"}},
				map[string]any{"key": nodeplan.LabelCapacityType, "operator": "In", "values": []any{"spot", "on-demand"}},
				map[string]any{"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": []any{"c", "m", "r"}},
				map[string]any{"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": []any{"4"}},
				map[string]any{"key": nodeplan.LabelInstanceType, "operator": "In", "values": []any{adoptedType, "m6i.2xlarge", "c5.2xlarge"}},
				map[string]any{"key": nodeplan.LabelNodePool, "operator": "In", "values": []any{labPoolName}},
				map[string]any{"key": "eks-team", "operator": "In", "values": []any{"my-team"}},
			},
			"resources": map[string]any{"requests": map[string]any{"cpu": "2", "pods": "2"}},
		},
	}}
	created, err := w.dyn.Resource(controller.NodeClaimGVR).Create(ctx, nc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Karpenter's NodeClaim %s: %v", claim, err)
	}
	created.Object["status"] = map[string]any{
		"providerID": k.providerID, "imageID": "ami-al2023x86", "nodeName": node,
		"capacity": toAnyQ(capacity), "allocatable": toAnyQ(allocatable),
		"conditions":       []any{cond("Initialized"), cond("Launched"), cond("Ready"), cond("Registered")},
		"lastPodEventTime": at,
	}
	if _, err := w.dyn.Resource(controller.NodeClaimGVR).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing the status of Karpenter's NodeClaim %s: %v", claim, err)
	}

	nodeLabels := map[string]string{nodeplan.LabelHostname: node, nodeplan.LabelRegistered: "true", nodeplan.LabelInitialized: "true"}
	for k, v := range labels {
		nodeLabels[k] = v
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: node, Labels: nodeLabels, Finalizers: []string{controller.FinalizerTermination},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim", Name: claim,
				UID: types.UID(created.GetUID()), BlockOwnerDeletion: new(true)}}},
		Spec: corev1.NodeSpec{ProviderID: k.providerID},
	}
	n, err = w.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status = corev1.NodeStatus{Capacity: capacity, Allocatable: allocatable,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastTransitionTime: metav1.NewTime(launched), LastHeartbeatTime: metav1.Now()}},
		NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OSImage: "Amazon Linux 2023"}}
	if n, err = w.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server taints a new Node not-ready; the node lifecycle controller lifts it once
	// the kubelet reports Ready. There is none here: lift it as it would.
	n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
	if _, err := w.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return k
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func toAnyQ(rl corev1.ResourceList) map[string]any {
	out := map[string]any{}
	for k, v := range rl {
		out[string(k)] = v.String()
	}
	return out
}

// TestAdoptKarpenterCluster: a cluster Karpenter ran — two nodes of the lab pool, one running
// pods pinned to it, one empty — taken over by nodeplan with --adopt. It launches nothing for
// them, consolidates the empty one (its instance terminated, its Node and NodeClaim gone), keeps
// the busy one with its instance for as long as its claims are checked against the cloud, and
// at the end every instance is either tracked or terminated.
func TestAdoptKarpenterCluster(t *testing.T) {
	w := newWorld(t, "adopter", "adopt-lab")
	ctx := context.Background()
	w.applyLab()
	defer w.deleteLab(labPoolName)
	pool, err := w.dyn.Resource(controller.NodePoolGVR).Get(ctx, labPoolName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	busy := w.karpenterLaunch(t, pool, "default-k8bsy", "ip-10-1-0-1.ec2.internal")
	empty := w.karpenterLaunch(t, pool, "default-k8mty", "ip-10-1-0-2.ec2.internal")
	app := w.labDeployment("pinned", "my-team")
	app.Spec.Template.Spec.NodeSelector[nodeplan.LabelHostname] = busy.node
	if err := w.deps.Create(ctx, app); err != nil {
		t.Fatal(err)
	}
	w.scale("pinned", 2)
	w.waitRunning("pinned", 2, 60*time.Second) // kube-scheduler binds them to Karpenter's node

	stop := w.controller("adopter", true)
	defer stop()
	defer w.cleanUp("pinned") // through the adopter, still running
	w.waitFor(90*time.Second, "the empty node consolidated: its instance terminated, Node and NodeClaim gone", func() bool {
		inst, _ := w.instance(empty.providerID)
		_, nerr := w.client.CoreV1().Nodes().Get(ctx, empty.node, metav1.GetOptions{})
		return inst.State != "running" && nerr != nil && !slices.ContainsFunc(w.nodeClaims(), func(c nodeClaim) bool { return c.Name == empty.claim })
	})
	for _, name := range []string{busy.claim, empty.claim} {
		if !strings.Contains(w.logs.String(), fmt.Sprintf(`msg="adopting nodeclaim" replica=adopter nodeclaim=%s`, name)) {
			t.Errorf("no \"adopting nodeclaim\" for %s", name)
		}
	}
	if !strings.Contains(w.logs.String(), "nodeclaim="+empty.claim) || !strings.Contains(w.logs.String(), "reason=Empty") {
		t.Errorf("the empty node was not removed for emptiness")
	}

	// The busy node stays, with its claim now nodeplan's, through several comparisons of the
	// claims with the cloud (every 5s; a claim's instance must be missing for 10s to be given
	// up).
	hold := time.Now().Add(25 * time.Second)
	for time.Now().Before(hold) {
		var c *nodeClaim
		for _, x := range w.nodeClaims() {
			if x.Name == busy.claim {
				c = &x
			}
		}
		if c == nil || c.Deleting {
			t.Fatalf("the busy node's NodeClaim %s was given up\n%s", busy.claim, w.dump())
		}
		if inst, _ := w.instance(busy.providerID); inst.State != "running" {
			t.Fatalf("the busy node's instance %s is %s", busy.instanceID, inst.State)
		}
		if n := w.running("pinned"); n != 2 {
			t.Fatalf("pinned pods running = %d, want 2\n%s", n, w.dump())
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, c := range w.nodeClaims() {
		if c.Name == busy.claim && c.Annotations[controller.AnnotationInstallation] != w.installation {
			t.Errorf("adopted NodeClaim annotations %v, want %s=%s", c.Annotations, controller.AnnotationInstallation, w.installation)
		}
	}
	if n := w.ec2.Calls("CreateFleet"); n != 0 {
		t.Errorf("CreateFleet called %d times: nodeplan launched for nodes it adopted", n)
	}
	w.checkNoOrphans(t)
}
