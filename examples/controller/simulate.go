package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/examples/internal/logging"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
	"github.com/nodeplan/nodeplan/pricing"
	"github.com/nodeplan/nodeplan/scheduling"
)

// simOptions configure a simulated run.
type simOptions struct {
	Scenario string
	Verbose  bool
	// Metrics, when set, is updated by the controller (served by the caller).
	Metrics *controller.Metrics
	// Planner replaces disruption.Plan when set.
	Planner controller.Planner
	// NodeCost is what each node costs beyond its instance and its class's volumes, $/h.
	NodeCost float64
	// JSONLog, when set, also receives the controller's lines in Karpenter's JSON layout.
	JSONLog io.Writer
	// Scale, when positive, runs the scale scenario with this many pods (scale.go) instead
	// of Scenario.
	Scale int
	// Running, when set, is called once the inflate scenario's pods all run and the cluster
	// has settled, before it scales down: where a test looks at the running cluster (its
	// metrics) without racing the simulation's virtual clock.
	Running func()
	// Manifests, when set, are the NodePools (and EC2NodeClasses) played instead of the
	// scenario's, read from ManifestsFrom (--nodepools).
	Manifests     []byte
	ManifestsFrom string
	// Catalog, when set, is what the simulated cloud sells instead of the embedded catalog,
	// read from CatalogFrom (--catalog).
	Catalog     []nodeplan.InstanceType
	CatalogFrom string
	// CostModel and NodeOverlays are applied to every catalog, as on a cluster.
	CostModel    *pricing.CostModel
	NodeOverlays []nodeplan.NodeOverlay
}

// simFlags are the flags the simulation honours. Any other flag given without a cluster is
// an error: a simulation that ignored --cluster-name or --provider would tell a story the
// flags did not ask for.
var simFlags = []string{"scenario", "list", "version", "v", "metrics-addr", "planner", "log-format", "node-cost",
	"print-crds", "scale", "nodepools", "catalog", "cost-model", "nodeoverlays"}

// simulation returns the simulation's options from the flags, refusing those it cannot honour
// and reading --nodepools and --catalog.
func (o options) simulation(metrics *controller.Metrics, planner controller.Planner) (simOptions, error) {
	var refused []string
	if o.lab.fs != nil {
		o.lab.fs.Visit(func(f *flag.Flag) {
			if !slices.Contains(simFlags, f.Name) {
				refused = append(refused, "--"+f.Name)
			}
		})
	}
	if len(refused) > 0 {
		return simOptions{}, fmt.Errorf("%s: only with a cluster (--kubeconfig); the simulation cannot honour it (given on the command line or by its environment variable)",
			strings.Join(refused, ", "))
	}
	if o.lab.scale > 0 && o.lab.given("scenario") {
		return simOptions{}, errors.New("--scenario and --scale: give one (--scale N plays its own scale-up and scale-down)")
	}
	so := simOptions{Scenario: o.scenario, Verbose: o.verbose, Metrics: metrics, Planner: planner,
		NodeCost: o.nodeCost, Scale: o.lab.scale}
	if o.nodePools != "" {
		data, err := os.ReadFile(o.nodePools)
		if err != nil {
			return simOptions{}, fmt.Errorf("--nodepools: %w", err)
		}
		if _, err := playablePools(data, o.nodePools); err != nil {
			return simOptions{}, err
		}
		so.Manifests, so.ManifestsFrom = data, o.nodePools
	}
	if o.lab.catalog != "" {
		catalog, from, err := o.lab.loadCatalog()
		if err != nil {
			return simOptions{}, err
		}
		so.Catalog, so.CatalogFrom = catalog, from
	}
	var err error
	if so.CostModel, so.NodeOverlays, err = loadPrices(o); err != nil {
		return simOptions{}, err
	}
	return so, nil
}

