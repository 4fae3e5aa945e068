package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	apiversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/examples/kwok"
)

// TestProviderFlag: --provider picks the provider the controller runs with; ec2 stays the
// default.
func TestProviderFlag(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl := clusterInfo{rest: &rest.Config{Host: "https://127.0.0.1:6443"}, client: fake.NewClientset(),
		version: &apiversion.Info{Major: "1", Minor: "37"}, nodeClass: func(string) (*ec2.NodeClass, bool) { return nil, false }}
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster-name", "lab", "--region", "us-east-1"}, "*ec2.Provider"},
		{[]string{"--provider", "ec2", "--cluster-name", "lab", "--region", "us-east-1"}, "*ec2.Provider"},
		{[]string{"--provider", "kwok", "--kwok-ready-after", "2s"}, "*kwok.Provider"},
	} {
		o, err := parseFlags(append([]string{"--kubeconfig", "/nonexistent/kubeconfig"}, tc.args...), io.Discard)
		if err != nil {
			t.Fatalf("parseFlags(%q) = %v", tc.args, err)
		}
		built, err := newProvider(ctx, o, cl, log)
		if err != nil {
			t.Fatalf("newProvider(%q) = %v", tc.args, err)
		}
		var got string
		switch p := built.provider.(type) {
		case *ec2.Provider:
			got = "*ec2.Provider"
		case *kwok.Provider:
			got = "*kwok.Provider"
			if p.ReadyAfter != 2*time.Second || p.Owner != "nodeplan" || len(p.Catalog) == 0 || built.whileLeading == nil {
				t.Errorf("kwok provider: ReadyAfter %v, Owner %q, %d types, kubelets %v; want 2s, the installation, the embedded catalog, kubelets to run",
					p.ReadyAfter, p.Owner, len(p.Catalog), built.whileLeading != nil)
			}
		default:
			got = "something else"
		}
		if got != tc.want {
			t.Errorf("newProvider(%q) = %s, want %s", tc.args, got, tc.want)
		}
	}
}

// TestProviderFlagErrors: a provider the controller does not have, or a flag the chosen one
// cannot honour, is a one-line error before anything connects to the cluster.
func TestProviderFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--provider", "gce"}, `unknown --provider "gce" (want ec2 or kwok)`},
		{[]string{"--provider", "kwok", "--region", "us-east-1", "--interruption-queue", "q"}, "--region, --interruption-queue: EC2's, not honoured with --provider kwok"},
		{[]string{"--kwok-ready-after", "1s", "--cluster-name", "lab"}, "--kwok-ready-after is for --provider kwok, not ec2"},
	} {
		args := append([]string{"--kubeconfig", "/nonexistent/kubeconfig"}, tc.args...)
		var out bytes.Buffer
		err := run(context.Background(), args, &out, &out)
		if err == nil || err.Error() != tc.want {
			t.Errorf("run(%q) = %v, want the one-line error %q", args, err, tc.want)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("run(%q): the error has more than one line: %q", args, err)
		}
	}
}
