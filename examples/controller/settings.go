package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/scheduling"
)

// settings are the in-cluster settings, named as Karpenter's chart names them. Each flag also
// reads an environment variable (Karpenter's name) when not given on the command line, so a
// Deployment sets them through env as Karpenter's does.
type settings struct {
	clusterEndpoint  string
	clusterCABundle  string
	logLevel         string
	logOutputPaths   string
	qps              float64
	burst            int
	healthAddr       string
	batchIdle        time.Duration
	batchMax         time.Duration
	preferencePolicy string
	minValuesPolicy  string
	vmMemoryOverhead float64
	memoryLimit      int64
	enableProfiling  bool
	isolatedVPC      bool
	amiRefresh       time.Duration
	subnetRefresh    time.Duration
	noSpotToSpot     bool     // FEATURE_GATES SpotToSpotConsolidation=false
	inert            []string // Karpenter variables set that mean nothing here, and why
}

// karpenterEnv is every environment variable Karpenter v1.14 documents for its controller
// (the provider's website/content/en/v1.14/reference/settings.md), and SYSTEM_NAMESPACE,
// which its chart sets, with what this controller does with each. A variable is honoured (it
// sets flag, with Karpenter's meaning), refused (set to anything but Karpenter's default def,
// start-up fails with the sentence refused), or inert (any value is accepted and logged with
// the sentence inert: what it configures does not exist here). TestKarpenterEnv holds the list
// to Karpenter's.
var karpenterEnv = []envSetting{
	{env: "AMI_REFRESH_INTERVAL", flag: "ami-refresh-interval"},
	{env: "BATCH_IDLE_DURATION", flag: "batch-idle-duration"},
	{env: "BATCH_MAX_DURATION", flag: "batch-max-duration"},
	{env: "CLUSTER_CA_BUNDLE", flag: "cluster-ca-bundle"},
	{env: "CLUSTER_ENDPOINT", flag: "cluster-endpoint"},
	{env: "CLUSTER_NAME", flag: "cluster-name"},
	{env: "CPU_REQUESTS", inert: "it sizes Karpenter's reconciler concurrency from the pod's CPU request; this controller runs one reconcile loop whatever the pod requests"},
	{env: "DISABLE_CLUSTER_STATE_OBSERVABILITY", def: "false", refused: "this controller always publishes its cluster-state metrics and events"},
	{env: "DISABLE_CONTROLLER_WARMUP", def: "true", refused: "this controller starts its caches only once it leads; it has no warm-up to enable"},
	{env: "DISABLE_DRY_RUN", inert: "this controller validates EC2NodeClasses by resolving their selectors and never makes dry-run calls, whatever the value"},
	{env: "DISABLE_LEADER_ELECTION", flag: "leader-elect", invert: true},
	{env: "EKS_CONTROL_PLANE", def: "false", refused: "this controller does not call eks:DescribeCluster; set CLUSTER_ENDPOINT (and CLUSTER_CA_BUNDLE if the client's CA is not the nodes')"},
	{env: "ENABLE_PROFILING", flag: "enable-profiling"},
	{env: "ENABLE_ZONAL_SHIFT", def: "false", refused: "this controller does not follow ARC zonal shifts; keep a zone out with the NodePool's topology.kubernetes.io/zone requirement"},
	{env: "FEATURE_GATES"}, // featureGates: gate by gate
	{env: "HEALTH_PROBE_PORT", flag: "health-probe-addr", port: true},
	{env: "IGNORE_DRA_REQUESTS", def: "true", refused: "the solver does not model dynamic resource allocation: pods' DRA requests are always ignored"},
	{env: "INTERRUPTION_QUEUE", flag: "interruption-queue"},
	{env: "ISOLATED_VPC", flag: "isolated-vpc"},
	{env: "KARPENTER_SERVICE", inert: "it names the Service of Karpenter's webhook certificate; this controller serves no webhook"},
	{env: "KUBE_CLIENT_BURST", flag: "kube-client-burst"},
	{env: "KUBE_CLIENT_QPS", flag: "kube-client-qps"},
	{env: "LEADER_ELECTION_NAME", flag: "lease-name"},
	{env: "SYSTEM_NAMESPACE", flag: "lease-namespace"}, // the pod's namespace; LEADER_ELECTION_NAMESPACE wins
	{env: "LEADER_ELECTION_NAMESPACE", flag: "lease-namespace"},
	{env: "LOG_ERROR_OUTPUT_PATHS", def: "stderr", refused: "this controller has no separate log of its logger's own errors; its records go to LOG_OUTPUT_PATHS"},
	{env: "LOG_LEVEL", flag: "log-level"},
	{env: "LOG_OUTPUT_PATHS", flag: "log-output-paths"},
	{env: "MEMORY_LIMIT", flag: "memory-limit"},
	{env: "METRICS_PORT", flag: "metrics-addr", port: true},
	{env: "MIN_VALUES_POLICY", flag: "min-values-policy"},
	{env: "PREFERENCE_POLICY", flag: "preference-policy"},
	{env: "RESERVED_ENIS", def: "0", refused: "the EC2 provider has no reserved-ENI setting; set kubelet.maxPods in the EC2NodeClass to the pods your ENIs leave room for"},
	{env: "SUBNET_REFRESH_INTERVAL", flag: "subnet-refresh-interval"},
	{env: "VM_MEMORY_OVERHEAD_PERCENT", flag: "vm-memory-overhead-percent"},
}

