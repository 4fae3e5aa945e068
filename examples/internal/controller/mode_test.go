package controller_test

import (
	"context"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/disruption"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

// TestCommandModeDecidesTheDrain: the drain follows the command's Mode, not the reason. A
// drift command on a claim with a terminationGracePeriod is forceful by the planner's rule;
// a planner that makes it graceful gets a graceful drain, which a PDB created while the
// command waits for its replacement cancels before the first eviction.
func TestCommandModeDecidesTheDrain(t *testing.T) {
	h := newHarness(t)
	rec := h.recordPodWrites()
	h.pools[0].Template.TerminationGracePeriod = time.Hour
	h.start("a", func(c *controller.Controller) {
		c.Planner = controller.PlanFunc(func(ctx context.Context, in disruption.Input) (disruption.Result, error) {
			res, err := disruption.Plan(ctx, in)
			for i := range res.Commands {
				if res.Commands[i].Reason == nodeplan.ReasonDrifted {
					res.Commands[i].Mode = disruption.ModeGraceful
				}
			}
			return res, err
		})
	})
	h.deploy("inflate", 2, 0)
	h.until(time.Minute, "2 pods running", func() bool { return h.running() == 2 })
	old := h.pods("test")[0].Spec.NodeName
	h.w.Kubelet.SetBootTime(time.Hour)
	h.w.Cloud.SetImageID("img-2")
	h.until(time.Minute, "a replacement launched", func() bool { return len(h.instances()) == 2 })
	if err := h.w.Advance(context.Background(), 30*time.Second); err != nil { // the command waits
		t.Fatal(err)
	}
	all := intstr.FromString("100%")
	if _, err := h.w.Client.PolicyV1().PodDisruptionBudgets("test").Create(context.Background(), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "strict", Namespace: "test"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &all,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "inflate"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	releaseAndExpectCancel(h, rec, old, "PodDisruptionBudget test/strict allows no disruption now")
}
