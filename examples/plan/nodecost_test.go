package main

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeplan/nodeplan/pricing"
)

// nodeCostFiles are three pods of 1.5 CPU and a NodePool whose EC2NodeClass attaches a 1,000Gi
// io2 volume with 10,000 IOPS to every node.
var nodeCostFiles = []string{"--pods", "testdata/nodecost/pods.yaml", "--nodepools", "testdata/nodecost/nodepools.yaml"}

// TestNodeClassVolumesArePriced: given the pool's EC2NodeClass, its volume ($1,000×0.125 +
// 10,000×0.065 a month) is part of every node's cost, so the plan takes one large node where,
// priced by instances alone, two small ones are cheaper; without the class the volume is not
// priced, and a notice says so.
func TestNodeClassVolumesArePriced(t *testing.T) {
	type report struct {
		NodeClaims []struct {
			InstanceType string `json:"instanceType"`
		} `json:"nodeClaims"`
		TotalPrice float64  `json:"totalPrice"`
		NodeCost   float64  `json:"nodeCost"`
		Notices    []string `json:"notices"`
	}
	plan := func(extra ...string) report {
		t.Helper()
		argv := args([]string{"provision"}, nodeCostFiles, catalog, extra, []string{"-o", "json"})
		code, stdout, stderr := runPlan(t, argv)
		if code != exitOK {
			t.Fatalf("plan %v exited %d: %s", argv, code, stderr)
		}
		var rep report
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, stdout)
		}
		return rep
	}
	volume := (1000*0.125 + 10000*0.065) / pricing.HoursPerMonth

	priced := plan("--ec2nodeclasses", "testdata/nodecost/ec2nodeclasses.yaml")
	if len(priced.NodeClaims) != 1 || math.Abs(priced.NodeCost-volume) > 1e-6 {
		t.Errorf("with the node class: %d nodes, node cost $%v/h; want 1 node and the volume's $%.6f/h", len(priced.NodeClaims), priced.NodeCost, volume)
	}
	wantNotice := "node cost: the EBS volumes of each pool's EC2NodeClass, at us-east-1 list prices, are part of every node's cost: big-disk $1.0616/h"
	if diff := cmp.Diff([]string{wantNotice}, priced.Notices); diff != "" {
		t.Errorf("notices with the node class (-want +got):\n%s", diff)
	}

	unpriced := plan()
	if len(unpriced.NodeClaims) < 2 || unpriced.NodeCost != 0 {
		t.Errorf("without the node class: %d nodes, node cost $%v/h; want the cheaper instances (2 nodes) and no node cost", len(unpriced.NodeClaims), unpriced.NodeCost)
	}
	wantNotice = "node cost: the root volumes of NodePools big-disk are not priced: their EC2NodeClasses were not given (--ec2nodeclasses)"
	if diff := cmp.Diff([]string{wantNotice}, unpriced.Notices); diff != "" {
		t.Errorf("notices without the node class (-want +got):\n%s", diff)
	}
}
