// Command controller is nodeplan's example node autoscaler. With no flags it runs a whole
// scale-up and consolidation cycle in simulation and exits; with --kubeconfig it runs against a
// real cluster. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/examples/internal/logging"
	"github.com/nodeplan/nodeplan/examples/internal/version"
	"github.com/nodeplan/nodeplan/scheduling"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		if isUsage(err) {
			os.Exit(2) // a command line refused, as the flag package's own programs exit
		}
		os.Exit(1)
	}
}

type options struct {
	scenario    string
	list        bool
	version     bool
	verbose     bool
	metricsAddr string
	planner     string

	kubeconfig         string
	nodePools          string
	nodePoolsConfigMap string
	leaderElect        bool
	leaseNamespace     string
	leaseName          string
	identity           string
	logFormat          string
	logFormatSet       bool // --log-format given: the simulation prints its JSON records too
	region             string
	clusterName        string
	serviceCIDR        string
	clusterDNS         string
	kubeadmCACertHash  string
	interruptionQueue  string
	costModel          string
	nodeOverlays       string
	installation       string
	adopt              bool
	capacityBuffers    bool
	nodeCost           float64
	printCRDs          bool
	settings
	lab labFlags
}

// parseFlags reads the command line, then the environment for the flags not given. With -h
// it writes the grouped help to help and returns flag.ErrHelp; a refused command line is a
// usageError, one line.
func parseFlags(args []string, help io.Writer) (options, error) {
	var o options
	fs := o.flagSet()
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(help, fs)
			return o, err
		}
		return o, usageError{err}
	}
	fs.Visit(func(f *flag.Flag) { o.logFormatSet = o.logFormatSet || f.Name == "log-format" })
	if err := applyEnv(fs, &o.settings, os.Getenv); err != nil {
		return o, err
	}
	if err := o.settings.check(); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, usageError{fmt.Errorf("unexpected arguments %v: the controller takes flags only", fs.Args())}
	}
	if err := (scheduling.NodeCost{PerNode: o.nodeCost}).Validate(); err != nil {
		return o, fmt.Errorf("--node-cost %v: want a non-negative $/h", o.nodeCost)
	}
	return o, nil
}