// playablePools decodes the NodePools of a manifest file and checks that each has its
// EC2NodeClass there: in the simulation nothing else can supply it, and a pool without its
// class would never be Ready (and so never launch).
func playablePools(data []byte, from string) ([]nodeplan.NodePool, error) {
	m, err := nodeplan.DecodeManifests(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	if len(m.NodePools) == 0 {
		return nil, fmt.Errorf("%s: no NodePool (want karpenter.sh/v1 NodePools and their EC2NodeClasses)", from)
	}
	classes := map[string]bool{}
	for _, c := range ec2.NodeClasses(m) {
		classes[c.Name] = true
	}
	var errs []error
	for _, p := range m.NodePools {
		ref := p.Template.NodeClassRef
		switch {
		case ref.Kind != "" && ref.Kind != ec2.KindNodeClass:
			errs = append(errs, fmt.Errorf("%s: NodePool %s: nodeClassRef kind %q is not served here (want %s)", from, p.Name, ref.Kind, ec2.KindNodeClass))
		case !classes[ref.Name]:
			errs = append(errs, fmt.Errorf("%s: NodePool %s: its %s %q is not in the file; the simulation has no cluster to find it in, so add it", from, p.Name, ec2.KindNodeClass, ref.Name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m.NodePools, nil
}

// scenario is a script played against the simulated cluster.
type scenario struct {
	name, about string
	run         func(ctx context.Context, r *simRun) error
	// pools are the scenario's Karpenter manifests; nil means the lab's (sim.NodePoolsYAML).
	pools []byte
	// quiet scenarios print their own report instead of the timeline and the summary.
	quiet bool
}

var scenarios = []scenario{
	{name: "inflate", about: `the "inflate" lab: scale a 1-CPU deployment to 5 (one node launched), then to 0 (the empty node removed after consolidateAfter)`, run: inflateScenario},
	{name: "spot-interruption", about: "a spot node gets a two-minute interruption warning: it is replaced and drained at once", run: spotScenario},
	{name: "ice", about: "the cheapest offering has no capacity (InsufficientInstanceCapacity): the launch falls back to the next", run: iceScenario},
	{name: "drift", about: "a new machine image is released: drifted nodes are replaced, replacement first", run: driftScenario},
}

func findScenario(name string) (scenario, error) {
	for _, s := range scenarios {
		if s.name == name {
			return s, nil
		}
	}
	var names []string
	for _, s := range scenarios {
		names = append(names, s.name)
	}
	return scenario{}, fmt.Errorf("unknown scenario %q (want one of %s)", name, strings.Join(names, ", "))
}

// simRun is one simulated run: the world, the controller, the timeline and what it recorded.
type simRun struct {
	w    *sim.World
	tl   *sim.Timeline
	book *ledger
	out  io.Writer // where a quiet scenario prints its report
	// running is simOptions.Running.
	running func()
	// pools are the NodePools played; selector the inflate pods' nodeSelector.
	pools    []nodeplan.NodePool
	selector map[string]string
}

const (
	labNamespace = "karpenter-test"
	labName      = "inflate"
)

// simulate plays a scenario against the simulated cluster and cloud, printing the timeline and
// a summary to out. It returns an error when the scenario's expectations were not met.
func simulate(ctx context.Context, out io.Writer, o simOptions) error {
	sc, err := findScenario(o.Scenario)
	if o.Scale > 0 {
		sc, err = scaleScenario(o.Scale), nil
	}
	if err != nil {
		return err
	}
	manifests, from := sc.pools, "the scenario's manifests (embedded)"
	if manifests == nil {
		manifests, from = sim.NodePoolsYAML(), "the lab's manifests (embedded)"
	}
	if o.Manifests != nil {
		manifests, from = o.Manifests, o.ManifestsFrom
	}
	pools, err := playablePools(manifests, from)
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if o.Verbose {
		level = slog.LevelDebug
	}
	w := sim.NewWorld(nil)
	catalogFrom := "the embedded us-east-1 EC2 catalog, spot prices modelled"
	if o.Catalog != nil {
		w.Cloud.Catalog, catalogFrom = o.Catalog, o.CatalogFrom
	}
	// The lab's NodePool and EC2NodeClass are objects in the simulated cluster, read and
	// watched as on a real one.
	if err := sim.Apply(ctx, w.Dynamic, manifests); err != nil {
		return err
	}
	book := &ledger{now: w.Clock.Now, claims: map[string]*claimRecord{}}
	// The timeline tells the controller's story from its typed events (Controller.Events);
	// log records add only what no event tells: errors, and with -v the debug lines.
	tlOut := out
	if sc.quiet && !o.Verbose {
		tlOut = io.Discard
	}
	tl := sim.NewTimeline(tlOut, w.Clock.Now, sim.Epoch)
	lines := tl.Handler(slog.LevelError, slog.LevelError+100, eventLogLines, nil)
	if o.Verbose {
		lines = slog.NewMultiHandler(lines, tl.Handler(slog.LevelDebug, slog.LevelInfo, nil,
			[]string{"provider-id", "command", "decision", "duration", "lower-bound", "cost"}))
	}
	if o.JSONLog != nil {
		lines = slog.NewMultiHandler(lines, logging.NewJSONHandler(o.JSONLog, level))
	}
	log := slog.New(lines)
	if o.Verbose {
		debug := log.With("component", "sim")
		w.Kubelet.Logger = debug
		w.Scheduler.Logger = debug
	}
	real0 := time.Now()
	fmt.Fprintf(out, "nodeplan controller — simulation %q: %s\n", sc.name, sc.about)
	var names []string
	for _, p := range pools {
		names = append(names, p.Name)
	}
	fmt.Fprintf(out, "playing NodePool(s) %s from %s; catalog: %d instance types from %s\n", strings.Join(names, ", "), from,
		len(w.Cloud.Catalog), catalogFrom)
	for _, p := range pools {
		fmt.Fprintf(out, "nodepool %s: %s, consolidateAfter %s\n", p.Name, describePool(p), p.Disruption.ConsolidateAfter)
	}
	selector := inflateSelector(pools)
	if selector == nil {
		fmt.Fprintf(out, "the inflate pods select no node label: no NodePool played labels its nodes %s=%s, as the lab's does\n",
			labTeamLabel, labTeam)
	}
	fmt.Fprintln(out)

	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: w.Client.CoreV1().Events("")})
	defer broadcaster.Shutdown()

	var classes controller.NodeClasses
	ctrl := &controller.Controller{
		Client:    w.Client,
		Dynamic:   w.Dynamic,
		Provider:  w.Cloud,
		NodePools: &controller.ClusterNodePools{Dynamic: w.Dynamic, Now: w.Clock.Now, OnClasses: classes.Set},
		NodeCost:  scheduling.NodeCost{PerNode: o.NodeCost},
		NodeClass: classes.Get,
		Solve:     scheduling.Solve,
		Planner:   o.Planner,
		Clock:     w.Clock,
		Logger:    log,
		Recorder:  broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: controller.EventSource}),
		Metrics:   o.Metrics,
		CostModel: o.CostModel, NodeOverlays: o.NodeOverlays,
		Events: func(e controller.Event) {
			tl.Event(e)
			book.record(e)
		},
		Seed: 1,
	}
	book.claimFor = func(name string) *controller.Claim { return ctrl.Tracker().Get(name) }
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(cctx) }()
	stop := func() error {
		cancel()
		return <-done
	}
	r := &simRun{w: w, tl: tl, book: book, out: out, running: o.Running, pools: pools, selector: selector}
	// Give the informers a moment to sync before the script starts.
	// The informers sync in real time; the virtual clock waits for them, so the script starts at
	// the same simulated instant however loaded the machine is.
	for deadline := time.Now().Add(30 * time.Second); !book.started() && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), stop())
		case <-time.After(time.Millisecond):
		}
	}
	if _, err := w.Until(ctx, 5*time.Second, func() bool { return ctrl.Tracker() != nil && book.started() }); err != nil {
		return errors.Join(err, stop())
	}
	serr := sc.run(ctx, r)
	if err := stop(); err != nil {
		serr = errors.Join(serr, err)
	}
	if sc.quiet {
		return serr
	}
	running, _ := r.runningPods()
	book.summary(out, w.Elapsed(), time.Since(real0), running)
	if leaks := r.instances(); serr == nil && sc.name == "inflate" && len(leaks) > 0 {
		serr = fmt.Errorf("instances left running: %v", leaks)
	}
	return serr
}

