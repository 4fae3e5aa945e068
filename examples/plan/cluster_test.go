package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/nodeplan/nodeplan/examples/plan/internal/load"
)

// fakeCluster serves the testdata snapshot through client-go's fake clients, with pages of two
// objects so that listing has to follow continue tokens, and records every verb it is asked.
func fakeCluster(t *testing.T) (verbs *[]string) {
	verbs, _ = fakeClusterClients(t)
	return verbs
}

// fakeClusterClients is fakeCluster, also returning the typed fake for tests that change the
// cluster as they go.
func fakeClusterClients(t *testing.T) (verbs *[]string, kube *kubefake.Clientset) {
	t.Helper()
	var l load.Loader
	var objs []runtime.Object
	podsIn, err := l.Pods("testdata/pods.yaml")
	if err != nil {
		t.Fatal(err)
	}
	nodesIn, err := l.Nodes("testdata/nodes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dsIn, err := l.DaemonSets("testdata/ds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pdbsIn, err := l.PodDisruptionBudgets("testdata/pdbs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range podsIn {
		objs = append(objs, p)
	}
	for _, n := range nodesIn {
		objs = append(objs, n)
	}
	for _, d := range dsIn {
		objs = append(objs, d)
	}
	for _, p := range pdbsIn {
		objs = append(objs, p)
	}
	kube = kubefake.NewClientset(objs...)

	raw, err := os.ReadFile("testdata/nodepools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	claims, err := os.ReadFile("testdata/inflight/nodeclaims.yaml")
	if err != nil {
		t.Fatal(err)
	}
	raw = append(append(raw, "\n---\n"...), claims...)
	var dynObjs []runtime.Object
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var u unstructured.Unstructured
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if u.Object == nil {
			continue
		}
		items, _, _ := unstructured.NestedSlice(u.Object, "items")
		if u.GetKind() != "List" {
			items = []any{u.Object}
		}
		for _, it := range items {
			dynObjs = append(dynObjs, &unstructured.Unstructured{Object: it.(map[string]any)})
		}
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		nodePoolsResource:      "NodePoolList",
		ec2NodeClassesResource: "EC2NodeClassList",
		nodeOverlaysResource:   "NodeOverlayList",
		nodeClaimsResource:     "NodeClaimList",
	}, dynObjs...)

	var recorded []string
	record := func(a k8stesting.Action) (bool, runtime.Object, error) {
		recorded = append(recorded, a.GetVerb()+" "+a.GetResource().Resource)
		return false, nil, nil
	}
	kube.PrependReactor("*", "*", record)
	dyn.PrependReactor("*", "*", record)

	old := connectCluster
	connectCluster = func(*clusterFlags) (kubernetes.Interface, dynamic.Interface, string, error) {
		return kube, dyn, "https://fake.cluster.test", nil
	}
	t.Cleanup(func() { connectCluster = old })
	return &recorded, kube
}

func TestClusterGivesTheSamePlanAsFiles(t *testing.T) {
	for _, cmd := range []struct {
		name        string
		files, live []string
	}{
		{"provision", args([]string{"provision"}, pods, nodePools, catalog, ds, nodes, nodeClaims, []string{"-o", "json"}),
			args([]string{"provision", "--kubeconfig", "fake"}, catalog, []string{"-o", "json"})},
		{"disrupt", args([]string{"disrupt"}, pods, nodes, nodePools, catalog, ds, []string{"--pdbs", "testdata/pdbs.yaml", "--now", "2026-11-22T10:00:00Z", "-o", "json"}),
			args([]string{"disrupt", "--kubeconfig", "fake"}, catalog, []string{"--now", "2026-11-22T10:00:00Z", "-o", "json"})},
	} {
		t.Run(cmd.name, func(t *testing.T) {
			verbs := fakeCluster(t)
			code, want, stderr := runPlan(t, cmd.files)
			if code != exitOK {
				t.Fatalf("plan %v = %d, want 0; stderr:\n%s", cmd.files, code, stderr)
			}
			code, got, stderr := runPlan(t, cmd.live)
			if code != exitOK {
				t.Fatalf("plan %v = %d, want 0; stderr:\n%s", cmd.live, code, stderr)
			}
			if diff := cmp.Diff(normalize(want), normalize(got)); diff != "" {
				t.Errorf("plan %s from the cluster differs from the plan from its files (-files +cluster):\n%s", cmd.name, diff)
			}
			if !strings.Contains(stderr, "read the cluster at https://fake.cluster.test (read-only)") {
				t.Errorf("stderr does not say which cluster was read:\n%s", stderr)
			}
			for _, v := range *verbs {
				if !strings.HasPrefix(v, "list ") {
					t.Errorf("plan asked the cluster to %q; it must only list", v)
				}
			}
		})
	}
}

func TestClusterListsInPages(t *testing.T) {
	kube := kubefake.NewClientset()
	var pages int
	kube.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pages++
		opts := a.(k8stesting.ListActionImpl).GetListOptions()
		if opts.Limit != listPageSize {
			t.Errorf("list pods with limit %d, want %d", opts.Limit, listPageSize)
		}
		list := podList(fmt.Sprintf("p%d", pages))
		if pages < 3 {
			list.Continue = fmt.Sprintf("page-%d", pages+1)
		}
		if want := map[int]string{1: "", 2: "page-2", 3: "page-3"}[pages]; opts.Continue != want {
			t.Errorf("page %d asked with continue %q, want %q", pages, opts.Continue, want)
		}
		return true, list, nil
	})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		nodePoolsResource: "NodePoolList", ec2NodeClassesResource: "EC2NodeClassList", nodeOverlaysResource: "NodeOverlayList",
		nodeClaimsResource: "NodeClaimList",
	})
	var progress strings.Builder
	docs, err := clusterReader{kube: kube, dynamic: dyn, progress: &progress}.read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if pages != 3 {
		t.Errorf("listed pods in %d pages, want 3", pages)
	}
	for _, name := range []string{"p1", "p2", "p3"} {
		if !strings.Contains(string(docs[clusterPods]), `"name":"`+name+`"`) {
			t.Errorf("pods list lacks %s: %s", name, docs[clusterPods])
		}
	}
	if !strings.Contains(progress.String(), "plan: listing pods: 3") {
		t.Errorf("progress = %q, want a line counting 3 pods", progress.String())
	}
}

func podList(name string) *corev1.PodList {
	return &corev1.PodList{Items: []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}}}
}
