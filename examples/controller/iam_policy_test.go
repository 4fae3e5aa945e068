package main

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/pricing"
)

// policyDocument is the part of an IAM policy the test reads. Action is a string or a list.
type policyDocument struct {
	Version   string
	Statement []struct {
		Sid       string
		Effect    string
		Action    json.RawMessage
		Resource  json.RawMessage
		Condition map[string]map[string]json.RawMessage
	}
}

func readPolicy(t *testing.T) policyDocument {
	t.Helper()
	b, err := os.ReadFile("iam-policy.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc policyDocument
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("iam-policy.json: %v", err)
	}
	return doc
}

func stringOrList(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		t.Fatalf("iam-policy.json: %s is neither a string nor a list of strings", raw)
	}
	return many
}

// methods returns "prefix:Method" for each method of the interface type T: the API calls a
// client of that interface can make.
func methods[T any](prefix string) []string {
	typ := reflect.TypeFor[T]()
	var out []string
	for i := range typ.NumMethod() {
		out = append(out, prefix+typ.Method(i).Name)
	}
	return out
}

// TestIAMPolicyMatchesTheCode: the shipped policy allows exactly the AWS actions the code can
// call — every method of the EC2, SSM and SQS interfaces the EC2 provider is given, of the
// clients package pricing is given, and the queue-name lookup — plus the two the API authorizes on the side of those calls
// (ec2:RunInstances for an instant CreateFleet, ec2:CreateTags for its tags) and iam:PassRole
// for the nodes' instance profile. Nothing more: no Allow on a wildcard action, no Deny needed.
func TestIAMPolicyMatchesTheCode(t *testing.T) {
	doc := readPolicy(t)
	if doc.Version != "2012-10-17" {
		t.Errorf("Version = %q, want 2012-10-17", doc.Version)
	}
	var allowed []string
	for _, st := range doc.Statement {
		if st.Effect != "Allow" {
			t.Errorf("statement %s: Effect %q, want Allow", st.Sid, st.Effect)
		}
		for _, a := range stringOrList(t, st.Action) {
			if strings.Contains(a, "*") {
				t.Errorf("statement %s: wildcard action %q", st.Sid, a)
			}
			allowed = append(allowed, a)
		}
		if len(stringOrList(t, st.Resource)) == 0 {
			t.Errorf("statement %s: no Resource", st.Sid)
		}
	}
	var called []string
	called = append(called, methods[ec2.EC2API]("ec2:")...)
	called = append(called, methods[ec2.SSMAPI]("ssm:")...)
	called = append(called, methods[ec2.SQSAPI]("sqs:")...)
	called = append(called, methods[queueURLGetter]("sqs:")...) // an INTERRUPTION_QUEUE name
	live := reflect.TypeFor[pricing.Live]()
	for _, f := range []struct{ field, prefix string }{{"Pricing", "pricing:"}, {"EC2", "ec2:"}} {
		sf, ok := live.FieldByName(f.field)
		if !ok {
			t.Fatalf("pricing.Live has no field %s", f.field)
		}
		for i := range sf.Type.NumMethod() {
			called = append(called, f.prefix+sf.Type.Method(i).Name)
		}
	}
	called = append(called, "ec2:RunInstances", "ec2:CreateTags", "iam:PassRole")
	slices.Sort(called)
	called = slices.Compact(called)
	slices.Sort(allowed)
	allowed = slices.Compact(allowed)
	if diff := cmp.Diff(called, allowed); diff != "" {
		t.Errorf("actions the code calls vs the policy allows (-code +policy):\n%s", diff)
	}
}

// TestIAMPolicyScoping: the statements that change things are scoped as the README says:
// termination only of instances tagged with this cluster and this installation, tags written
// only by the creating call, launches only with those tags.
func TestIAMPolicyScoping(t *testing.T) {
	doc := readPolicy(t)
	conds := map[string][]string{} // action → the condition keys of each statement allowing it
	for _, st := range doc.Statement {
		var keys []string
		for op, kv := range st.Condition {
			for k, v := range kv {
				keys = append(keys, op+" "+k+"="+string(v))
			}
		}
		slices.Sort(keys)
		for _, a := range stringOrList(t, st.Action) {
			conds[a] = append(conds[a], strings.Join(keys, "; "))
		}
	}
	want := map[string]string{
		"ec2:TerminateInstances":   `StringEquals aws:ResourceTag/kubernetes.io/cluster/CLUSTER_NAME="owned"; StringEquals aws:ResourceTag/nodeplan.io/installation="INSTALLATION"`,
		"ec2:CreateTags":           `StringEquals ec2:CreateAction=["CreateFleet", "CreateLaunchTemplate", "RunInstances"]`,
		"ec2:CreateLaunchTemplate": `StringEquals aws:RequestTag/kubernetes.io/cluster/CLUSTER_NAME="owned"`,
		"iam:PassRole":             `StringEquals iam:PassedToService="ec2.amazonaws.com"`,
	}
	for action, w := range want {
		if diff := cmp.Diff([]string{w}, conds[action]); diff != "" {
			t.Errorf("%s conditions (-want +got):\n%s", action, diff)
		}
	}
	// Launching: every statement either names existing resources or requires the tags.
	tagged := `StringEquals aws:RequestTag/kubernetes.io/cluster/CLUSTER_NAME="owned"; StringEquals aws:RequestTag/nodeplan.io/installation="INSTALLATION"; StringLike aws:RequestTag/karpenter.sh/nodepool="*"`
	for _, a := range []string{"ec2:CreateFleet", "ec2:RunInstances"} {
		if !slices.Contains(conds[a], tagged) {
			t.Errorf("%s: no statement requires the cluster, installation and nodepool tags on what it creates; got %q", a, conds[a])
		}
	}
}