// describePool is a pool's labels and requirements, for the header.
func describePool(p nodeplan.NodePool) string {
	var parts []string
	if len(p.Template.Labels) > 0 {
		var ls []string
		for _, k := range slices.Sorted(maps.Keys(p.Template.Labels)) {
			ls = append(ls, k+"="+p.Template.Labels[k])
		}
		parts = append(parts, "labels "+strings.Join(ls, ","))
	}
	for _, r := range p.Template.Requirements.All() {
		parts = append(parts, r.String())
	}
	if p.Weight != 0 {
		parts = append(parts, fmt.Sprintf("weight %d", p.Weight))
	}
	return strings.Join(parts, ", ")
}

// The label the lab's inflate pods select, which the lab's NodePool puts on its nodes.
const labTeamLabel, labTeam = "eks-team", "my-team"

// inflateSelector is the inflate pods' nodeSelector: the lab's eks-team=my-team when a pool
// played labels its nodes so, else none — the label exists to pick the lab's pool, and with
// the user's pools it would leave every pod pending.
func inflateSelector(pools []nodeplan.NodePool) map[string]string {
	for _, p := range pools {
		if p.Template.Labels[labTeamLabel] == labTeam {
			return map[string]string{labTeamLabel: labTeam}
		}
	}
	return nil
}

