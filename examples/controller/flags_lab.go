package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
)

// labFlags are the flags of the lab: the simulation at scale, the simulation's own NodePools
// and catalog, and the kwok provider that runs the controller on a cluster with no cloud.
type labFlags struct {
	scale          int
	provider       string
	catalog        string
	kwokReadyAfter time.Duration

	fs *flag.FlagSet // to tell the flags given from the defaults
}

// Providers are the values of --provider.
var providers = []string{"ec2", "kwok"}

func (l *labFlags) register(fs *flag.FlagSet) {
	l.fs = fs
	fs.IntVar(&l.scale, "scale", 0, "simulation: scale a mix of Deployments to `N` pods and back to 0, and print the pending → nodeclaim and pending → running latencies (p50/p99)")
	fs.StringVar(&l.provider, "provider", "ec2", "with --kubeconfig: the cloud provider, ec2 (instances in your AWS account) or kwok (Nodes as objects, no cloud: try the controller on kind or any cluster)")
	fs.StringVar(&l.catalog, "catalog", "", "`file` of instance types (nodeplan's catalog JSON) that the simulation and --provider kwok sell; default: the embedded us-east-1 EC2 catalog")
	fs.DurationVar(&l.kwokReadyAfter, "kwok-ready-after", 5*time.Second, "with --provider kwok: how long after its launch a Node reports Ready")
}

// given reports whether the flag was set, on the command line or from its environment variable.
func (l *labFlags) given(name string) bool {
	if l.fs == nil {
		return false
	}
	set := false
	l.fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// checkProvider refuses an unknown --provider, and EC2's own flags with kwok.
func (l *labFlags) checkProvider() error {
	if !slices.Contains(providers, l.provider) {
		return fmt.Errorf("unknown --provider %q (want %s)", l.provider, strings.Join(providers, " or "))
	}
	if l.provider != "kwok" {
		if l.given("kwok-ready-after") {
			return fmt.Errorf("--kwok-ready-after is for --provider kwok, not %s", l.provider)
		}
		return nil
	}
	var ec2Only []string
	for _, f := range []string{"region", "interruption-queue", "kubeadm-ca-cert-hash", "service-cidr", "cluster-dns", "cluster-endpoint"} {
		if l.given(f) {
			ec2Only = append(ec2Only, "--"+f)
		}
	}
	if len(ec2Only) > 0 {
		return fmt.Errorf("%s: EC2's, not honoured with --provider kwok", strings.Join(ec2Only, ", "))
	}
	if l.kwokReadyAfter < 0 {
		return fmt.Errorf("--kwok-ready-after %v: want a duration of 0 or more", l.kwokReadyAfter)
	}
	return nil
}

// loadCatalog reads --catalog, or returns the embedded catalog without it.
func (l *labFlags) loadCatalog() ([]nodeplan.InstanceType, string, error) {
	if l.catalog == "" {
		return sim.Catalog(), "the embedded us-east-1 EC2 catalog", nil
	}
	data, err := os.ReadFile(l.catalog)
	if err != nil {
		return nil, "", fmt.Errorf("--catalog: %w", err)
	}
	its, err := nodeplan.DecodeCatalog(data)
	if err != nil {
		return nil, "", fmt.Errorf("--catalog %s: %w", l.catalog, err)
	}
	if len(its) == 0 {
		return nil, "", fmt.Errorf("--catalog %s: no instance types", l.catalog)
	}
	return its, l.catalog, nil
}
