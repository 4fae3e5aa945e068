// Command bench runs the scenario suite through nodeplan's solver and prints, per scenario, the
// cost ($/h), cost over the lower bound, nodes, unplaced pods, median solve time, CPU time,
// pods/s, allocations and the independent checker's verdict.
//
// Usage:
//
//	go run ./cmd/bench [-size full|small] [-run regexp] [-runs 5] [-budget 20s] [-o table|json] [-bare]
//	                   [-node-cost $/h]
//
// -bare runs the pods as the suite builds them instead of as the API server returns them, to
// compare the two. -node-cost prices every node beyond its instance (scheduling.NodeCost.PerNode:
// root volume, IPv4 address, per-host licences): the solver weighs it and the cost includes it.
//
// The Karpenter comparison lives in the separate module benchmarks/karpenter.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"

	"github.com/nodeplan/nodeplan/benchmarks/internal/measure"
	"github.com/nodeplan/nodeplan/benchmarks/internal/report"
	"github.com/nodeplan/nodeplan/benchmarks/suite"
)

func main() {
	size := flag.String("size", "full", "suite size: full or small")
	run := flag.String("run", "", "only scenarios whose name matches this regexp")
	runs := flag.Int("runs", 5, "most runs per scenario (the median is reported)")
	budget := flag.Duration("budget", 0, "stop repeating a scenario after this much time (0: 20s)")
	out := flag.String("o", "table", "output: table (markdown) or json")
	bare := flag.Bool("bare", false, "pods as built, without what the API server adds")
	nodeCost := flag.Float64("node-cost", 0, "`$/h` every node costs beyond its instance, weighed by the solver and included in the cost")
	effort := flag.Float64("effort", 0, "scheduling.Options.Effort: the work the solver's LP may spend, as a multiple of the default (0: the default)")
	flag.Parse()
	if err := bench(*size, *run, *out, *bare, *nodeCost, *effort, measure.Options{Runs: *runs, Budget: *budget}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func bench(size, run, out string, bare bool, nodeCost, effort float64, o measure.Options) error {
	var sz suite.Size
	switch size {
	case "full":
		sz = suite.Full
	case "small":
		sz = suite.Small
	default:
		return fmt.Errorf("bench: -size %q: want full or small", size)
	}
	if out != "table" && out != "json" {
		return fmt.Errorf("bench: -o %q: want table or json", out)
	}
	re, err := regexp.Compile(run)
	if err != nil {
		return fmt.Errorf("bench: -run: %w", err)
	}
	scenarios := suite.Scenarios
	if bare {
		scenarios = suite.BareScenarios
	}
	scs, err := scenarios(sz)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	var rs []measure.Result
	for _, sc := range scs {
		if !re.MatchString(sc.Name) {
			continue
		}
		sc.Input.Options.NodeCost.PerNode = nodeCost
		sc.Input.Options.Effort = effort
		r, err := measure.Nodeplan(context.Background(), sc, o)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		fmt.Fprintf(os.Stderr, "%-22s %7d pods  $%.3f/h  cost/LB %.3f  %5d nodes  %d unplaced  %v\n",
			r.Scenario, r.Pods, r.Cost, r.CostOverLB(), r.Nodes, r.Unplaced, measure.Round(r.Wall))
		if r.Violation != "" {
			fmt.Fprintf(os.Stderr, "  %d violations, first: %s\n", r.Violations, r.Violation)
		}
		if r.Note != "" {
			fmt.Fprintf(os.Stderr, "  %s\n", r.Note)
		}
		rs = append(rs, r)
	}
	if out == "json" {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rs)
	}
	return report.NodeplanTable(os.Stdout, rs)
}