// envSetting is one of Karpenter's environment variables; see karpenterEnv.
type envSetting struct {
	env, flag string
	port      bool // a port where the flag takes an address: ":<port>"
	invert    bool // a boolean that sets the flag to its negation (DISABLE_…)
	def       string
	refused   string
	inert     string
}

// featureGates are Karpenter v1.14's gates, each with its default and, where this controller
// cannot do what a value asks, why. A value not refused is honoured (see applyGates).
var featureGates = []struct {
	name, def string
	refuse    map[bool]string
}{
	{"NodeRepair", "false", map[bool]string{true: "this controller does not repair unhealthy nodes"}},
	{"ReservedCapacity", "true", map[bool]string{false: "this controller always launches into the capacity reservations an EC2NodeClass selects"}},
	{"SpotToSpotConsolidation", "false", nil},
	{"NodeOverlay", "false", map[bool]string{true: "this controller applies NodeOverlays from --nodeoverlays only, not the cluster's"}},
	{"StaticCapacity", "false", nil},
	{"CapacityBuffer", "false", nil},
}

func (s *settings) register(fs *flag.FlagSet) {
	fs.StringVar(&s.clusterEndpoint, "cluster-endpoint", "", "the API server URL nodes join (written into node bootstrap); empty means the client's own server URL")
	fs.StringVar(&s.clusterCABundle, "cluster-ca-bundle", "", "base64 of the PEM CA bundle nodes trust the API server with (written into node bootstrap); empty means the client's CA")
	fs.StringVar(&s.logLevel, "log-level", "", "debug, info or error (default info; -v means debug)")
	fs.StringVar(&s.logOutputPaths, "log-output-paths", "stderr", "where the log records go on a cluster: stdout or stderr (Karpenter's default is stdout)")
	// Karpenter's defaults: 200 requests/s, bursts of 300. client-go's own (5/10) throttle a
	// 1,000-node cluster's drains, patches and events to minutes.
	fs.Float64Var(&s.qps, "kube-client-qps", 200, "API requests per second")
	fs.IntVar(&s.burst, "kube-client-burst", 300, "API request burst")
	fs.StringVar(&s.healthAddr, "health-probe-addr", "", `serve /healthz and /readyz on this address (e.g. ":8081"); off when empty`)
	fs.DurationVar(&s.batchIdle, "batch-idle-duration", time.Second, "a provisioning batch closes once no new pending pod has appeared for this long")
	fs.DurationVar(&s.batchMax, "batch-max-duration", 10*time.Second, "a provisioning batch closes this long after it opened, however fast pods arrive")
	fs.StringVar(&s.preferencePolicy, "preference-policy", string(scheduling.PreferencesCostAware), "how solves treat preferences (preferred affinities, ScheduleAnyway spread): CostAware (honoured where they cost at most 5% more), Respect (Karpenter's default: always, relaxed only to place a pod) or Ignore")
	fs.StringVar(&s.minValuesPolicy, "min-values-policy", string(scheduling.MinValuesStrict), "a claim whose instance types cannot meet its pool's minValues: Strict (split it, or leave its pods pending) or BestEffort (launch it with the types there are, annotated karpenter.sh/nodeclaim-min-values-relaxed)")
	fs.Float64Var(&s.vmMemoryOverhead, "vm-memory-overhead-percent", ec2.DefaultVMMemoryOverhead, "the fraction of an instance type's memory the VM does not see (0.075 is 7.5%)")
	fs.Int64Var(&s.memoryLimit, "memory-limit", -1, "the container's memory limit in `bytes`; the Go runtime's soft memory limit is set to 90% of it (-1: none)")
	fs.BoolVar(&s.enableProfiling, "enable-profiling", false, "serve Go's pprof profiles under /debug/pprof/ on the metrics address")
	fs.BoolVar(&s.isolatedVPC, "isolated-vpc", false, "the VPC reaches no AWS endpoint without a VPC endpoint: on-demand prices come from the built-in tables, not the Pricing API")
	fs.DurationVar(&s.amiRefresh, "ami-refresh-interval", 0, "how long resolved images (and subnets, security groups, launch templates) are cached, at least 1m; 0 means the provider's 5m")
	fs.DurationVar(&s.subnetRefresh, "subnet-refresh-interval", 0, "as --ami-refresh-interval, for subnets; the shorter of the two is used")
}

