// Command karpenter runs nodeplan's scenario suite through nodeplan and through Karpenter's
// own provisioning scheduler (sigs.k8s.io/karpenter, called as a library on the same inputs),
// prices Karpenter's NodeClaims the way its AWS provider launches them, and writes the
// comparison: results.json, results.md and chart.svg in the output directory, and the results
// section of the benchmarks README.
//
// It is a module of its own so that nodeplan never depends on Karpenter; its first build takes
// minutes.
//
// Usage (from benchmarks/karpenter):
//
//	go run . [-o ../results] [-readme ../README.md] [-size full|small] [-run regexp]
//	         [-runs 5] [-budget 20s] [-timeout 10m] [-concurrency N]
//	go run . -from ../results/results.json   # re-render table, chart and README only
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nodeplan/nodeplan/benchmarks/internal/measure"
	"github.com/nodeplan/nodeplan/benchmarks/internal/report"
	"github.com/nodeplan/nodeplan/benchmarks/suite"
)

func main() {
	var c config
	flag.StringVar(&c.out, "o", "../results", "directory for results.json, results.md and chart.svg")
	flag.StringVar(&c.readme, "readme", "../README.md", "README whose results section is rewritten (empty: none)")
	flag.StringVar(&c.size, "size", "full", "suite size: full or small")
	flag.StringVar(&c.run, "run", "", "only scenarios whose name matches this regexp")
	flag.IntVar(&c.o.Runs, "runs", 5, "most runs per scenario and solver (medians are reported)")
	flag.DurationVar(&c.o.Budget, "budget", 20*time.Second, "stop repeating a scenario once its runs took this long")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Minute, "stop one Karpenter simulation after this long (its provisioner stops at 1m)")
	flag.IntVar(&c.concurrency, "concurrency", runtime.GOMAXPROCS(0), "Karpenter's NumConcurrentReconciles")
	flag.StringVar(&c.from, "from", "", "render the outputs from this results.json instead of running")
	flag.Parse()
	// Karpenter logs through controller-runtime; the comparison reports outcomes itself.
	ctrllog.SetLogger(logr.Discard())
	if err := compare(context.Background(), c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type config struct {
	out, readme, size, run string
	from                   string
	o                      measure.Options
	timeout                time.Duration
	concurrency            int
}

// Output is what results.json holds.
type Output struct {
	Machine measure.Machine `json:"machine"`
	Pairs   []report.Pair   `json:"results"`
}

func compare(ctx context.Context, c config) error {
	if c.from != "" {
		data, err := os.ReadFile(c.from)
		if err != nil {
			return fmt.Errorf("karpenter: %w", err)
		}
		var out Output
		if err := json.Unmarshal(data, &out); err != nil {
			return fmt.Errorf("karpenter: %s: %w", c.from, err)
		}
		return write(c, out)
	}
	var size suite.Size
	switch c.size {
	case "full":
		size = suite.Full
	case "small":
		size = suite.Small
	default:
		return fmt.Errorf("karpenter: -size %q: want full or small", c.size)
	}
	re, err := regexp.Compile(c.run)
	if err != nil {
		return fmt.Errorf("karpenter: -run: %w", err)
	}
	catalog, err := suite.Catalog()
	if err != nil {
		return err
	}
	keys := registerProviderLabels(catalog)
	scs, err := suite.Scenarios(size)
	if err != nil {
		return err
	}
	out := Output{Machine: measure.ThisMachine()}
	for _, sc := range scs {
		if !re.MatchString(sc.Name) {
			continue
		}
		np, err := measure.Nodeplan(ctx, sc, c.o)
		if err != nil {
			return err
		}
		logResult(np)
		p, err := convert(sc.Input, keys)
		if err != nil {
			return fmt.Errorf("karpenter: %s: %w", sc.Name, err)
		}
		kp, err := runKarpenter(ctx, sc, p, c.o, c.timeout, c.concurrency, np.LowerBound)
		if err != nil {
			return err
		}
		logResult(kp)
		out.Pairs = append(out.Pairs, report.Pair{Nodeplan: np, Peer: kp})
	}
	out.Machine.LoadAfter = measure.LoadAverage()
	return write(c, out)
}

func logResult(r measure.Result) {
	fmt.Fprintf(os.Stderr, "%-9s %-20s %7d pods  $%9.3f/h  cost/LB %6.3f  %5d nodes  %5d unplaced  wall %-8v cpu %v\n",
		r.Solver, r.Scenario, r.Pods, r.Cost, r.CostOverLB(), r.Nodes, r.Unplaced, measure.Round(r.Wall), measure.Round(r.CPU))
	if r.Violation != "" {
		fmt.Fprintf(os.Stderr, "          %d violations, first: %s\n", r.Violations, r.Violation)
	}
	if r.Note != "" {
		fmt.Fprintf(os.Stderr, "          %s\n", r.Note)
	}
}

func write(c config, out Output) error {
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return fmt.Errorf("karpenter: %w", err)
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return fmt.Errorf("karpenter: %w", err)
	}
	var table bytes.Buffer
	fmt.Fprintf(&table, "Measured %s on %s.\n\n", out.Machine.Date, out.Machine.Summary())
	if err := report.ComparisonTable(&table, "Karpenter", out.Pairs); err != nil {
		return err
	}
	var chart bytes.Buffer
	if err := report.Chart(&chart, "Karpenter v1.14.1", out.Pairs); err != nil {
		return err
	}
	for name, content := range map[string][]byte{"results.json": append(data, '\n'), "results.md": table.Bytes(), "chart.svg": chart.Bytes()} {
		if err := os.WriteFile(filepath.Join(c.out, name), content, 0o644); err != nil {
			return fmt.Errorf("karpenter: %w", err)
		}
	}
	os.Stdout.Write(table.Bytes())
	if c.readme != "" {
		if err := report.Splice(c.readme, "results", table.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
