package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
	"github.com/nodeplan/nodeplan/examples/plan/internal/load"
	"github.com/nodeplan/nodeplan/scheduling"
)

// Shadow mode: plan watch reads a cluster whose nodes another autoscaler (Karpenter, Cluster
// Autoscaler) manages, plans every pass as if nodeplan were in charge, acts on nothing, and
// reports what it would have done differently and what that would have cost or saved. It only
// lists (the read-only ClusterRole in shadow-rbac.yaml is all it needs), so an operator can run
// it in production at no risk before switching.
//
// Each pass compares two things:
//   - provisioning: the nodes the incumbent launched since the last pass against the nodes
//     nodeplan would have launched for the pods that were pending then;
//   - the fleet: what the managed nodes cost now, what disruption.Plan would remove or replace
//     and save, and what the same pods would cost planned from scratch, over the lower bound.

const watchSynopsis = "(--kubeconfig FILE | --current-context) [--interval 1m] [--passes N] [--metrics-addr :9090] [--catalog FILE] [--cost-model FILE] [--node-cost $/h] [-v]"

// watchConfig is one shadow run.
type watchConfig struct {
	interval time.Duration
	passes   int // 0: until cancelled
	nodeCost float64
	catalog  catalogFlags
	prices   priceFlags
	files    inputFiles // files that replace a kind the cluster would give (e.g. --catalog)
	log      *slog.Logger
	metrics  *shadowMetrics
	read     func(ctx context.Context) (map[string][]byte, error)
	now      func() time.Time
	// beforePass, when set, runs before each pass (tests change the cluster there).
	beforePass func(pass int)
}

func watch(ctx context.Context, args []string, out, stderr io.Writer) error {
	f := newFlags("watch", watchSynopsis, stderr)
	var cfg watchConfig
	var cluster clusterFlags
	cluster.register(f)
	cfg.catalog.register(f)
	cfg.prices.register(f, &cfg.files)
	f.StringVar(&cfg.files.catalog, "catalog", "", "`FILE` of the instance catalog (default: built once for the region, see plan catalog)")
	f.DurationVar(&cfg.interval, "interval", time.Minute, "time between passes")
	f.IntVar(&cfg.passes, "passes", 0, "stop after `N` passes (0: run until interrupted)")
	f.Float64Var(&cfg.nodeCost, "node-cost", 0, "`$/h` each node costs beyond its instance and its EC2NodeClass's EBS volumes (priced from the cluster's EC2NodeClasses): a public IPv4 address, per-host licences")
	metricsAddr := f.String("metrics-addr", "", "serve Prometheus metrics (nodeplan_shadow_*) on this `ADDRESS`, e.g. :9090")
	verbose := f.Bool("v", false, "log every decision (debug level)")
	if err := f.parse(args); err != nil {
		return err
	}
	if !cluster.enabled() {
		return usageErrorf("watch: it reads a live cluster: give --kubeconfig FILE or --current-context (see plan watch -h)")
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	cfg.log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	kube, dyn, host, err := connectCluster(&cluster)
	if err != nil {
		return err
	}
	cfg.read = clusterReader{kube: kube, dynamic: dyn}.read
	cfg.now = time.Now
	reg := prometheus.NewRegistry()
	cfg.metrics = newShadowMetrics(reg)
	if *metricsAddr != "" {
		ln, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			return usageErrorf("watch: --metrics-addr: %v", err)
		}
		srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln) //nolint:errcheck // ends with Shutdown
		defer srv.Shutdown(context.Background())
	}
	cfg.log.Info("shadow mode: planning as if in charge, acting on nothing", "cluster", host, "interval", cfg.interval)
	err = runWatch(ctx, cfg, out)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// shadowState is what a pass remembers of the one before.
type shadowState struct {
	nodes       map[string]float64 // managed node → $/h
	pending     map[string]bool    // pods pending then, by namespace/name
	wouldLaunch scheduling.Result  // what nodeplan would have launched then
	catalog     []nodeplan.InstanceType
	poolCatalog map[string][]nodeplan.InstanceType
	notices     []string
}

// runWatch runs passes until cfg.passes or cancellation, writing one summary line per pass to
// out.
func runWatch(ctx context.Context, cfg watchConfig, out io.Writer) error {
	var st shadowState
	for pass := 1; cfg.passes == 0 || pass <= cfg.passes; pass++ {
		if cfg.beforePass != nil {
			cfg.beforePass(pass)
		}
		if err := shadowPass(ctx, cfg, &st, pass, out); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// A failed pass (the API server away, a bad object) is logged; the next may work.
			cfg.log.Error("shadow pass failed", "pass", pass, "error", err)
			cfg.metrics.errors.Inc()
		}
		if cfg.passes != 0 && pass == cfg.passes {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(cfg.interval):
		}
	}
	return nil
}

