package fingerprint_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/nodeplan/nodeplan/benchmarks/suite"
	"github.com/nodeplan/nodeplan/scheduling"
	"github.com/nodeplan/nodeplan/scheduling/schedulingtest"
)

var update = flag.Bool("update", false, "re-record testdata/results.txt")

const recorded = "testdata/results.txt"

// input is one problem of the fingerprint, named so a changed line says which.
type input struct {
	name string
	in   scheduling.Input
}

// generated are the seeded families of generated inputs: how many of each, and how to draw
// one from a seed.
var generated = []struct {
	name  string
	count int
	draw  func(seed int) scheduling.Input
}{
	{"gen-basic", 300, rapidDraw(schedulingtest.Inputs(schedulingtest.Config{}), false)},
	{"gen-basic-api", 200, rapidDraw(schedulingtest.Inputs(schedulingtest.Config{MaxPods: 16}), true)},
	{"gen-topo", 250, rapidDraw(schedulingtest.Inputs(schedulingtest.Config{Topology: true, MaxPods: 16}), true)},
	{"gen-topo-big", 100, rapidDraw(schedulingtest.Inputs(schedulingtest.Config{Topology: true, MaxPods: 48, MaxTypes: 12}), true)},
	{"gen-spread", 200, rapidDraw(schedulingtest.TopologyInputs(), true)},
	{"gen-karpenter-mix", 150, karpenterMix},
}

// rapidDraw draws an input from a rapid generator by seed, shaping its pods as the API server
// returns them when api is set.
func rapidDraw(g *rapid.Generator[scheduling.Input], api bool) func(int) scheduling.Input {
	return func(seed int) scheduling.Input {
		in := g.Example(seed)
		if api {
			in.Pods = schedulingtest.APIServerShapedPods(in.Pods)
		}
		return in
	}
}

var (
	mixBaseOnce sync.Once
	mixBase     scheduling.Input
	mixBaseErr  error
)

// karpenterMix is Karpenter's benchmark generator at 10 to 160 pods, on the suite's pool,
// catalog and DaemonSets, pods as the API server returns them.
func karpenterMix(seed int) scheduling.Input {
	mixBaseOnce.Do(func() {
		scs, err := suite.Scenarios(suite.Small)
		if err != nil {
			mixBaseErr = err
			return
		}
		for _, sc := range scs {
			if sc.Family == "karpenter-mix-drawn" {
				mixBase = sc.Input
				return
			}
		}
		mixBaseErr = fmt.Errorf("the suite has no karpenter-mix-drawn scenario")
	})
	if mixBaseErr != nil {
		panic(mixBaseErr)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6b6d6978))
	n := 10 + rng.IntN(151)
	in := mixBase
	in.Pods = schedulingtest.APIServerShapedPods(schedulingtest.KarpenterMix(rng, n, fmt.Sprintf("fp-%d", seed)))
	return in
}

// inputs is every problem of the fingerprint, in a fixed order. With lightOnly — under the race
// detector, which makes the solver about ten times slower and is how CI runs every test, and
// under -short — it is the small suite and every fourth generated input; the full-size suite is
// not even built.
func inputs(t *testing.T, lightOnly bool) []input {
	t.Helper()
	var out []input
	if !lightOnly {
		scs, err := suite.Scenarios(suite.Full)
		if err != nil {
			t.Fatal(err)
		}
		for _, sc := range scs {
			out = append(out, input{name: "suite/" + sc.Name, in: sc.Input})
		}
	}
	small, err := suite.Scenarios(suite.Small)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range small {
		out = append(out, input{name: "suite-small/" + sc.Name, in: sc.Input})
	}
	for _, g := range generated {
		for seed := range g.count {
			if light := seed%4 == 0; light || !lightOnly {
				out = append(out, input{name: fmt.Sprintf("%s/%04d", g.name, seed), in: g.draw(seed)})
			}
		}
	}
	return out
}

// line is a Result as one line of the recorded file: the input's name, the figures a person
// reads, and a hash of the whole Result.
func line(name string, res scheduling.Result) (string, error) {
	data, err := json.Marshal(res)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return fmt.Sprintf("%s cost=%.6f bound=%.6f nodes=%d unplaced=%d hash=%s",
		name, res.Cost, res.LowerBound, len(res.NodeClaims), len(res.Unschedulable), hex.EncodeToString(sum[:8])), nil
}

func TestFingerprint(t *testing.T) {
	lightOnly := testing.Short() || raceEnabled
	if lightOnly && *update {
		t.Fatal("-update needs every input: run it without -race and -short")
	}
	all := inputs(t, lightOnly)
	want, err := readRecorded()
	if err != nil && !*update {
		t.Fatalf("%v (record it with: cd benchmarks && go test ./fingerprint -update)", err)
	}

	got := make([]string, len(all))
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	work := make(chan int)
	for range 2 {
		wg.Go(func() {
			for i := range work {
				res, err := scheduling.Solve(context.Background(), all[i].in)
				if err == nil {
					got[i], err = line(all[i].name, res)
				}
				if err != nil {
					errs[i] = fmt.Errorf("%s: %w", all[i].name, err)
				}
			}
		})
	}
	for i := range all {
		work <- i
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if t.Failed() {
		return
	}

	if *update {
		if err := os.WriteFile(recorded, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %d results in %s", len(got), recorded)
		return
	}
	var moved []string
	for i, g := range got {
		w, ok := want[all[i].name]
		switch {
		case !ok:
			moved = append(moved, "new input, not recorded: "+g)
		case w != g:
			moved = append(moved, cmp.Diff(w, g))
		}
	}
	if len(moved) > 0 {
		t.Errorf("%d of %d Results differ from %s (-recorded +now); if the change is meant to move plans, re-record with -update and say which moved and why in the commit:\n%s",
			len(moved), len(got), recorded, strings.Join(moved, "\n"))
	}
	if n := len(want) - len(got); n > 0 && !lightOnly {
		t.Errorf("%s has %d lines for inputs the test no longer draws; re-record with -update", recorded, n)
	}
}

// readRecorded maps each recorded line by its input's name.
func readRecorded() (map[string]string, error) {
	data, err := os.ReadFile(recorded)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		name, _, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want \"NAME cost=… hash=…\", got %q", recorded, n, sc.Text())
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s:%d: input %s recorded twice", recorded, n, name)
		}
		out[name] = sc.Text()
	}
	return out, sc.Err()
}
