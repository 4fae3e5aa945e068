package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
)

// myPools is a user's NodePool, unlike the lab's: on-demand only, m family, its own label, and
// its EC2NodeClass beside it.
const myPools = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: mine
spec:
  template:
    metadata:
      labels:
        team: a
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: mine
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: ["m5", "m6i"]
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 30s
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: mine
spec:
  role: KarpenterNodeRole-mine
  amiSelectorTerms:
    - alias: al2023@latest
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: mine
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: mine
`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSimulationPlaysNodePools: --nodepools and --catalog replace the lab's pool and the
// embedded catalog, the header says which it plays, and the launch obeys them.
func TestSimulationPlaysNodePools(t *testing.T) {
	pools := writeFile(t, "pools.yaml", myPools)
	var two []nodeplan.InstanceType
	for _, it := range sim.Catalog() {
		if it.Name == "m5.2xlarge" || it.Name == "c5.2xlarge" {
			two = append(two, it)
		}
	}
	data, err := nodeplan.EncodeCatalog(two)
	if err != nil || len(two) != 2 {
		t.Fatalf("a catalog of m5.2xlarge and c5.2xlarge: %d types, %v", len(two), err)
	}
	catalog := writeFile(t, "catalog.json", string(data))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, []string{"--nodepools", pools, "--catalog", catalog}, &out, &out); err != nil {
		t.Fatalf("run(--nodepools, --catalog) = %v\noutput:\n%s", err, out.String())
	}
	for _, want := range []string{
		`(?m)^playing NodePool\(s\) mine from ` + regexp.QuoteMeta(pools) + `; catalog: 2 instance types from ` + regexp.QuoteMeta(catalog) + `$`,
		`(?m)^nodepool mine: labels team=a, .*karpenter.sh/capacity-type In \[on-demand\].*consolidateAfter 30s$`,
		`(?m)^the inflate pods select no node label: no NodePool played labels its nodes eks-team=my-team`,
		`(?m)created deployment karpenter-test/inflate replicas=0 requests=cpu:1 nodeSelector=none$`,
		`(?m)launched nodeclaim mine-[a-z0-9]{5} nodepool=mine instance-type=m5.2xlarge zone=\S+ capacity-type=on-demand `,
		`(?m)^  nodes launched: 1$`,
	} {
		if !regexp.MustCompile(want).MatchString(out.String()) {
			t.Errorf("output lacks a line matching %s\noutput:\n%s", want, out.String())
		}
	}
}

// TestSimulationRefusesFlags: a flag the simulation cannot honour is an error, not ignored.
func TestSimulationRefusesFlags(t *testing.T) {
	noClass := writeFile(t, "pools.yaml", strings.Split(myPools, "---")[0])
	notPools := writeFile(t, "empty.yaml", "# nothing\n")
	badCatalog := writeFile(t, "catalog.json", `[{"name": "x", "capacity": {"cpu": "lots"}}]`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster-name", "lab"}, "--cluster-name: only with a cluster (--kubeconfig); the simulation cannot honour it"},
		{[]string{"--provider", "kwok", "--leader-elect=false"}, "--leader-elect, --provider: only with a cluster"},
		{[]string{"--scenario", "ice", "--scale", "10"}, "--scenario and --scale: give one"},
		{[]string{"--nodepools", noClass}, `NodePool mine: its EC2NodeClass "mine" is not in the file`},
		{[]string{"--nodepools", notPools}, "no NodePool"},
		{[]string{"--nodepools", "/nonexistent/pools.yaml"}, "--nodepools: open /nonexistent/pools.yaml"},
		{[]string{"--catalog", badCatalog}, "--catalog " + badCatalog + ": "},
	} {
		var out bytes.Buffer
		err := run(context.Background(), tc.args, &out, &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want an error with %q", tc.args, err, tc.want)
		}
		if strings.Contains(out.String(), "controller started") {
			t.Errorf("run(%q) started a simulation before refusing:\n%s", tc.args, out.String())
		}
	}
}
