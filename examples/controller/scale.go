package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/examples/internal/sim"
)

// scaleNamespace holds the scale run's Deployments.
const scaleNamespace = "scale"

// scaleMix is the scale run's Deployments: a spread of shapes, CPU-bound to memory-bound,
// with their shares of the pods.
var scaleMix = []struct {
	name     string
	cpu, mem string
	share    int // of 100
}{
	{"web", "500m", "1Gi", 30},
	{"api", "1", "2Gi", 20},
	{"small", "100m", "128Mi", 15},
	{"worker", "2", "4Gi", 15},
	{"cache", "250m", "4Gi", 15},
	{"batch", "4", "8Gi", 5},
}

// scaleReplicas splits n pods over the mix by share; the largest share takes the remainder.
func scaleReplicas(n int) []int {
	out := make([]int, len(scaleMix))
	sum := 0
	for i, d := range scaleMix {
		out[i] = n * d.share / 100
		sum += out[i]
	}
	out[0] += n - sum
	return out
}

// scaleScenario scales the mix up to n pods, waits until all run, reports the latencies, then
// scales to zero and waits until every node is gone.
func scaleScenario(n int) scenario {
	return scenario{
		name:  "scale",
		about: fmt.Sprintf("scale a mix of %d Deployments to %d pods, then to 0", len(scaleMix), n),
		pools: sim.ScaleNodePoolsYAML(),
		quiet: true,
		run:   func(ctx context.Context, r *simRun) error { return r.scaleRun(ctx, n) },
	}
}

func (r *simRun) scaleRun(ctx context.Context, n int) error {
	real0 := time.Now()
	for _, d := range scaleMix {
		zero := int32(0)
		labels := map[string]string{"app": d.name}
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: d.name, Namespace: scaleNamespace},
			Spec: appsv1.DeploymentSpec{
				Replicas: &zero,
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						TerminationGracePeriodSeconds: new(int64),
						Containers: []corev1.Container{{
							Name: d.name, Image: "public.ecr.aws/eks-distro/kubernetes/pause:3.7",
							Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
								corev1.ResourceCPU:    resource.MustParse(d.cpu),
								corev1.ResourceMemory: resource.MustParse(d.mem),
							}},
						}},
					},
				},
			},
		}
		if err := r.w.Deployments.Create(ctx, dep); err != nil {
			return err
		}
	}
	if err := r.w.Advance(ctx, time.Second); err != nil {
		return err
	}
	start := r.w.Clock.Now()
	for i, k := range scaleReplicas(n) {
		if err := r.w.Deployments.Scale(ctx, scaleNamespace, scaleMix[i].name, k); err != nil {
			return err
		}
	}
	fmt.Fprintf(r.out, "%s scaled %d deployments to %d pods\n", clockString(start.Sub(sim.Epoch)), len(scaleMix), n)
	var pods []*corev1.Pod
	ok, err := r.w.Until(ctx, 30*time.Minute, func() bool {
		pods = r.scalePods()
		return len(pods) == n && countRunning(pods) == n
	})
	if err != nil {
		return err
	}
	up := r.w.Clock.Now()
	if !ok {
		return fmt.Errorf("after 30m, %d/%d pods are running", countRunning(pods), n)
	}
	rep := r.scaleReport(pods)
	fmt.Fprintf(r.out, "%s %d/%d pods running on %d nodes (%s after the scale-up; %d solves; %d pods planned again after the first nodes came up)\n",
		clockString(up.Sub(sim.Epoch)), n, n, len(r.w.Nodes()), up.Sub(start), rep.solves, rep.replanned)
	fmt.Fprintf(r.out, "  pending → nodeclaim created: p50 %s  p99 %s  max %s  (%d pods; %d placed on capacity already there)\n",
		rep.claimed.p(50), rep.claimed.p(99), rep.claimed.p(100), len(rep.claimed), rep.unclaimed)
	fmt.Fprintf(r.out, "  pending → running:           p50 %s  p99 %s  max %s\n",
		rep.running.p(50), rep.running.p(99), rep.running.p(100))
	for i := range scaleMix {
		if err := r.w.Deployments.Scale(ctx, scaleNamespace, scaleMix[i].name, 0); err != nil {
			return err
		}
	}
	down := r.w.Clock.Now()
	fmt.Fprintf(r.out, "%s scaled every deployment to 0\n", clockString(down.Sub(sim.Epoch)))
	ok, err = r.w.Until(ctx, 15*time.Minute, func() bool {
		return len(r.w.Nodes()) == 0 && len(r.instances()) == 0 && r.book.allDeleted()
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("15m after the scale-down, %d nodes and %d instances remain", len(r.w.Nodes()), len(r.instances()))
	}
	end := r.w.Clock.Now()
	fmt.Fprintf(r.out, "%s no nodes left (%s after the scale-down); %d nodes launched in all\n",
		clockString(end.Sub(sim.Epoch)), end.Sub(down), len(r.book.launched()))
	fmt.Fprintf(r.out, "summary: %s simulated in %s\n", clockString(r.w.Elapsed()), time.Since(real0).Round(time.Millisecond))
	return nil
}

// scalePods returns the scale run's live pods, as stored (not to be modified).
func (r *simRun) scalePods() []*corev1.Pod {
	return slices.DeleteFunc(r.w.Pods(scaleNamespace), func(p *corev1.Pod) bool {
		return p.DeletionTimestamp != nil || nodeplan.PodTerminal(p)
	})
}

func running(p *corev1.Pod) bool { return p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning }

func countRunning(pods []*corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if running(p) {
			n++
		}
	}
	return n
}

// durations are latencies, sorted.
type durations []time.Duration

// p is the q-th percentile, nearest rank (q 100 is the largest); "-" when there are none.
func (d durations) p(q int) string {
	if len(d) == 0 {
		return "-"
	}
	i := (q*len(d) + 99) / 100
	return d[max(i, 1)-1].Round(100 * time.Millisecond).String()
}

type scaleReport struct {
	claimed, running durations
	unclaimed        int
	solves           int
	// replanned counts the pods a second NodeClaim was made for: those the scheduler left
	// over when the nodes of their first came up.
	replanned int
}

// scaleReport measures each pod from its creation: to the creation of the last NodeClaim
// made for it before it started (the one it most likely runs on; pods placed on room already
// there or on its way have none), and to Running.
func (r *simRun) scaleReport(pods []*corev1.Pod) scaleReport {
	r.book.mu.Lock()
	defer r.book.mu.Unlock()
	rep := scaleReport{solves: r.book.solves}
	for _, p := range pods {
		created := p.CreationTimestamp.Time
		var claimed time.Time
		if len(r.book.claimedAt[nodeplan.PodKey(p)]) > 1 {
			rep.replanned++
		}
		for _, at := range r.book.claimedAt[nodeplan.PodKey(p)] {
			if !at.Before(created) && (p.Status.StartTime == nil || !at.After(p.Status.StartTime.Time)) && at.After(claimed) {
				claimed = at
			}
		}
		if claimed.IsZero() {
			rep.unclaimed++
		} else {
			rep.claimed = append(rep.claimed, claimed.Sub(created))
		}
		if p.Status.StartTime != nil {
			rep.running = append(rep.running, p.Status.StartTime.Sub(created))
		}
	}
	slices.Sort(rep.claimed)
	slices.Sort(rep.running)
	return rep
}
