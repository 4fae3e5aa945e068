package disruption_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
)

// resultOptions compare Results: requirements and quantities by value.
var resultOptions = cmp.Options{
	cmp.Comparer(func(a, b nodeplan.Requirements) bool { return a.Equal(b) }),
	cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
}

var rapidTypes = []string{"m5.large", "m5.xlarge", "m5.2xlarge", "c5.xlarge", "r5.large", "m6a.large"}

// cluster is the model the state machine drives: the input of the next pass.
type cluster struct {
	in      disruption.Input
	seq     int
	types   map[string]*nodeplan.InstanceType
	catalog []nodeplan.InstanceType
}

func (c *cluster) name(prefix string) string {
	c.seq++
	return fmt.Sprintf("%s%03d", prefix, c.seq)
}

// genPod draws a pod of one of three apps: app "c" spreads over zones; some pods carry
// do-not-disrupt, a few have no owner, a few are not ready.
func (c *cluster) genPod(t *rapid.T) *corev1.Pod {
	a := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "app")
	cpu := rapid.SampledFrom([]string{"100m", "250m", "500m", "1"}).Draw(t, "cpu")
	mem := rapid.SampledFrom([]string{"128Mi", "512Mi", "1Gi", "2Gi"}).Draw(t, "mem")
	p := newPod(c.name("pod-"+a+"-"), cpu, mem, app(a))
	p.CreationTimestamp = metav1.NewTime(c.in.Now.Add(-2 * time.Hour))
	p.Status.StartTime = &metav1.Time{Time: c.in.Now.Add(-2 * time.Hour)}
	switch rapid.IntRange(0, 9).Draw(t, "dnd") {
	case 0:
		p.Annotations[nodeplan.AnnotationDoNotDisrupt] = "true"
	case 1:
		p.Annotations[nodeplan.AnnotationDoNotDisrupt] = rapid.SampledFrom([]string{"1h", "3h"}).Draw(t, "dndFor")
	}
	if rapid.IntRange(0, 14).Draw(t, "unowned") == 0 {
		p.OwnerReferences = nil
	}
	if rapid.IntRange(0, 14).Draw(t, "unready") == 0 {
		p.Status.Conditions[0].Status = corev1.ConditionFalse
	}
	if a == "c" {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 2, TopologyKey: nodeplan.LabelZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "c"}}}}
	}
	return p
}

// genNode draws a node of a random type, zone and capacity type with pods that fit it.
func (c *cluster) genNode(t *rapid.T) disruption.Node {
	typ := rapid.SampledFrom(rapidTypes).Draw(t, "type")
	it := c.types[typ]
	pool := rapid.SampledFrom([]string{"alpha", "beta"}).Draw(t, "pool")
	zone := rapid.SampledFrom([]string{"us-east-1a", "us-east-1b"}).Draw(t, "zone")
	ct := nodeplan.CapacityTypeOnDemand
	if rapid.IntRange(0, 3).Draw(t, "spot") == 0 {
		ct = nodeplan.CapacityTypeSpot
	}
	free := toVecT(it.Allocatable())
	var ps []*corev1.Pod
	for range rapid.IntRange(0, 6).Draw(t, "pods") {
		p := c.genPod(t)
		r := toVecT(nodeplan.PodRequests(p))
		if r.cpu > free.cpu || r.mem > free.mem {
			continue
		}
		free.cpu, free.mem = free.cpu-r.cpu, free.mem-r.mem
		ps = append(ps, p)
	}
	name := c.name("node-")
	n := newNode(t, name, typ, pool, inZone(zone), withPods(ps...), func(n *disruption.Node) {
		n.CapacityType = ct
		n.Created = c.in.Now.Add(-time.Duration(rapid.IntRange(1, 1000).Draw(t, "age")) * time.Hour)
		n.Initialized = n.Created.Add(time.Minute)
		n.LastPodEvent = c.in.Now.Add(-time.Duration(rapid.IntRange(0, 120).Draw(t, "quiet")) * time.Minute)
	})
	if rapid.IntRange(0, 9).Draw(t, "nodeDND") == 0 {
		n.Node.Annotations[nodeplan.AnnotationDoNotDisrupt] = "true"
	}
	if rapid.IntRange(0, 14).Draw(t, "uninit") == 0 {
		n.Initialized = time.Time{}
	}
	return n
}

type smallVec struct{ cpu, mem int64 }

func toVecT(rl corev1.ResourceList) smallVec {
	return smallVec{rl.Cpu().MilliValue(), rl.Memory().Value()}
}