// applyEnv sets every flag not given on the command line from its environment variable, if
// set; refuses a variable set to what this controller cannot do; and keeps the inert ones for
// the start-up log. Port variables (METRICS_PORT, HEALTH_PROBE_PORT) become ":<port>".
func applyEnv(fs *flag.FlagSet, s *settings, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	for _, e := range karpenterEnv {
		raw := getenv(e.env)
		if raw == "" {
			continue
		}
		v := raw
		switch {
		case e.env == "FEATURE_GATES":
			if err := s.applyGates(fs, given, raw); err != nil {
				errs = append(errs, err)
			}
			continue
		case e.inert != "":
			s.inert = append(s.inert, fmt.Sprintf("%s=%s: %s", e.env, raw, e.inert))
			continue
		case e.refused != "":
			if !sameSetting(raw, e.def) {
				errs = append(errs, fmt.Errorf("environment variable %s=%q is not supported: %s (unset it, or set Karpenter's default %q)", e.env, raw, e.refused, e.def))
			}
			continue
		}
		if given[e.flag] || fs.Lookup(e.flag) == nil {
			continue
		}
		if e.port {
			v = ":" + v
		}
		if e.invert {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("environment variable %s=%q: want true or false", e.env, raw))
				continue
			}
			v = strconv.FormatBool(!b)
		}
		if err := fs.Set(e.flag, v); err != nil {
			errs = append(errs, fmt.Errorf("environment variable %s=%q (flag --%s): %w", e.env, raw, e.flag, err))
		}
	}
	return errors.Join(errs...)
}

// applyGates honours FEATURE_GATES ("Name=bool,…"): CapacityBuffer sets --capacity-buffers
// (unless given), SpotToSpotConsolidation=false forbids spot-to-spot replacement, StaticCapacity
// and a ReservedCapacity or NodeRepair or NodeOverlay at their defaults change nothing; the
// rest are refused, as are unknown gates.
func (s *settings) applyGates(fs *flag.FlagSet, given map[string]bool, raw string) error {
	var errs []error
	for _, kv := range strings.Split(raw, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		name, val, ok := strings.Cut(kv, "=")
		on, err := strconv.ParseBool(strings.TrimSpace(val))
		if !ok || err != nil {
			errs = append(errs, fmt.Errorf("environment variable FEATURE_GATES=%q: %q is not Name=true or Name=false", raw, kv))
			continue
		}
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(featureGates, func(g struct {
			name, def string
			refuse    map[bool]string
		}) bool {
			return g.name == name
		})
		if i < 0 {
			errs = append(errs, fmt.Errorf("environment variable FEATURE_GATES=%q: unknown gate %s (Karpenter v1.14's are NodeRepair, ReservedCapacity, SpotToSpotConsolidation, NodeOverlay, StaticCapacity and CapacityBuffer)", raw, name))
			continue
		}
		if why := featureGates[i].refuse[on]; why != "" {
			errs = append(errs, fmt.Errorf("environment variable FEATURE_GATES: %s=%v is not supported: %s", name, on, why))
			continue
		}
		switch name {
		case "SpotToSpotConsolidation":
			s.noSpotToSpot = !on
		case "CapacityBuffer":
			if !given["capacity-buffers"] && fs.Lookup("capacity-buffers") != nil {
				_ = fs.Set("capacity-buffers", strconv.FormatBool(on)) // a bool flag takes it
			}
		}
	}
	return errors.Join(errs...)
}

