package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/examples/plan/internal/load"
)

const snapshotPods = `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: pending, namespace: app}
  spec: {containers: [{name: c, image: i}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: bound, namespace: app}
  spec: {nodeName: n1, containers: [{name: c, image: i}]}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: elsewhere, namespace: app}
  spec: {nodeName: n9, containers: [{name: c, image: i}]}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: done, namespace: app}
  spec: {containers: [{name: c, image: i}]}
  status: {phase: Succeeded}
- apiVersion: v1
  kind: Pod
  metadata:
    name: agent-x
    namespace: kube-system
    ownerReferences: [{apiVersion: apps/v1, kind: DaemonSet, name: agent, uid: u1, controller: true}]
  spec: {containers: [{name: c, image: i}]}
`

const snapshotNodes = `apiVersion: v1
kind: Node
metadata:
  name: n1
  labels:
    karpenter.sh/nodepool: default
    karpenter.sh/capacity-type: spot
    node.kubernetes.io/instance-type: m5.large
    topology.kubernetes.io/zone: us-east-1b
`

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func keys(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, nodeplan.PodKey(p))
	}
	return out
}

// TestLoadSnapshot checks which pods are pending, which run where, and what is left out.
func TestLoadSnapshot(t *testing.T) {
	var warnings []string
	files := inputFiles{
		pods:      writeTemp(t, "pods.yaml", snapshotPods),
		nodes:     writeTemp(t, "nodes.yaml", snapshotNodes),
		nodePools: "testdata/nodepools.yaml",
		catalog:   "testdata/catalog.json",
	}
	s, err := loadSnapshot(files, load.Loader{Warn: func(msg string) { warnings = append(warnings, msg) }})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"app/pending"}, keys(s.pending)); diff != "" {
		t.Errorf("pending pods (-want +got):\n%s", diff)
	}
	if len(s.nodes) != 1 {
		t.Fatalf("loadSnapshot() has %d nodes, want 1", len(s.nodes))
	}
	n := s.nodes[0]
	got := []string{n.node.Name, n.pool, n.instanceType, n.zone, string(n.capacityType)}
	if diff := cmp.Diff([]string{"n1", "default", "m5.large", "us-east-1b", "spot"}, got); diff != "" {
		t.Errorf("node from labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"app/bound"}, keys(n.pods)); diff != "" {
		t.Errorf("pods on n1 (-want +got):\n%s", diff)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "1 pods in "+files.pods+" are bound to nodes not in "+files.nodes+" and are left out: app/elsewhere on n9") {
		t.Errorf("warnings = %q, want one about app/elsewhere on n9", warnings)
	}
}

// TestProvisionWarns checks that a warning goes to stderr and the plan still to stdout.
func TestProvisionWarns(t *testing.T) {
	code, stdout, stderr := runPlan(t, args([]string{"provision"}, []string{"--pods", writeTemp(t, "pods.yaml", snapshotPods)},
		[]string{"--nodes", writeTemp(t, "nodes.yaml", snapshotNodes)}, nodePools, catalog, []string{"-o", "json"}))
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	if !strings.HasPrefix(stderr, "plan: warning: 1 pods in ") {
		t.Errorf("stderr = %q, want a warning about the pod on an unknown node", stderr)
	}
	if !strings.Contains(stdout, `"app/pending"`) {
		t.Errorf("stdout does not plan app/pending:\n%s", stdout)
	}
}