func (c *cluster) genPool(t *rapid.T, name string) nodeplan.NodePool {
	np := nodeplan.NodePool{Name: name}
	np.Template.Requirements = nodeplan.NewRequirements(
		nodeplan.In(nodeplan.LabelZone, "us-east-1a", "us-east-1b"),
		nodeplan.In(nodeplan.LabelInstanceType, rapidTypes...))
	if rapid.Bool().Draw(t, "odOnly") {
		np.Template.Requirements = np.Template.Requirements.Add(nodeplan.In(nodeplan.LabelCapacityType, "on-demand"))
	}
	np.Disruption.ConsolidationPolicy = rapid.SampledFrom([]nodeplan.ConsolidationPolicy{"", nodeplan.ConsolidateWhenEmpty}).Draw(t, "policy")
	np.Disruption.ConsolidateAfter = rapid.SampledFrom([]time.Duration{0, 30 * time.Minute, nodeplan.Never}).Draw(t, "after")
	np.Template.ExpireAfter = rapid.SampledFrom([]time.Duration{0, 720 * time.Hour}).Draw(t, "expire")
	np.Template.TerminationGracePeriod = rapid.SampledFrom([]time.Duration{0, time.Hour}).Draw(t, "tgp")
	for range rapid.IntRange(0, 2).Draw(t, "budgets") {
		b := nodeplan.Budget{Nodes: nodeplan.NodeCount{Value: rapid.IntRange(0, 3).Draw(t, "n")}}
		if rapid.Bool().Draw(t, "percent") {
			b.Nodes = nodeplan.NodeCount{Value: rapid.SampledFrom([]int{0, 10, 34, 50, 100}).Draw(t, "pct"), Percent: true}
		}
		if rapid.Bool().Draw(t, "scheduled") {
			s, err := nodeplan.ParseSchedule(rapid.SampledFrom([]string{"0 9-18 * * 1-5", "@daily", "30 * * * *"}).Draw(t, "cron"))
			if err != nil {
				t.Fatal(err)
			}
			b.Schedule, b.Duration = s, time.Duration(rapid.IntRange(1, 10).Draw(t, "hours"))*time.Hour
		}
		if rapid.Bool().Draw(t, "reasons") {
			b.Reasons = []nodeplan.DisruptionReason{rapid.SampledFrom([]nodeplan.DisruptionReason{
				nodeplan.ReasonEmpty, nodeplan.ReasonUnderutilized, nodeplan.ReasonDrifted, nodeplan.ReasonExpired}).Draw(t, "reason")}
		}
		np.Disruption.Budgets = append(np.Disruption.Budgets, b)
	}
	return np
}

func (c *cluster) genPDBs(t *rapid.T) {
	c.in.PDBs = nil
	for _, a := range []string{"a", "b"} {
		if !rapid.Bool().Draw(t, "pdb-"+a) {
			continue
		}
		pdb := pdbMinAvailable("pdb-"+a, a, rapid.IntRange(0, 4).Draw(t, "min"))
		if rapid.Bool().Draw(t, "maxUnavailable") {
			v := intstr.FromInt32(int32(rapid.IntRange(0, 2).Draw(t, "maxU")))
			pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable = nil, &v
		}
		c.in.PDBs = append(c.in.PDBs, pdb)
	}
}

// apply carries out a plan on the model the way a controller would once it completes:
// replacements become initialized nodes with their pods, moved pods are bound where the plan
// put them, and the disrupted nodes are gone. Unplaced pods of forceful commands are lost.
func (c *cluster) apply(t *rapid.T, r disruption.Result) {
	byName := map[string]int{}
	for i, n := range c.in.Nodes {
		byName[n.Node.Name] = i
	}
	pods := map[string]*corev1.Pod{}
	gone := map[string]bool{}
	for _, cmd := range r.Commands {
		for _, name := range cmd.Nodes {
			gone[name] = true
			for _, p := range c.in.Nodes[byName[name]].Pods {
				pods[nodeplan.PodKey(p)] = p
			}
		}
	}
	bind := func(n *disruption.Node, keys []string) {
		for _, k := range keys {
			p := pods[k].DeepCopy()
			p.Spec.NodeName = n.Node.Name
			n.Pods = append(n.Pods, p)
		}
		n.LastPodEvent = c.in.Now
	}
	for _, cmd := range r.Commands {
		for _, m := range cmd.Moves {
			bind(&c.in.Nodes[byName[m.Name]], m.Pods)
		}
		for _, rc := range cmd.Replacements {
			n := newNode(t, c.name("node-"), rc.InstanceType, rc.NodePool, inZone(rc.Offering.Zone), func(n *disruption.Node) {
				n.CapacityType = rc.Offering.CapacityType
				n.Price = rc.Offering.Price
				n.Created, n.Initialized, n.LastPodEvent = c.in.Now, c.in.Now, c.in.Now
			})
			bind(&n, rc.Pods)
			c.in.Nodes = append(c.in.Nodes, n)
		}
	}
	c.in.Nodes = slices.DeleteFunc(c.in.Nodes, func(n disruption.Node) bool { return gone[n.Node.Name] })
	for i := range c.in.Nodes {
		c.in.Nodes[i].Disrupting = false // what was disrupting before this pass has finished
	}
}

