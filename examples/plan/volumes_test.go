package main

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A StatefulSet pod whose claim is bound to a zonal EBS volume gets a node in the volume's zone;
// one whose unbound claim's StorageClass allows one zone gets a node there; one whose claim does
// not exist is left out with the reason (#13 item 8).
func TestProvisionFollowsVolumes(t *testing.T) {
	argv := args([]string{"provision"}, []string{"--pods", "testdata/volumes/pods.yaml"}, nodePools, catalog,
		[]string{"--pvcs", "testdata/volumes/pvcs.yaml", "--pvs", "testdata/volumes/pvs.yaml",
			"--storageclasses", "testdata/volumes/storageclasses.yaml", "-o", "json"})
	code, stdout, stderr := runPlan(t, argv)
	if code != 0 {
		t.Fatalf("plan %v exited %d: %s", argv, code, stderr)
	}
	var rep struct {
		NodeClaims []struct {
			Zone string   `json:"zone"`
			Pods []string `json:"pods"`
		} `json:"nodeClaims"`
		Notices []string `json:"notices"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout)
	}
	got := map[string]string{}
	for _, c := range rep.NodeClaims {
		for _, p := range c.Pods {
			got[p] = c.Zone
		}
	}
	if diff := cmp.Diff(map[string]string{"shop/db-0": "us-east-1b", "shop/db-1": "us-east-1c"}, got); diff != "" {
		t.Errorf("zones of the planned pods (-want +got):\n%s", diff)
	}
	want := "pod shop/db-2 left out: PersistentVolumeClaim shop/data-db-2 does not exist"
	found := false
	for _, n := range rep.Notices {
		found = found || n == want
	}
	if !found {
		t.Errorf("notices = %q, want one %q", rep.Notices, want)
	}
}
