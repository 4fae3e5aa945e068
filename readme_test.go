package nodeplan_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeExample keeps the README's Go snippet identical to the body of ExampleSolve, which
// go test runs and checks against its output: the README cannot show code that does not work.
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("scheduling/example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no ```go block")
	}
	body := string(example)
	pos := 0
	for _, line := range strings.Split(blocks[0][1], "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		i := strings.Index(body[pos:], line)
		if i < 0 {
			t.Errorf("README line %q is not in scheduling/example_test.go (after what came before it)", line)
			continue
		}
		pos += i + len(line)
	}
	// The README's printed output must be ExampleSolve's // Output: block.
	out := regexp.MustCompile("(?s)prints\n\n```\n(.*?)```").FindStringSubmatch(string(readme))
	if out == nil {
		t.Fatal("README.md has no printed output after the Go snippet")
	}
	for _, line := range strings.Split(strings.TrimSpace(out[1]), "\n") {
		if !strings.Contains(body, "// "+line) {
			t.Errorf("README output line %q is not in ExampleSolve's // Output:", line)
		}
	}
}

// TestReadmeTestCommand keeps .ci/run running the command the README tells people to run.
func TestReadmeTestCommand(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	const cmd = "go test -race -timeout 30m ./... ./examples/... ./examples/e2e/... ./benchmarks/..."
	if !strings.Contains(string(readme), cmd) || !strings.Contains(string(ci), cmd) {
		t.Errorf("README.md and .ci/run must both contain %q", cmd)
	}
}

// TestReadmeIsShort keeps README.md a front page (issue 31): what nodeplan is, the two
// commands, the what-if and shadow commands, the library example, the packages and one
// comparison. Measurements and their history belong in benchmarks/README.md.
func TestReadmeIsShort(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 200 {
		t.Errorf("README.md has %d lines, want at most 200: move detail to a package doc or benchmarks/README.md", n)
	}
}