// say prints a line of the script into the timeline.
func (r *simRun) say(msg string, args ...any) { r.tl.Say(msg, args...) }

// eventLogLines are the error lines the controller also tells as events: the timeline prints
// the event, not the line.
var eventLogLines = []string{"could not schedule pod", "could not launch nodeclaim"}

func (r *simRun) deployInflate(ctx context.Context) error {
	zero := int32(0)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: labName, Namespace: labNamespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: &zero,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": labName}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": labName}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: new(int64),
					Containers: []corev1.Container{{
						Name:  labName,
						Image: "public.ecr.aws/eks-distro/kubernetes/pause:3.7",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("1"),
						}},
					}},
					NodeSelector: maps.Clone(r.selector),
				},
			},
		},
	}
	if err := r.w.Deployments.Create(ctx, dep); err != nil {
		return err
	}
	sel := "none"
	if r.selector != nil {
		sel = labTeamLabel + "=" + labTeam
	}
	r.say("created deployment", "deployment", labNamespace+"/"+labName, "replicas", 0, "requests", "cpu:1", "nodeSelector", sel)
	return nil
}

func (r *simRun) scale(ctx context.Context, n int) error {
	if err := r.w.Deployments.Scale(ctx, labNamespace, labName, n); err != nil {
		return err
	}
	r.say(fmt.Sprintf("scaled deployment %s to %d", labName, n))
	return nil
}

// runningPods returns how many inflate pods are bound and running, and on which nodes.
func (r *simRun) runningPods() (int, []string) {
	list, err := r.w.Client.CoreV1().Pods(labNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return 0, nil
	}
	n := 0
	var nodes []string
	for _, p := range list.Items {
		if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
			n++
			if !slices.Contains(nodes, p.Spec.NodeName) {
				nodes = append(nodes, p.Spec.NodeName)
			}
		}
	}
	slices.Sort(nodes)
	return n, nodes
}

func (r *simRun) nodes() []string {
	list, err := r.w.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range list.Items {
		out = append(out, n.Name)
	}
	slices.Sort(out)
	return out
}

func (r *simRun) instances() []string {
	insts, err := r.w.Cloud.List(context.Background())
	if err != nil {
		return nil
	}
	var out []string
	for _, i := range insts {
		out = append(out, i.Status.ProviderID)
	}
	return out
}

// waitRunning advances until want inflate pods run, within max.
func (r *simRun) waitRunning(ctx context.Context, want int, max time.Duration) ([]string, error) {
	ok, err := r.w.Until(ctx, max, func() bool { n, _ := r.runningPods(); return n == want })
	if err != nil {
		return nil, err
	}
	n, nodes := r.runningPods()
	if !ok {
		return nodes, fmt.Errorf("after %v, %d/%d inflate pods are running", max, n, want)
	}
	r.say(fmt.Sprintf("%d/%d inflate pods running", n, want), "nodes", nodes)
	return nodes, nil
}