// sameSetting reports whether two values of a setting mean the same: as booleans, durations or
// numbers when both parse so, else as words, case aside.
func sameSetting(a, b string) bool {
	if x, err := strconv.ParseBool(a); err == nil {
		y, err := strconv.ParseBool(b)
		return err == nil && x == y
	}
	if x, err := time.ParseDuration(a); err == nil {
		y, err := time.ParseDuration(b)
		return err == nil && x == y
	}
	if x, err := strconv.ParseFloat(a, 64); err == nil {
		y, err := strconv.ParseFloat(b, 64)
		return err == nil && x == y
	}
	return strings.EqualFold(strings.TrimSpace(a), b)
}

// check refuses settings out of range, naming the flag and its variable.
func (s *settings) check() error {
	var errs []error
	if s.batchIdle <= 0 || s.batchMax <= 0 {
		errs = append(errs, fmt.Errorf("--batch-idle-duration %v and --batch-max-duration %v (BATCH_IDLE_DURATION, BATCH_MAX_DURATION) must be positive", s.batchIdle, s.batchMax))
	}
	switch scheduling.PreferencePolicy(s.preferencePolicy) {
	case scheduling.PreferencesCostAware, scheduling.PreferencesRespect, scheduling.PreferencesIgnore:
	default:
		errs = append(errs, fmt.Errorf("--preference-policy %q (PREFERENCE_POLICY): want Respect, Ignore or CostAware", s.preferencePolicy))
	}
	switch scheduling.MinValuesPolicy(s.minValuesPolicy) {
	case scheduling.MinValuesStrict, scheduling.MinValuesBestEffort:
	default:
		errs = append(errs, fmt.Errorf("--min-values-policy %q (MIN_VALUES_POLICY): want Strict or BestEffort", s.minValuesPolicy))
	}
	if !(s.vmMemoryOverhead >= 0 && s.vmMemoryOverhead < 1) {
		errs = append(errs, fmt.Errorf("--vm-memory-overhead-percent %v (VM_MEMORY_OVERHEAD_PERCENT): want a fraction from 0 to below 1", s.vmMemoryOverhead))
	}
	for _, r := range []struct {
		name string
		d    time.Duration
	}{{"--ami-refresh-interval (AMI_REFRESH_INTERVAL)", s.amiRefresh}, {"--subnet-refresh-interval (SUBNET_REFRESH_INTERVAL)", s.subnetRefresh}} {
		if r.d != 0 && r.d < time.Minute {
			errs = append(errs, fmt.Errorf("%s %v: must be at least 1m, as Karpenter's", r.name, r.d))
		}
	}
	switch s.logOutputPaths {
	case "stdout", "stderr":
	default:
		errs = append(errs, fmt.Errorf("--log-output-paths %q (LOG_OUTPUT_PATHS): want stdout or stderr; this controller writes no log files", s.logOutputPaths))
	}
	return errors.Join(errs...)
}

// cacheFor is the EC2 provider's cache lifetime the refresh intervals ask for: the shorter one
// given, or 0 (the provider's default).
func (s *settings) cacheFor() time.Duration {
	switch {
	case s.amiRefresh == 0:
		return s.subnetRefresh
	case s.subnetRefresh == 0:
		return s.amiRefresh
	}
	return min(s.amiRefresh, s.subnetRefresh)
}

// vmOverhead is ec2.Options.VMMemoryOverhead for the setting: 0 there means the default, so
// no overhead is negative.
func (s *settings) vmOverhead() float64 {
	if s.vmMemoryOverhead == 0 {
		return -1
	}
	return s.vmMemoryOverhead
}

// caBundle is the CA nodes trust the API server with: --cluster-ca-bundle (CLUSTER_CA_BUNDLE,
// base64 of PEM, as in an EKS cluster's certificateAuthority.data), else the client's.
func (s *settings) caBundle(client []byte) ([]byte, error) {
	if s.clusterCABundle == "" {
		return client, nil
	}
	pem, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s.clusterCABundle))
	if err != nil {
		return nil, fmt.Errorf("--cluster-ca-bundle (CLUSTER_CA_BUNDLE): not base64: %w", err)
	}
	if !strings.Contains(string(pem), "-----BEGIN CERTIFICATE-----") {
		return nil, errors.New("--cluster-ca-bundle (CLUSTER_CA_BUNDLE): want base64 of a PEM certificate bundle")
	}
	return pem, nil
}

// setMemoryLimit applies --memory-limit (MEMORY_LIMIT): Go's soft limit at 90% of it, as
// Karpenter sets it.
func (s *settings) setMemoryLimit() {
	if s.memoryLimit > 0 {
		debug.SetMemoryLimit(s.memoryLimit / 10 * 9)
	}
}