// TestPlanStateMachine drives random clusters through passes — plan, carry out, let time pass,
// drift, interrupt, add nodes — and after every plan checks the invariants: budgets, do-not-
// disrupt, PDBs together, moved pods fit (scheduling/check), consolidation never raises cost,
// every managed node explained once, and the same input (in any node order) gives the same plan.
func TestPlanStateMachine(t *testing.T) {
	catalog := testCatalog(t)
	seen := map[string]int{} // what the runs exercised, logged at the end
	defer func() { t.Logf("commands and blockers seen: %v", seen) }()
	rapid.Check(t, func(t *rapid.T) {
		c := &cluster{types: map[string]*nodeplan.InstanceType{}, catalog: catalog}
		for i := range catalog {
			c.types[catalog[i].Name] = &catalog[i]
		}
		c.in = disruption.Input{InstanceTypes: catalog,
			Now: t0.Add(time.Duration(rapid.IntRange(0, 7*24).Draw(t, "hour")) * time.Hour)}
		c.in.NodePools = []nodeplan.NodePool{c.genPool(t, "alpha"), c.genPool(t, "beta")}
		c.in.Options.ExpirationHonorsBudgets = rapid.Bool().Draw(t, "expiryBudgets")
		c.in.Options.SavingsThreshold = rapid.SampledFrom([]float64{0, -1, 0.3}).Draw(t, "threshold")
		c.in.Options.SpotFlexibility = rapid.SampledFrom([]int{0, 2, -1}).Draw(t, "flex")
		for range rapid.IntRange(2, 8).Draw(t, "nodes") {
			c.in.Nodes = append(c.in.Nodes, c.genNode(t))
		}
		c.genPDBs(t)

		t.Repeat(map[string]func(*rapid.T){
			"plan": func(t *rapid.T) {
				r, err := disruption.Plan(context.Background(), c.in)
				if err != nil {
					t.Fatalf("Plan() error = %v", err)
				}
				t.Logf("plan:\n%s", render(r))
				for _, n := range c.in.Nodes {
					var ps []string
					for _, p := range n.Pods {
						ps = append(ps, p.Name)
					}
					t.Logf("node %s %s %s %s init=%v pods=%v", n.Node.Name, n.NodePool, n.InstanceType, n.Zone, !n.Initialized.IsZero(), ps)
				}
				checkInvariants(t, c.in, r)
				again, err := disruption.Plan(context.Background(), c.in)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(r, again, resultOptions); diff != "" {
					t.Fatalf("Plan() twice on one input differs (-first +second):\n%s", diff)
				}
				shuffled := c.in
				shuffled.Nodes = slices.Clone(c.in.Nodes)
				slices.Reverse(shuffled.Nodes)
				rev, err := disruption.Plan(context.Background(), shuffled)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(r, rev, resultOptions); diff != "" {
					t.Fatalf("Plan() with nodes reversed differs (-want +got):\n%s", diff)
				}
				for _, cmd := range r.Commands {
					seen[string(cmd.Action)+"/"+string(cmd.Reason)]++
				}
				for _, b := range r.Blocked {
					seen[string(b.Code)]++
				}
				c.apply(t, r)
			},
			"advance": func(t *rapid.T) {
				c.in.Now = c.in.Now.Add(time.Duration(rapid.IntRange(1, 180).Draw(t, "minutes")) * time.Minute)
			},
			"drift": func(t *rapid.T) {
				if len(c.in.Nodes) > 0 {
					c.in.Nodes[rapid.IntRange(0, len(c.in.Nodes)-1).Draw(t, "i")].Drift = "NodePoolDrifted"
				}
			},
			"interrupt": func(t *rapid.T) {
				if len(c.in.Nodes) > 0 {
					i := rapid.IntRange(0, len(c.in.Nodes)-1).Draw(t, "i")
					c.in.Nodes[i].Interruption = &disruption.Interruption{Kind: "SpotInterruption", Deadline: c.in.Now.Add(2 * time.Minute)}
				}
			},
			"disrupting": func(t *rapid.T) {
				if len(c.in.Nodes) > 0 {
					c.in.Nodes[rapid.IntRange(0, len(c.in.Nodes)-1).Draw(t, "i")].Disrupting = true
				}
			},
			"addNode": func(t *rapid.T) {
				if len(c.in.Nodes) < 12 {
					c.in.Nodes = append(c.in.Nodes, c.genNode(t))
				}
			},
			"pdbs": func(t *rapid.T) { c.genPDBs(t) },
		})
	})
}