// waitNoNodes advances until no node and no instance is left, within max.
func (r *simRun) waitNoNodes(ctx context.Context, max time.Duration) error {
	ok, err := r.w.Until(ctx, max, func() bool {
		return len(r.nodes()) == 0 && len(r.instances()) == 0 && r.book.allDeleted()
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("after %v, nodes %v and instances %v remain", max, r.nodes(), r.instances())
	}
	r.say("no nodes left: the cluster is back to zero")
	return nil
}

func inflateScenario(ctx context.Context, r *simRun) error {
	if err := r.deployInflate(ctx); err != nil {
		return err
	}
	if err := r.w.Advance(ctx, time.Second); err != nil {
		return err
	}
	if err := r.scale(ctx, 5); err != nil {
		return err
	}
	nodes, err := r.waitRunning(ctx, 5, 3*time.Minute)
	if err != nil {
		return err
	}
	if len(nodes) != 1 {
		return fmt.Errorf("the 5 pods run on %d nodes %v; the lab expects one", len(nodes), nodes)
	}
	if err := r.w.Advance(ctx, 10*time.Second); err != nil {
		return err
	}
	if r.running != nil {
		r.running()
	}
	if err := r.scale(ctx, 0); err != nil {
		return err
	}
	return r.waitNoNodes(ctx, 3*time.Minute)
}

func spotScenario(ctx context.Context, r *simRun) error {
	if err := r.deployInflate(ctx); err != nil {
		return err
	}
	if err := r.scale(ctx, 5); err != nil {
		return err
	}
	before, err := r.waitRunning(ctx, 5, 3*time.Minute)
	if err != nil {
		return err
	}
	insts, err := r.w.Cloud.List(ctx)
	if err != nil {
		return err
	}
	var victim *nodeplan.NodeClaim
	for _, i := range insts {
		if i.Status.CapacityType == nodeplan.CapacityTypeSpot {
			victim = i
			break
		}
	}
	if victim == nil {
		return errors.New("no spot node was launched; nothing to interrupt")
	}
	if err := r.w.Advance(ctx, 5*time.Second); err != nil {
		return err
	}
	r.say("EC2 sends a spot interruption warning", "instance", victim.Status.ProviderID, "instance-type", victim.Status.InstanceType,
		"zone", victim.Status.Zone)
	if err := r.w.Cloud.Interrupt(victim.Status.ProviderID, cloudprovider.InterruptionSpot, r.w.Clock.Now().Add(2*time.Minute)); err != nil {
		return err
	}
	ok, err := r.w.Until(ctx, 3*time.Minute, func() bool {
		n, nodes := r.runningPods()
		return n == 5 && !slices.ContainsFunc(nodes, func(s string) bool { return slices.Contains(before, s) }) &&
			!slices.Contains(r.instances(), victim.Status.ProviderID)
	})
	if err != nil {
		return err
	}
	if !ok {
		n, nodes := r.runningPods()
		return fmt.Errorf("after the interruption: %d/5 pods running on %v, instances %v", n, nodes, r.instances())
	}
	_, nodes := r.runningPods()
	r.say("5/5 inflate pods running on the replacement", "nodes", nodes)
	return nil
}

func iceScenario(ctx context.Context, r *simRun) error {
	if err := r.deployInflate(ctx); err != nil {
		return err
	}
	// Ask the solver what it would launch for the 5 pods, and take that offering away.
	pools := r.pools
	var pods []*corev1.Pod
	for i := range 5 {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("probe-", i), Namespace: labNamespace},
			Spec: corev1.PodSpec{NodeSelector: maps.Clone(r.selector), Containers: []corev1.Container{{
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}})
	}
	res, err := scheduling.Solve(ctx, scheduling.Input{Pods: pods, NodePools: pools, InstanceTypes: r.w.Cloud.Catalog})
	if err != nil || len(res.NodeClaims) == 0 {
		return fmt.Errorf("probing the solver's choice: %v", err)
	}
	nc := res.NodeClaims[0]
	key := cloudprovider.OfferingKey{InstanceType: nc.InstanceType, Zone: nc.Offering.Zone, CapacityType: nc.Offering.CapacityType}
	r.w.Cloud.SetCapacityError(key, true)
	r.say("EC2 has no capacity for the cheapest offering (InsufficientInstanceCapacity)", "offering", key.String(),
		"price", controller.Dollars(nc.Offering.Price))
	if err := r.scale(ctx, 5); err != nil {
		return err
	}
	if _, err := r.waitRunning(ctx, 5, 3*time.Minute); err != nil {
		return err
	}
	for _, i := range r.book.launched() {
		if i.InstanceType == key.InstanceType && i.Zone == key.Zone && i.CapacityType == key.CapacityType {
			return fmt.Errorf("a node was launched on the offering without capacity %s", key)
		}
	}
	return nil
}

func driftScenario(ctx context.Context, r *simRun) error {
	if err := r.deployInflate(ctx); err != nil {
		return err
	}
	if err := r.scale(ctx, 5); err != nil {
		return err
	}
	before, err := r.waitRunning(ctx, 5, 3*time.Minute)
	if err != nil {
		return err
	}
	if err := r.w.Advance(ctx, 5*time.Second); err != nil {
		return err
	}
	r.w.Cloud.SetImageID("img-2")
	r.say("a new machine image is released; nodes booted from the old one have drifted", "image", "img-2")
	ok, err := r.w.Until(ctx, 5*time.Minute, func() bool {
		n, nodes := r.runningPods()
		remaining := r.nodes()
		return n == 5 && !slices.ContainsFunc(nodes, func(s string) bool { return slices.Contains(before, s) }) &&
			!slices.ContainsFunc(remaining, func(s string) bool { return slices.Contains(before, s) })
	})
	if err != nil {
		return err
	}
	if !ok {
		n, nodes := r.runningPods()
		return fmt.Errorf("after the rollout: %d/5 pods running on %v; nodes %v", n, nodes, r.nodes())
	}
	_, nodes := r.runningPods()
	r.say("rollout done: 5/5 inflate pods running on up-to-date nodes", "nodes", nodes)
	return nil
}