// queueURLGetter is the SQS call that finds a queue's URL by its name.
type queueURLGetter interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, opts ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
}

// interruptionQueueURL is the URL of --interruption-queue (INTERRUPTION_QUEUE): a URL as
// given, or a queue name — what Karpenter's chart sets — resolved with GetQueueUrl in the
// account and region of the AWS configuration, so a copied value works at the first receive
// or fails here.
func interruptionQueueURL(ctx context.Context, c queueURLGetter, queue, region string) (string, error) {
	if strings.HasPrefix(queue, "https://") || strings.HasPrefix(queue, "http://") {
		return queue, nil
	}
	if strings.ContainsAny(queue, "/:") {
		return "", fmt.Errorf("--interruption-queue (INTERRUPTION_QUEUE) %q: want an SQS queue name or its https:// URL", queue)
	}
	out, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: &queue})
	if err != nil {
		return "", fmt.Errorf("--interruption-queue (INTERRUPTION_QUEUE) %q: finding the SQS queue of that name in %s: %w", queue, region, err)
	}
	if out.QueueUrl == nil || *out.QueueUrl == "" {
		return "", fmt.Errorf("--interruption-queue (INTERRUPTION_QUEUE) %q: SQS GetQueueUrl returned no URL", queue)
	}
	return *out.QueueUrl, nil
}

// envFlags maps flags to Karpenter's environment variables, for -h.
func envFlags() []envSetting {
	var out []envSetting
	for _, e := range karpenterEnv {
		if e.flag != "" {
			out = append(out, e)
		}
	}
	return out
}

// onCluster decides where the controller runs: on the cluster of --kubeconfig; in a pod
// (the kubelet sets KUBERNETES_SERVICE_HOST) on its own cluster when given any cluster
// setting (CLUSTER_NAME, --provider, … — any flag the simulation does not play), or in the
// simulation when asked for one (--scenario, --scale); otherwise, in the simulation. A pod
// given neither is an error: a Deployment missing its CLUSTER_NAME would otherwise play the
// demo, exit 0 and be restarted for ever with nothing in its log to say why. Outside a pod,
// cluster flags without --kubeconfig are refused by the simulation (simulate.go).
func onCluster(o options, getenv func(string) string) (bool, error) {
	if o.kubeconfig != "" {
		return true, nil
	}
	if getenv("KUBERNETES_SERVICE_HOST") == "" {
		return false, nil
	}
	var cluster []string
	if o.lab.fs != nil {
		o.lab.fs.Visit(func(f *flag.Flag) {
			if !slices.Contains(simFlags, f.Name) {
				cluster = append(cluster, "--"+f.Name)
			}
		})
	}
	switch {
	case len(cluster) > 0:
		return true, nil
	case o.lab.given("scenario") || o.lab.given("scale"):
		return false, nil
	}
	return false, errors.New("running in a pod (KUBERNETES_SERVICE_HOST is set) with no cluster settings: " +
		"set CLUSTER_NAME (or --cluster-name) to run against this cluster, --provider kwok to run with no cloud, " +
		"or --scenario to play the simulation in the pod")
}

// restConfig is the API client's configuration: --kubeconfig's, else the pod's service account
// (in-cluster), with the QPS and burst settings.
func restConfig(o options) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if o.kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", o.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", o.kubeconfig, err)
		}
	} else {
		cfg, err = rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster configuration: %w (outside a pod, give --kubeconfig)", err)
		}
	}
	if o.qps <= 0 || o.burst <= 0 {
		return nil, errors.New("--kube-client-qps and --kube-client-burst must be positive")
	}
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	return cfg, nil
}

// endpoint is the API server URL written into node bootstrap: --cluster-endpoint
// (CLUSTER_ENDPOINT), else the client's own server URL. In a pod the client's URL is the
// in-cluster Service address, which nodes outside the cluster network cannot reach.
func endpoint(o options, clientHost string) (string, error) {
	if o.clusterEndpoint != "" {
		return o.clusterEndpoint, nil
	}
	if o.kubeconfig == "" {
		return "", errors.New("--cluster-endpoint (CLUSTER_ENDPOINT) is required in a pod: the in-cluster Service address is not one nodes can join")
	}
	return clientHost, nil
}

// serveHealth serves /healthz and /readyz on addr until ctx ends.
func serveHealth(ctx context.Context, addr string, h *controller.Health) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("health probes: %w", err)
	}
	srv := &http.Server{Handler: h.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	return ln.Addr(), nil
}
