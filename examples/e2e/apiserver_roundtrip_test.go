package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
)

// Every benchmark, golden and suite scenario plans pods shaped by schedulingtest.APIServerShaped
// rather than pods read from a cluster, because a real API server per benchmark is too dear. This
// test is what lets them: it creates pods through the real kube-apiserver (its defaulting, its
// admission chain, its pod strategy) and lets the real kube-scheduler mark them unschedulable,
// then checks (1) that the builder predicts every field the API server and the scheduler
// wrote, and (2) that the solver gives the pods as read back exactly the plan it gives the bare
// pods, pod for pod.
//
// The pods are Karpenter's benchmark mix as its generator draws it plus the shapes whose
// defaulting is least obvious: pod-level resources, a sidecar, limits without requests, host
// ports, host networking, an explicit priority class name left for the Priority plugin.
func TestAPIServerReturnsPodsAsTheBuilderShapesThem(t *testing.T) {
	cp := startControlPlane(t)
	ctx := context.Background()
	ns := fmt.Sprintf("roundtrip-%d", time.Now().UnixNano()%100000)
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// No controller-manager empties a deleted namespace here: delete the pods themselves, so
		// the controllers other tests run on this API server never see them pending.
		ctx := context.Background()
		_ = cp.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{})
		_ = cp.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	})

	bare := roundTripPods(ns)
	shaped := schedulingtest.APIServerShapedPods(bare)

	// Create each pod as the ReplicaSet controller would: its metadata (name, labels, owner) and
	// the bare spec; everything else is the API server's.
	got := make([]*corev1.Pod, len(bare))
	for i, p := range bare {
		in := p.DeepCopy()
		in.ObjectMeta = metav1.ObjectMeta{
			Name: shaped[i].Name, GenerateName: shaped[i].GenerateName, Namespace: ns,
			Labels: shaped[i].Labels, Annotations: shaped[i].Annotations, OwnerReferences: shaped[i].OwnerReferences,
		}
		out, err := cp.Client.CoreV1().Pods(ns).Create(ctx, in, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
		if err != nil {
			t.Fatalf("creating pod %s (bare %s): %v", in.Name, p.Name, err)
		}
		got[i] = out
	}

	// kube-scheduler cannot place them (no node carries the selector's label) and says so.
	waitFor(t, 2*time.Minute, "kube-scheduler marks every round-trip pod unschedulable", func() bool {
		for i, p := range got {
			cur, err := cp.Client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			if scheduledCondition(cur) == nil {
				return false
			}
			got[i] = cur
		}
		return true
	})

	// (1) The builder predicts what the API server returned.
	saAdmission := hasAPIAccessVolume(got[0])
	for i := range got {
		want := shaped[i].DeepCopy()
		if !saAdmission {
			// The e2e API server runs without the ServiceAccount admission plugin (no
			// controller-manager creates the default accounts); a real cluster's adds the
			// account and its token volume, which the builder adds too.
			stripServiceAccount(want)
		}
		if diff := cmp.Diff(want, asInACluster(got[i]), roundTripIgnored...); diff != "" {
			t.Errorf("pod %s as the API server returned it differs from schedulingtest.APIServerShaped(%s) (-builder +apiserver):\n%s",
				got[i].Name, bare[i].Name, diff)
		}
	}

	// (2) The solver plans the pods as read back exactly as it plans the bare pods.
	catalog := loadRoundTripCatalog(t)
	pools := []nodeplan.NodePool{{Name: "roundtrip", Template: nodeplan.NodeClaimTemplate{Labels: map[string]string{roundTripLabel: "yes"}}}}
	plan := func(pods []*corev1.Pod) scheduling.Result {
		res, err := scheduling.Solve(ctx, scheduling.Input{Pods: pods, NodePools: pools, InstanceTypes: catalog})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	wantRes, gotRes := plan(bare), plan(got)
	// Pods with equal labels and specs are interchangeable: the plans are compared with each
	// pod named by the first bare pod equal to it, since the generated names order them differently.
	bareName, gotName := map[string]string{}, map[string]string{}
	for i := range bare {
		first := i
		for j := range i {
			if cmp.Equal(bare[j].Labels, bare[i].Labels) && cmp.Equal(bare[j].Spec, bare[i].Spec) {
				first = j
				break
			}
		}
		bareName[nodeplan.PodKey(bare[i])] = bare[first].Name
		gotName[nodeplan.PodKey(got[i])] = bare[first].Name
	}
	if diff := cmp.Diff(planShape(wantRes, bareName), planShape(gotRes, gotName)); diff != "" {
		t.Errorf("Solve(pods read back from the API server) differs from Solve(bare pods) (-bare +apiserver):\n%s", diff)
	}
	if len(wantRes.NodeClaims) == 0 {
		t.Fatalf("Solve(bare pods) launched nothing: %+v", wantRes.Unschedulable)
	}
}

// roundTripLabel keeps kube-scheduler from binding the test's pods to nodes other tests left
// behind: no node has it; the test's NodePool sets it, so the solver can plan them.
const roundTripLabel = "e2e.nodeplan.io/roundtrip"

func roundTripPods(ns string) []*corev1.Pod {
	pods := schedulingtest.KarpenterMix(rand.New(rand.NewPCG(7, 13)), 60, "roundtrip")
	q := resource.MustParse
	app := func(name string, spec corev1.PodSpec) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}}, Spec: spec}
	}
	container := func(req, lim corev1.ResourceList) corev1.Container {
		return corev1.Container{Name: "app", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	always := corev1.ContainerRestartPolicyAlways
	sidecar := container(corev1.ResourceList{corev1.ResourceCPU: q("250m"), corev1.ResourceMemory: q("64Mi")}, nil)
	sidecar.Name, sidecar.RestartPolicy = "proxy", &always
	hostPort := container(corev1.ResourceList{corev1.ResourceCPU: q("100m")}, nil)
	hostPort.Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}
	pods = append(pods,
		app("pod-level", corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("6"), corev1.ResourceMemory: q("8Gi")}},
			Containers: []corev1.Container{container(nil, nil)},
		}),
		app("sidecar", corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar},
			Containers:     []corev1.Container{container(corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")}, nil)},
		}),
		app("limits-only", corev1.PodSpec{
			Containers: []corev1.Container{container(nil, corev1.ResourceList{corev1.ResourceCPU: q("1500m"), corev1.ResourceMemory: q("3Gi")})},
		}),
		app("odd-quantities", corev1.PodSpec{
			Containers: []corev1.Container{container(corev1.ResourceList{corev1.ResourceCPU: q("0.3333"), corev1.ResourceMemory: q("1.5G")}, nil)},
		}),
		app("host-port", corev1.PodSpec{Containers: []corev1.Container{hostPort}}),
		app("host-network", corev1.PodSpec{HostNetwork: true,
			Containers: []corev1.Container{container(corev1.ResourceList{corev1.ResourceCPU: q("200m")}, nil)}}),
	)
	for _, p := range pods {
		p.Namespace = ns
		p.UID = ""
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[roundTripLabel] = "yes"
	}
	return pods
}

