package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// flagGroup is a heading of `controller -h` and the flags under it, in the order shown.
type flagGroup struct {
	title string
	flags []string
}

// flagGroups sorts every flag for `controller -h`, simulation apart from cluster, so a reader
// finds the flags of the mode they run. A flag missing here is shown under "Other"
// (TestHelpGroups refuses that); one listed but not registered is skipped.
var flagGroups = []flagGroup{
	{"Simulation (the default: no cluster, a scenario played on a simulated clock)", []string{"scenario", "list", "scale", "catalog"}},
	{"Cluster (with --kubeconfig, or in a pod: KUBERNETES_SERVICE_HOST and CLUSTER_NAME set)", []string{
		"kubeconfig", "provider", "kwok-ready-after", "cluster-name", "cluster-endpoint", "cluster-ca-bundle", "installation", "adopt", "nodepools", "nodepools-configmap",
		"capacity-buffers", "service-cidr", "cluster-dns", "kubeadm-ca-cert-hash", "kube-client-qps", "kube-client-burst",
		"leader-elect", "lease-namespace", "lease-name", "identity", "memory-limit"}},
	{"AWS (with a cluster; credentials and region from the SDK's environment)", []string{"region", "interruption-queue", "isolated-vpc",
		"vm-memory-overhead-percent", "ami-refresh-interval", "subnet-refresh-interval"}},
	{"Planning and prices", []string{"planner", "preference-policy", "min-values-policy", "batch-idle-duration", "batch-max-duration",
		"node-cost", "cost-model", "nodeoverlays"}},
	{"Observability", []string{"log-format", "log-level", "log-output-paths", "v", "metrics-addr",
		"enable-profiling", "health-probe-addr"}},
	{"Other commands", []string{"version", "print-crds"}},
}

// usageError is a command line the flags refuse: main prints it on one line and exits 2, as
// the flag package's own programs do.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() + " (see controller -h)" }
func (e usageError) Unwrap() error { return e.err }

// isUsage reports whether err is a refused command line.
func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

// groupsOf returns flagGroups, and any flag of fs in none of them under "Other".
func groupsOf(fs *flag.FlagSet) []flagGroup {
	groups := slices.Clone(flagGroups)
	seen := map[string]bool{}
	for _, g := range flagGroups {
		for _, n := range g.flags {
			seen[n] = true
		}
	}
	var other []string
	fs.VisitAll(func(f *flag.Flag) {
		if !seen[f.Name] {
			other = append(other, f.Name)
		}
	})
	if len(other) > 0 {
		groups = append(groups, flagGroup{title: "Other", flags: other})
	}
	return groups
}

// printHelp writes `controller -h`: what the command does, then each group's flags with
// their defaults and, beside a flag a Karpenter setting also sets, the environment variable.
func printHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `Usage: controller [flags]

nodeplan's example node autoscaler. With no flags it plays a simulated scenario and exits; with
--kubeconfig, or in a pod with CLUSTER_NAME set, it runs against the cluster. A flag not given
on the command line is read from the environment variable shown beside it (Karpenter's names,
as its chart sets them); the command line wins.
`)
	env := map[string][]string{}
	for _, e := range envFlags() {
		name := e.env
		switch {
		case e.port:
			name += ": a port, for :<port>"
		case e.invert:
			name += ": true means false"
		}
		env[e.flag] = append(env[e.flag], name)
	}
	env["capacity-buffers"] = append(env["capacity-buffers"], "FEATURE_GATES CapacityBuffer=true")
	env["lease-namespace"] = slices.Sorted(slices.Values(env["lease-namespace"])) // LEADER_ELECTION_NAMESPACE first: it wins
	for _, g := range groupsOf(fs) {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, name := range g.flags {
			f := fs.Lookup(name)
			if f == nil {
				continue // a flag of the table not registered (yet): nothing to show
			}
			fmt.Fprint(w, flagHelp(f, env[name]))
		}
	}
	fmt.Fprint(w, "\nKarpenter's other settings (start-up fails when one is set to anything but Karpenter's default):\n")
	for _, e := range karpenterEnv {
		if e.refused != "" {
			fmt.Fprintf(w, "  %s (default %s)\n    \t%s\n", e.env, e.def, e.refused)
		}
	}
	fmt.Fprint(w, "\nKarpenter's settings accepted with no effect (logged at start-up):\n")
	for _, e := range karpenterEnv {
		if e.inert != "" {
			fmt.Fprintf(w, "  %s\n    \t%s\n", e.env, e.inert)
		}
	}
}

// flagHelp is one flag's entry, in the flag package's layout: "  -name type", then the usage
// indented on the next line, with the default and the environment variable.
func flagHelp(f *flag.Flag, env []string) string {
	var b strings.Builder
	typ, usage := flag.UnquoteUsage(f)
	fmt.Fprintf(&b, "  -%s", f.Name)
	if typ != "" {
		fmt.Fprintf(&b, " %s", typ)
	}
	if len(env) > 0 {
		fmt.Fprintf(&b, "  (env %s)", strings.Join(env, ", "))
	}
	b.WriteString("\n    \t")
	b.WriteString(strings.ReplaceAll(usage, "\n", "\n    \t"))
	if d := f.DefValue; d != "" && d != "0" && d != "false" {
		if typ == "string" {
			d = fmt.Sprintf("%q", d)
		}
		fmt.Fprintf(&b, " (default %s)", d)
	}
	b.WriteString("\n")
	return b.String()
}