// flagSet defines every flag of the command on o's fields; help.go's flagGroups sorts them
// for -h.
func (o *options) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	// The flag package would print every flag after an error; the error alone is the answer
	// to a mistyped flag, and -h prints the groups (printHelp).
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&o.scenario, "scenario", "inflate", "simulation scenario: inflate, spot-interruption, ice, drift")
	fs.BoolVar(&o.list, "list", false, "list the simulation scenarios and exit")
	fs.BoolVar(&o.version, "version", false, "print the build (module version or VCS revision) and exit")
	fs.BoolVar(&o.verbose, "v", false, "verbose: debug lines too")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", `serve Prometheus metrics on this address (e.g. ":8080"); off when empty`)
	fs.StringVar(&o.planner, "planner", "disruption", "disruption planner: disruption (nodeplan's planner) or emptiness (empty nodes only)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "run against the cluster of this kubeconfig instead of simulating")
	fs.StringVar(&o.nodePools, "nodepools", "", "file of Karpenter v1 NodePool (and EC2NodeClass) YAML; default: the cluster's NodePools and EC2NodeClasses, watched; simulating, played instead of the lab's")
	fs.StringVar(&o.nodePoolsConfigMap, "nodepools-configmap", "", "namespace/name of a ConfigMap whose nodepools.yaml key holds the NodePools")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "run only while holding the Lease, so replicas can run side by side")
	fs.StringVar(&o.leaseNamespace, "lease-namespace", "kube-system", "namespace of the leader-election Lease")
	fs.StringVar(&o.leaseName, "lease-name", "nodeplan-controller", "name of the leader-election Lease")
	fs.StringVar(&o.identity, "identity", "", "this replica's name in the Lease; empty means the hostname")
	fs.StringVar(&o.logFormat, "log-format", "json", "json or text; simulating, --log-format json prints the controller's JSON records on stdout and the timeline on stderr")
	fs.StringVar(&o.region, "region", "", "AWS region (default from the environment)")
	fs.StringVar(&o.clusterName, "cluster-name", "", "cluster name, for discovery tags and instance tags")
	fs.StringVar(&o.serviceCIDR, "service-cidr", "", "the cluster's Service CIDR, for node bootstrap (AL2023)")
	fs.StringVar(&o.clusterDNS, "cluster-dns", "", "the cluster DNS Service IP, for node bootstrap")
	fs.StringVar(&o.kubeadmCACertHash, "kubeadm-ca-cert-hash", "", "sha256:<hex> pins of the cluster CA, comma-separated; nodes of Custom node classes then join with kubeadm, each with a bootstrap token minted for its launch and deleted once it registers")
	fs.StringVar(&o.interruptionQueue, "interruption-queue", "", "the SQS queue receiving EC2 interruption events: its name (as Karpenter's chart sets it), resolved in the region, or its URL")
	fs.StringVar(&o.costModel, "cost-model", "", "with a cluster: file of what you pay (pricing.CostModel YAML: discounts, Savings Plan and RI prices), applied to every catalog")
	fs.StringVar(&o.nodeOverlays, "nodeoverlays", "", "with a cluster: file of Karpenter NodeOverlays (karpenter.sh/v1alpha1) applied to every catalog after the cost model")
	fs.StringVar(&o.installation, "installation", "nodeplan", "this installation's name on its NodeClaims (annotation nodeplan.io/installation); it acts only on those")
	fs.BoolVar(&o.adopt, "adopt", false, "take over NodeClaims of another installation (a Karpenter controller being replaced) and their Nodes and instances")
	fs.BoolVar(&o.capacityBuffers, "capacity-buffers", false, "keep the spare room of autoscaling.x-k8s.io CapacityBuffers (Karpenter's CapacityBuffer gate; the CRD must be installed)")
	fs.Float64Var(&o.nodeCost, "node-cost", 0, "`$/h` each node costs beyond its instance and its node class's EBS volumes (priced automatically): a public IPv4 address, per-host licences; weighed by every plan and included in the costs logged")
	fs.BoolVar(&o.printCRDs, "print-crds", false, "print Karpenter's CRDs (NodePool, NodeClaim, EC2NodeClass, NodeOverlay, CapacityBuffer) as YAML for kubectl apply, and exit")
	o.settings.register(fs)
	o.lab.register(fs)
	return fs
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if o.version {
		fmt.Fprintln(stdout, version.String("controller"))
		return nil
	}
	if o.printCRDs {
		_, err := stdout.Write(controller.CRDYAML())
		return err
	}
	if o.list {
		for _, s := range scenarios {
			fmt.Fprintf(stdout, "%-18s %s\n", s.name, s.about)
		}
		return nil
	}
	cluster, err := onCluster(o, os.Getenv)
	if err != nil {
		return err
	}
	o.setMemoryLimit()
	var metrics *controller.Metrics
	if o.metricsAddr != "" {
		metrics = controller.NewMetrics()
		srv, err := serveMetrics(o.metricsAddr, metrics, o.enableProfiling)
		if err != nil {
			return err
		}
		defer srv.Close()
	}
	var planner controller.Planner
	switch o.planner {
	case "disruption":
	case "emptiness":
		planner = controller.Emptiness{}
	default:
		return fmt.Errorf("unknown --planner %q (want disruption or emptiness)", o.planner)
	}
	if cluster {
		logs := stderr
		if o.logOutputPaths == "stdout" {
			logs = stdout // LOG_OUTPUT_PATHS=stdout, Karpenter's default
		}
		return runCluster(ctx, o, metrics, planner, logs)
	}
	so, err := o.simulation(metrics, planner) // simulate.go: refuses the flags it cannot honour
	if err != nil {
		return err
	}
	timeline := stdout
	if o.logFormatSet && o.logFormat == "json" {
		// The records Karpenter's operators grep and jq, alone on stdout as in `kubectl logs`.
		timeline, so.JSONLog = stderr, stdout
	}
	return simulate(ctx, timeline, so)
}

// serveMetrics serves /metrics on addr and, with profiling (ENABLE_PROFILING), Go's pprof
// profiles under /debug/pprof/, as Karpenter serves them on its metrics port.
func serveMetrics(addr string, m *controller.Metrics, profiling bool) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	return srv, nil
}

// newLogger is Karpenter's log layout (package logging) at info, or debug with verbose.
func newLogger(format string, w io.Writer, verbose bool, level string) *slog.Logger {
	if level == "" {
		level = "info"
	}
	if verbose {
		level = "debug"
	}
	log, err := logging.New(logging.Options{Level: level, Format: format, Writer: w})
	if err != nil {
		log, _ = logging.New(logging.Options{Level: level, Writer: w})
	}
	return log
}