// roundTripIgnored are the fields no builder can predict: identities and times the API server
// mints, and the scheduler's free-text message (its wording lists the cluster's nodes).
var roundTripIgnored = []cmp.Option{
	cmpopts.IgnoreFields(metav1.ObjectMeta{}, "UID", "ResourceVersion", "CreationTimestamp"),
	cmpopts.IgnoreFields(metav1.ManagedFieldsEntry{}, "Time", "FieldsV1"),
	cmpopts.IgnoreFields(corev1.PodCondition{}, "LastProbeTime", "LastTransitionTime", "Message"),
	cmpopts.EquateEmpty(),
}

// asInACluster names the scheduler's field manager as a cluster's kube-scheduler is named: the
// e2e control plane runs it inside the test binary, whose name its client reports, and orders
// the entries as the API server does (operation, time, manager, subresource).
func asInACluster(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	self := filepath.Base(os.Args[0])
	for i, m := range p.ManagedFields {
		if m.Manager == self && m.Subresource == "status" {
			p.ManagedFields[i].Manager = "kube-scheduler"
		}
	}
	sort.SliceStable(p.ManagedFields, func(i, j int) bool {
		a, b := p.ManagedFields[i], p.ManagedFields[j]
		if a.Operation != b.Operation {
			return a.Operation < b.Operation
		}
		if a.Time.Unix() != b.Time.Unix() {
			return a.Time.Unix() < b.Time.Unix()
		}
		if a.Manager != b.Manager {
			return a.Manager < b.Manager
		}
		return a.Subresource < b.Subresource
	})
	return p
}

func scheduledCondition(p *corev1.Pod) *corev1.PodCondition {
	for i, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func hasAPIAccessVolume(p *corev1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			return true
		}
	}
	return false
}

// stripServiceAccount undoes what the ServiceAccount admission plugin adds.
func stripServiceAccount(p *corev1.Pod) {
	p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount = "", ""
	var vols []corev1.Volume
	for _, v := range p.Spec.Volumes {
		if !strings.HasPrefix(v.Name, "kube-api-access-") {
			vols = append(vols, v)
		}
	}
	p.Spec.Volumes = vols
	strip := func(cs []corev1.Container) {
		for i := range cs {
			var mounts []corev1.VolumeMount
			for _, m := range cs[i].VolumeMounts {
				if !strings.HasPrefix(m.Name, "kube-api-access-") {
					mounts = append(mounts, m)
				}
			}
			cs[i].VolumeMounts = mounts
		}
	}
	strip(p.Spec.InitContainers)
	strip(p.Spec.Containers)
}

func loadRoundTripCatalog(t *testing.T) []nodeplan.InstanceType {
	t.Helper()
	data, err := os.ReadFile("../plan/testdata/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	its, err := nodeplan.DecodeCatalog(data)
	if err != nil {
		t.Fatalf("../plan/testdata/catalog.json: %v", err)
	}
	return its
}

// planShape is a plan in terms of the bare pods' keys: the cost, and each node's type, zone and
// pods; unplaced pods with their reason codes.
func planShape(res scheduling.Result, rename map[string]string) []string {
	key := func(k string) string {
		if r, ok := rename[k]; ok {
			return r
		}
		return k
	}
	out := []string{fmt.Sprintf("cost $%.4f/h, bound $%.4f/h", res.Cost, res.LowerBound)}
	var nodes []string
	for _, c := range res.NodeClaims {
		pods := make([]string, len(c.Pods))
		for i, p := range c.Pods {
			pods[i] = key(p)
		}
		sort.Strings(pods)
		nodes = append(nodes, fmt.Sprintf("%s %s %s: %s", c.InstanceType, c.Offering.Zone, c.Offering.CapacityType, strings.Join(pods, " ")))
	}
	sort.Strings(nodes)
	out = append(out, nodes...)
	for _, u := range res.Unschedulable {
		out = append(out, fmt.Sprintf("unplaced %s: %s", key(u.Pod), u.Code))
	}
	sort.Strings(out[1+len(nodes):])
	return out
}
