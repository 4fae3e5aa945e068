package controller_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nodeplan/nodeplan/disruption"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/scheduling"
)

// TestPreferencesAndSpotToSpotReachSolveAndPlan: Controller.Preferences (Karpenter's
// PREFERENCE_POLICY) and MinValues (MIN_VALUES_POLICY) reach every solve and the planner's
// simulations, and NoSpotToSpot
// (FEATURE_GATES SpotToSpotConsolidation=false) the planner's spot flexibility.
func TestPreferencesAndSpotToSpotReachSolveAndPlan(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	var solve, plan []scheduling.PreferencePolicy
	var minValues, planMinValues []scheduling.MinValuesPolicy
	var flex []int
	h.startOnCluster("a", func(c *controller.Controller) {
		c.Preferences, c.NoSpotToSpot, c.MinValues = scheduling.PreferencesIgnore, true, scheduling.MinValuesBestEffort
		c.Solve = func(ctx context.Context, in scheduling.Input) (scheduling.Result, error) {
			mu.Lock()
			solve, minValues = append(solve, in.Options.Preferences), append(minValues, in.Options.MinValues)
			mu.Unlock()
			return scheduling.Solve(ctx, in)
		}
		c.Planner = controller.PlanFunc(func(ctx context.Context, in disruption.Input) (disruption.Result, error) {
			mu.Lock()
			plan, flex = append(plan, in.Options.Scheduling.Preferences), append(flex, in.Options.SpotFlexibility)
			planMinValues = append(planMinValues, in.Options.Scheduling.MinValues)
			mu.Unlock()
			return disruption.Plan(ctx, in)
		})
	})
	h.deploy("web", 2, 0)
	h.until(2*time.Minute, "a solve and a disruption plan", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(solve) > 0 && len(plan) > 0
	})
	mu.Lock()
	defer mu.Unlock()
	if solve[0] != scheduling.PreferencesIgnore || plan[0] != scheduling.PreferencesIgnore || flex[0] >= 0 {
		t.Errorf("solve preferences %q, plan preferences %q, spot flexibility %d; want Ignore, Ignore and negative", solve[0], plan[0], flex[0])
	}
	if minValues[0] != scheduling.MinValuesBestEffort || planMinValues[0] != scheduling.MinValuesBestEffort {
		t.Errorf("solve minValues policy %q, plan's %q; want BestEffort (MIN_VALUES_POLICY)", minValues[0], planMinValues[0])
	}
}
