package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodeplan/nodeplan/benchmarks/internal/measure"
)

func pairs() []Pair {
	r := func(solver, sc, fam string, pods int, cost float64, wall time.Duration) measure.Result {
		return measure.Result{Scenario: sc, Family: fam, Pods: pods, Solver: solver, Cost: cost, LowerBound: 1,
			Nodes: 3, Timing: measure.Timing{Runs: 1, Wall: wall, CPU: wall}, Checked: solver == "nodeplan"}
	}
	return []Pair{
		{r("nodeplan", "inflate-100", "inflate", 100, 1.02, 2*time.Millisecond), r("karpenter", "inflate-100", "inflate", 100, 1.3, 80*time.Millisecond)},
		{r("nodeplan", "inflate-1000", "inflate", 1000, 1.01, 5*time.Millisecond), r("karpenter", "inflate-1000", "inflate", 1000, 1.2, 2*time.Second)},
		{r("nodeplan", "web-mix-3000", "web-mix", 3000, 1.1, 300*time.Millisecond), r("karpenter", "web-mix-3000", "web-mix", 3000, 0, 0)},
	}
}

func TestChartIsWellFormedSVG(t *testing.T) {
	var b bytes.Buffer
	if err := Chart(&b, "Karpenter <v1>", pairs()); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&b)
	elements := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("Chart() is not well-formed XML: %v", err)
		}
		if _, ok := tok.(xml.StartElement); ok {
			elements++
		}
	}
	if elements < 20 {
		t.Errorf("Chart() has %d elements, want a drawing", elements)
	}
}

func TestComparisonTable(t *testing.T) {
	var b bytes.Buffer
	if err := ComparisonTable(&b, "Karpenter", pairs()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2+len(pairs()) {
		t.Fatalf("ComparisonTable() has %d lines, want %d:\n%s", len(lines), 2+len(pairs()), b.String())
	}
	if !strings.Contains(lines[2], "| inflate-100 | 100 | 1.020 | 1.300 | **0.785** |") {
		t.Errorf("ComparisonTable() row = %q, want the costs and their ratio", lines[2])
	}
}

func TestSplice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(path, []byte("head\n<!-- results:begin -->\nold\n<!-- results:end -->\ntail\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Splice(path, "results", []byte("new")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "head\n<!-- results:begin -->\nnew\n<!-- results:end -->\ntail\n"; string(got) != want {
		t.Errorf("Splice() gave %q, want %q", got, want)
	}
	if err := Splice(path, "missing", nil); err == nil {
		t.Errorf("Splice(missing markers) = nil, want an error")
	}
}

var update = flag.Bool("update", false, "rewrite benchmarks/results/chart.svg from results.json")

// The committed chart is what Chart draws from the committed results: a change to either shows
// here. Regenerate with `go test ./benchmarks/internal/report -update` (no need to rerun the
// benchmarks).
func TestCommittedChartIsCurrent(t *testing.T) {
	data, err := os.ReadFile("../../results/results.json")
	if err != nil {
		t.Fatal(err)
	}
	var results struct {
		Results []Pair `json:"results"`
	}
	if err := json.Unmarshal(data, &results); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Chart(&b, "Karpenter v1.14.1", results.Results); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("../../results/chart.svg", b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile("../../results/chart.svg")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, b.Bytes()) {
		t.Errorf("benchmarks/results/chart.svg is not what Chart draws from results.json; run go test ./benchmarks/internal/report -update")
	}
	svg := b.String()
	for _, want := range []string{"(cut off)", "nodeplan ", "Karpenter ", " nodes"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
}

func TestChartDrawsCutOffRunsAsLowerLimits(t *testing.T) {
	ps := pairs()
	ps[1].Peer.CutOff = true
	ps[2].Nodeplan.Cost = 9 // a ratio far past the axis
	var b bytes.Buffer
	if err := Chart(&b, "Karpenter v1.14.1", ps); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, want := range []string{"≥ 2s (cut off)", "cut off at 2s, still running", "(bar broken)", "3 nodes"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
}