// ledger follows the controller's events to tell the run's story in the summary.
type ledger struct {
	now func() time.Time
	// claimFor finds a claim in the controller's table, to learn which pods it was made for.
	claimFor func(name string) *controller.Claim

	mu       sync.Mutex
	started_ bool
	claims   map[string]*claimRecord
	order    []string
	removed  []removal
	unsched  int
	peak     float64
	solves   int
	// claimedAt is, by pod key, when each NodeClaim made for the pod was created.
	claimedAt map[string][]time.Time
}

type claimRecord struct {
	Name, InstanceType, Zone string
	CapacityType             nodeplan.CapacityType
	Price                    float64
	Launched, Deleted        time.Time
}

type removal struct {
	Reason  string
	Nodes   int
	Savings float64
}

func (b *ledger) started() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.started_
}

// allDeleted reports whether every claim launched was seen deleted.
func (b *ledger) allDeleted() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.claims {
		if c.Deleted.IsZero() {
			return false
		}
	}
	return true
}

func (b *ledger) launched() []claimRecord {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []claimRecord
	for _, n := range b.order {
		out = append(out, *b.claims[n])
	}
	return out
}

func (b *ledger) fleetLocked() float64 {
	var sum float64
	for _, c := range b.claims {
		if c.Deleted.IsZero() {
			sum += c.Price
		}
	}
	return sum
}

func (b *ledger) record(e controller.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e.Kind {
	case controller.EventStarted:
		b.started_ = true
	case controller.EventNodeClaimLaunched:
		c := &claimRecord{Name: e.NodeClaim, InstanceType: e.InstanceType, Zone: e.Zone,
			CapacityType: e.CapacityType, Price: e.Price, Launched: e.Time}
		b.claims[c.Name] = c
		b.order = append(b.order, c.Name)
		b.peak = max(b.peak, b.fleetLocked())
	case controller.EventNodeClaimCreated:
		if b.claimFor == nil {
			break
		}
		if cl := b.claimFor(e.NodeClaim); cl != nil {
			if b.claimedAt == nil {
				b.claimedAt = map[string][]time.Time{}
			}
			for key := range cl.Planned {
				b.claimedAt[key] = append(b.claimedAt[key], cl.Created)
			}
		}
	case controller.EventSolved:
		b.solves++
	case controller.EventNodeClaimDeleted:
		if c := b.claims[e.NodeClaim]; c != nil {
			c.Deleted = e.Time
		}
	case controller.EventDisrupting:
		b.removed = append(b.removed, removal{Reason: e.Reason, Nodes: len(e.Nodes), Savings: e.Savings})
	case controller.EventPodUnschedulable:
		b.unsched++
	}
}

func (b *ledger) summary(out io.Writer, virtual, real time.Duration, running int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	fmt.Fprintf(out, "\nsummary: %s simulated in %s\n", clockString(virtual), real.Round(time.Millisecond))
	fmt.Fprintf(out, "  nodes launched: %d\n", len(b.order))
	var cost float64
	for _, n := range b.order {
		c := b.claims[n]
		end := c.Deleted
		state := "removed at " + clockString(end.Sub(sim.Epoch))
		if end.IsZero() {
			end, state = now, "still running"
		}
		cost += c.Price * end.Sub(c.Launched).Hours()
		fmt.Fprintf(out, "    %s  %s %s %s  %s  launched at %s, %s\n", c.Name, c.InstanceType, c.CapacityType, c.Zone,
			controller.Dollars(c.Price), clockString(c.Launched.Sub(sim.Epoch)), state)
	}
	fmt.Fprintf(out, "  disruptions: %d\n", len(b.removed))
	for _, d := range b.removed {
		change, amount := controller.PriceChange(d.Savings)
		fmt.Fprintf(out, "    %s: %d node(s), %s %s\n", d.Reason, d.Nodes, change, amount)
	}
	fmt.Fprintf(out, "  inflate pods running at the end: %d; pods the solver could not place: %d\n", running, b.unsched)
	fmt.Fprintf(out, "  fleet: peak %s, now %s; this run cost $%.5f\n", controller.Dollars(b.peak),
		controller.Dollars(b.fleetLocked()), cost)
}

func clockString(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return fmt.Sprintf("%02d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
}