func shadowPass(ctx context.Context, cfg watchConfig, st *shadowState, pass int, out io.Writer) error {
	docs, err := cfg.read(ctx)
	if err != nil {
		return err
	}
	files := cfg.files
	loader := loaderFor(docs, &files)
	snap, err := loadSnapshot(files, loader)
	if err != nil {
		return err
	}
	// The catalog is built on the first pass and kept: prices move slowly, and a shadow run
	// must not hammer the Pricing API.
	if snap.catalog == nil && st.catalog != nil {
		snap.catalog, snap.poolCatalog, snap.notices = st.catalog, st.poolCatalog, st.notices
	}
	if err := ensureCatalog(ctx, snap, cfg.catalog); err != nil {
		return err
	}
	if st.catalog == nil {
		st.catalog, st.poolCatalog, st.notices = snap.catalog, snap.poolCatalog, snap.notices
		for _, n := range snap.notices {
			cfg.log.Warn(n)
		}
	}
	if err := applyPrices(snap, cfg.prices); err != nil {
		return err
	}

	// What the incumbent did since the last pass.
	nodes := map[string]float64{}
	for _, n := range snap.nodes {
		if n.pool != "" {
			nodes[n.node.Name] = catalogPrice(snap.catalog, n.instanceType, n.zone, n.capacityType)
		}
	}
	var launched, removed []string
	var launchedCost float64
	if st.nodes != nil {
		for name, price := range nodes {
			if _, ok := st.nodes[name]; !ok {
				launched = append(launched, name)
				launchedCost += price
			}
		}
		for name := range st.nodes {
			if _, ok := nodes[name]; !ok {
				removed = append(removed, name)
			}
		}
		slices.Sort(launched)
		slices.Sort(removed)
	}

	// Of the pods pending at the last pass, how many run now.
	served := 0
	for _, n := range snap.nodes {
		for _, p := range n.pods {
			if st.pending[nodeplan.PodKey(p)] {
				served++
			}
		}
	}
	pending := map[string]bool{}
	for _, p := range snap.pending {
		pending[nodeplan.PodKey(p)] = true
	}

	// What nodeplan would do now.
	in := provisionInput(snap, cfg.nodeCost, cfg.now())
	plan, err := scheduling.Solve(ctx, in)
	if err != nil {
		return fmt.Errorf("solve: %w", err)
	}
	cmp, err := compare(ctx, snap, in.Options, plan)
	if err != nil {
		return fmt.Errorf("re-planning from scratch: %w", err)
	}
	disIn := disruptionInput(snap, cfg.now().UTC(), cfg.nodeCost)
	dis, err := disruption.Plan(ctx, disIn)
	if err != nil {
		return fmt.Errorf("disruption plan: %w", err)
	}
	// Replacements at the offerings planned, as the controller reports them (costOf).
	wouldSave := totalSavings(dis, disIn.Options.Scheduling.NodeCost)
	var wouldDisrupt int
	for _, c := range dis.Commands {
		wouldDisrupt += len(c.Nodes)
	}

	m := cfg.metrics
	m.passes.Inc()
	m.pending.Set(float64(len(snap.pending)))
	m.wouldLaunchNodes.Set(float64(len(plan.NodeClaims)))
	m.wouldLaunchCost.Set(plan.Cost)
	m.wouldDisruptNodes.Set(float64(wouldDisrupt))
	m.wouldSave.Set(wouldSave)
	m.incumbentLaunched.Add(float64(len(launched)))
	m.incumbentRemoved.Add(float64(len(removed)))
	if cmp != nil {
		m.fleetCost.Set(cmp.CurrentCost)
		m.replannedCost.Set(cmp.ReplannedCost)
		m.lowerBound.Set(cmp.LowerBound)
	}
	var launchDiff float64
	if st.nodes != nil && len(launched) > 0 {
		launchDiff = launchedCost - st.wouldLaunch.Cost
		m.launchDifference.Set(launchDiff)
	}

	line := fmt.Sprintf("pass %d: %d pending pods; ", pass, len(snap.pending))
	if st.nodes != nil {
		line += fmt.Sprintf("the incumbent launched %d nodes (%s/h) and removed %d", len(launched), dollars(launchedCost), len(removed))
		if len(launched) > 0 {
			line += fmt.Sprintf(" — %d of the %d pods pending then run now; nodeplan would have launched %d (%s/h) for all of them, %s/h %s",
				served, len(st.pending), len(st.wouldLaunch.NodeClaims), dollars(st.wouldLaunch.Cost), dollars(abs(launchDiff)), moreOrLess(launchDiff))
		}
		line += "; "
	}
	line += fmt.Sprintf("nodeplan would launch %d nodes (%s/h) now and remove or replace %d, %s",
		len(plan.NodeClaims), dollars(plan.Cost), wouldDisrupt, savingPhrase(wouldSave))
	if cmp != nil {
		line += fmt.Sprintf("; the managed nodes cost %s/h, re-planned %s/h, lower bound %s/h", dollars(cmp.CurrentCost), dollars(cmp.ReplannedCost), dollars(cmp.LowerBound))
	}
	fmt.Fprintln(out, line)
	cfg.log.Info("shadow pass", "pass", pass, "pending", len(snap.pending), "incumbent-launched", len(launched),
		"incumbent-removed", len(removed), "would-launch", len(plan.NodeClaims), "would-launch-cost", plan.Cost,
		"would-disrupt", wouldDisrupt, "would-save", wouldSave)
	for _, c := range plan.NodeClaims {
		cfg.log.Debug("would launch nodeclaim", "nodepool", c.NodePool, "instance-type", c.InstanceType,
			"zone", c.Offering.Zone, "capacity-type", c.Offering.CapacityType, "price", c.Offering.Price, "pods", len(c.Pods))
	}
	for _, c := range dis.Commands {
		cfg.log.Debug("would disrupt node(s)", "reason", c.Reason, "action", c.Action, "nodes", c.Nodes,
			"savings", costOf(c, disIn.Options.Scheduling.NodeCost).Savings, "replacement-worst-case", c.ReplacementPrice)
	}
	for _, u := range plan.Unschedulable {
		cfg.log.Debug("could not schedule pod", "pod", u.Pod, "reason", u.Code, "message", u.Message)
	}
	st.nodes, st.wouldLaunch, st.pending = nodes, plan, pending
	return nil
}

