package scheduling_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/check"
	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
)

// oracleCases is how many random tiny inputs TestOracle solves; every one is reproducible from
// its seed with schedulingtest.Inputs(schedulingtest.Config{Exact: true}).Example(seed).
const oracleCases = 600

// knownOracle lists the seeds where Solve is known to lose to first-fit-decreasing, in cost or in
// pods placed; TestOracle logs them instead of failing. Whoever fixes the cause deletes them
// (TestOracle says which no longer lose).
var knownOracle = map[int]string{}

// TestOracle compares Solve with the exhaustive optimum and with first-fit-decreasing on tiny
// random inputs: Solve must never cost more than first-fit when both place the same pods, and
// must be within 5% of the optimum in at least 95% of the cases.
func TestOracle(t *testing.T) {
	n := oracleCases
	if testing.Short() {
		n = 100
	}
	gen := schedulingtest.Inputs(schedulingtest.Config{Exact: true})
	var (
		ratios                      []float64 // Solve / Optimal, where both place the same pods
		worst                       float64
		worstSeed                   = -1
		failures                    = map[int][]string{}
		placedFewer                 []string
		invalid                     []string
		ffdBetter, ffdTie, ffdWorse int
		ffdGain                     float64 // sum of (FFD − Solve) / FFD over comparable cases
		ffdComparable               int
	)
	for seed := range n {
		in := gen.Example(seed)
		res, err := scheduling.Solve(context.Background(), in)
		if err != nil {
			t.Fatalf("seed %d: Solve() error = %v, want nil", seed, err)
		}
		if err := check.Result(in, res); err != nil {
			invalid = append(invalid, fmt.Sprintf("seed %d: %v", seed, err))
			continue
		}
		opt, optOut, ok := schedulingtest.Optimal(in)
		if !ok {
			t.Fatalf("seed %d: Optimal() ok = false on an Exact input", seed)
		}
		ffd, ffdOut := schedulingtest.FirstFitDecreasing(in)
		out := len(res.Unschedulable)
		if out > len(optOut) {
			msg := fmt.Sprintf("seed %d: Solve leaves %d pods out, the optimum %d %v, first-fit-decreasing %d", seed, out, len(optOut), optOut, len(ffdOut))
			if out > len(ffdOut) {
				failures[seed] = append(failures[seed], "Solve places fewer pods than first-fit-decreasing: "+msg)
			} else {
				placedFewer = append(placedFewer, msg)
			}
			continue
		}
		if out < len(optOut) {
			t.Fatalf("seed %d: Solve places more pods than Optimal (%d out vs %v): the oracle is wrong", seed, out, optOut)
		}
		r := 1.0
		if opt > 0 {
			r = res.Cost / opt
		} else if res.Cost > 0 {
			r = math.Inf(1)
		}
		if r < 1-1e-9 {
			t.Fatalf("seed %d: Solve costs %v, below the optimum %v: the oracle is wrong", seed, res.Cost, opt)
		}
		ratios = append(ratios, r)
		if r > worst {
			worst, worstSeed = r, seed
		}
		if len(ffdOut) == out {
			ffdComparable++
			switch {
			case res.Cost > ffd+1e-9*math.Max(1, ffd):
				ffdWorse++
				failures[seed] = append(failures[seed], fmt.Sprintf("Solve costs more than first-fit-decreasing: seed %d: Solve $%.4f > FFD $%.4f (optimum $%.4f)", seed, res.Cost, ffd, opt))
			case res.Cost < ffd-1e-9*math.Max(1, ffd):
				ffdBetter++
			default:
				ffdTie++
			}
			if ffd > 0 {
				ffdGain += (ffd - res.Cost) / ffd
			}
		}
	}

	within := 0
	for _, r := range ratios {
		if r <= 1.05+1e-9 {
			within++
		}
	}
	buckets := []struct {
		label string
		max   float64
	}{{"optimal", 1 + 1e-9}, {"≤1%", 1.01}, {"≤2%", 1.02}, {"≤5%", 1.05}, {"≤10%", 1.10}, {"≤25%", 1.25}, {">25%", math.Inf(1)}}
	counts := make([]int, len(buckets))
	for _, r := range ratios {
		for i, b := range buckets {
			if r <= b.max+1e-12 {
				counts[i]++
				break
			}
		}
	}
	var dist []string
	for i, b := range buckets {
		dist = append(dist, fmt.Sprintf("%s:%d", b.label, counts[i]))
	}
	sorted := slices.Clone(ratios)
	sort.Float64s(sorted)
	mean := 0.0
	for _, r := range ratios {
		mean += r
	}
	if len(ratios) > 0 {
		mean /= float64(len(ratios))
	}
	t.Logf("Solve vs Optimal over %d of %d cases: within 5%%: %d (%.1f%%); mean ratio %.4f; worst %.4f (seed %d)",
		len(ratios), n, within, 100*float64(within)/math.Max(1, float64(len(ratios))), mean, worst, worstSeed)
	t.Logf("distribution: %s", strings.Join(dist, " "))
	if len(sorted) > 0 {
		t.Logf("percentiles: p50 %.4f, p90 %.4f, p99 %.4f", sorted[len(sorted)/2], sorted[len(sorted)*9/10], sorted[len(sorted)*99/100])
	}
	t.Logf("Solve vs FirstFitDecreasing over %d cases: cheaper %d, equal %d, dearer %d; mean saving %.2f%%",
		ffdComparable, ffdBetter, ffdTie, ffdWorse, 100*ffdGain/math.Max(1, float64(ffdComparable)))
	for _, s := range placedFewer {
		t.Logf("places fewer pods than the optimum, as many as first-fit-decreasing: %s", s)
	}

	for _, s := range invalid {
		t.Errorf("check.Result(in, Solve(in)) found violations, %s", s)
	}
	for seed := range n {
		for _, f := range failures[seed] {
			if why, ok := knownOracle[seed]; ok {
				t.Logf("known (%s): %s", why, f)
			} else {
				t.Errorf("%s\n%s", f, schedulingtest.Describe(gen.Example(seed)))
			}
		}
		if _, ok := knownOracle[seed]; ok && len(failures[seed]) == 0 {
			t.Logf("seed %d no longer loses to first-fit-decreasing: delete it from knownOracle", seed)
		}
	}
	if len(ratios) > 0 && float64(within) < 0.95*float64(len(ratios)) {
		t.Errorf("Solve is within 5%% of the optimum in %d of %d cases, want ≥ 95%%", within, len(ratios))
	}
}