// loaderFor reads the cluster's lists for every input not given as a file.
func loaderFor(docs map[string][]byte, files *inputFiles) load.Loader {
	return load.Loader{ReadFile: useClusterDocs(docs, files)}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func moreOrLess(diff float64) string {
	if diff >= 0 {
		return "less than the incumbent"
	}
	return "more than the incumbent"
}

// shadowMetrics are the nodeplan_shadow_* series.
type shadowMetrics struct {
	passes, errors, incumbentLaunched, incumbentRemoved           prometheus.Counter
	launchDifference                                              prometheus.Gauge
	pending, wouldLaunchNodes, wouldLaunchCost, wouldDisruptNodes prometheus.Gauge
	wouldSave, fleetCost, replannedCost, lowerBound               prometheus.Gauge
}

func newShadowMetrics(reg prometheus.Registerer) *shadowMetrics {
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "nodeplan", Subsystem: "shadow", Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "nodeplan", Subsystem: "shadow", Name: name, Help: help})
		reg.MustRegister(g)
		return g
	}
	return &shadowMetrics{
		passes:            counter("passes_total", "Shadow passes completed."),
		errors:            counter("pass_errors_total", "Shadow passes that failed (the next pass tries again)."),
		incumbentLaunched: counter("incumbent_launched_nodes_total", "Managed nodes that appeared between passes: the incumbent autoscaler's launches."),
		incumbentRemoved:  counter("incumbent_removed_nodes_total", "Managed nodes that went away between passes."),
		launchDifference:  gauge("launch_difference_dollars_per_hour", "At the last pass where the incumbent launched nodes: the $/h they cost above what nodeplan would have launched for the pods pending before (negative when nodeplan's would have cost more)."),
		pending:           gauge("pending_pods", "Pods waiting for a node at the last pass."),
		wouldLaunchNodes:  gauge("would_launch_nodes", "Nodes nodeplan would launch for the pending pods now."),
		wouldLaunchCost:   gauge("would_launch_dollars_per_hour", "What those nodes would cost."),
		wouldDisruptNodes: gauge("would_disrupt_nodes", "Nodes nodeplan's disruption plan would remove or replace now."),
		wouldSave:         gauge("would_save_dollars_per_hour", "What that disruption plan would save, its replacements priced at the offerings planned."),
		fleetCost:         gauge("fleet_dollars_per_hour", "What the managed nodes cost now."),
		replannedCost:     gauge("replanned_dollars_per_hour", "What the same pods would cost on nodes planned from scratch."),
		lowerBound:        gauge("lower_bound_dollars_per_hour", "A cost no plan for those pods can beat."),
	}
}
