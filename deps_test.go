package nodeplan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The dependency rules of DESIGN.md, checked over `go list` of whatever packages the core module
// has. Paths are relative to the module root; "" is the root package.
//
//   - Each layer imports only the module packages listed for it (its own subtree and internal/
//     packages always allowed), so arrows point one way.
//   - scheduling imports nothing outside the standard library, k8s.io/api, k8s.io/apimachinery
//     and k8s.io/component-helpers (Kubernetes' own rules, e.g. effective requests) besides the
//     root, and golang.org/x/sync/errgroup for the work it runs beside the plan (cancellation
//     with the solve's context); its test-support packages (named …test) may add go-cmp and rapid.
//   - Only pricing and cloudprovider/ec2 import the AWS SDK, and the pure packages do not
//     depend on it even indirectly.
//   - Nothing in the core module, tests included, depends on client-go or controller-runtime.
//   - go.mod requires only the allowed modules and what they pull in.
var layers = []struct {
	dir     string
	imports []string // module packages it may import, by directory prefix; "!dir" forbids a subtree
}{
	{"", nil},
	{"scheduling", []string{""}},
	{"disruption", []string{"", "scheduling"}},
	{"pricing", []string{""}},
	{"cloudprovider", []string{"", "!cloudprovider/ec2"}},
	{"cloudprovider/ec2", []string{"", "cloudprovider", "pricing"}},
}

// pure packages must not depend on the AWS SDK, directly or not.
var pure = []string{"", "scheduling", "disruption"}

var allowedModules = []string{
	"k8s.io/api", "k8s.io/apimachinery", "github.com/aws/aws-sdk-go-v2", "golang.org/x/sync",
	"github.com/google/go-cmp", "pgregory.net/rapid",
	"k8s.io/component-helpers",  // Kubernetes' own rules (effective pod requests), used as kube-scheduler uses them
	"github.com/robfig/cron/v3", // tests only: Karpenter's cron parser, which budget schedules are held to
}

var bannedPackages = []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime"}

type listedPackage struct {
	ImportPath   string
	Standard     bool
	Imports      []string
	TestImports  []string
	XTestImports []string
	Deps         []string
	Module       *struct{ Path string }
}

func goCommand(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	// The core module on its own (not a workspace with examples/), and never a toolchain download.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

func requireGo(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
}

func listPackages(t *testing.T, args ...string) []listedPackage {
	out := goCommand(t, append([]string{"list", "-e", "-json=ImportPath,Standard,Imports,TestImports,XTestImports,Deps,Module"}, args...)...)
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// under reports whether dir is d or inside it ("" is only the root package itself).
func under(dir, d string) bool {
	if d == "" {
		return dir == ""
	}
	return dir == d || strings.HasPrefix(dir, d+"/")
}

func isInternal(dir string) bool {
	return dir == "internal" || strings.HasPrefix(dir, "internal/") || strings.Contains(dir, "/internal/") || strings.HasSuffix(dir, "/internal")
}

func hasPathPrefix(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// layerOf returns the index of the most specific layer dir belongs to, or -1.
func layerOf(dir string) int {
	best := -1
	for i, l := range layers {
		if under(dir, l.dir) && (best < 0 || len(l.dir) > len(layers[best].dir)) {
			best = i
		}
	}
	return best
}

// mayImport reports whether the module package in directory from may import the one in to.
func mayImport(from, to string) bool {
	l := layerOf(from)
	if isInternal(to) || l < 0 {
		return true // Go itself keeps internal/ packages within their parent
	}
	allowed := layers[l].dir != "" && under(to, layers[l].dir) // its own subtree
	for _, d := range layers[l].imports {
		if neg, ok := strings.CutPrefix(d, "!"); ok {
			if under(to, neg) && !under(from, neg) {
				return false
			}
			continue
		}
		allowed = allowed || under(to, d)
	}
	return allowed
}

func TestMayImport(t *testing.T) {
	tests := []struct {
		from, to string
		want     bool
	}{
		{"scheduling", "", true},
		{"scheduling/schedulingtest", "scheduling", true},
		{"scheduling", "internal/sets", true},
		{"scheduling", "disruption", false},
		{"scheduling", "cloudprovider", false},
		{"", "scheduling", false},
		{"disruption", "scheduling", true},
		{"disruption", "scheduling/schedulingtest", true},
		{"disruption", "pricing", false},
		{"pricing", "", true},
		{"pricing", "cloudprovider", false},
		{"cloudprovider", "", true},
		{"cloudprovider/fake", "cloudprovider", true},
		{"cloudprovider", "cloudprovider/ec2", false},
		{"cloudprovider", "scheduling", false},
		{"cloudprovider/ec2", "cloudprovider", true},
		{"cloudprovider/ec2", "pricing", true},
		{"cloudprovider/ec2/ec2test", "pricing", true},
		{"cloudprovider/ec2", "disruption", false},
		{"benchmarks", "cloudprovider/ec2", true},
	}
	for _, tt := range tests {
		if got := mayImport(tt.from, tt.to); got != tt.want {
			t.Errorf("mayImport(%q, %q) = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
}

func TestDependencyDirection(t *testing.T) {
	requireGo(t)
	module := strings.TrimSpace(string(goCommand(t, "list", "-m")))
	rel := func(path string) (string, bool) {
		if path == module {
			return "", true
		}
		r, ok := strings.CutPrefix(path, module+"/")
		return r, ok
	}
	pkgs := listPackages(t, "./...")
	if len(pkgs) == 0 {
		t.Fatal("go list ./... found no packages")
	}
	for _, p := range pkgs {
		dir, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		name := p.ImportPath
		for _, imp := range p.Imports {
			if to, ok := rel(imp); ok && !mayImport(dir, to) {
				t.Errorf("%s imports %s: DESIGN.md does not allow that direction", name, imp)
			}
		}
		if under(dir, "scheduling") {
			testSupport := strings.HasSuffix(dir, "test")
			for _, imp := range p.Imports {
				_, inModule := rel(imp)
				switch {
				case inModule, !strings.Contains(strings.Split(imp, "/")[0], "."): // the module, or the standard library
				case hasPathPrefix(imp, "k8s.io/api"), hasPathPrefix(imp, "k8s.io/apimachinery"), hasPathPrefix(imp, "k8s.io/component-helpers"):
				case imp == "golang.org/x/sync/errgroup":
				case testSupport && (hasPathPrefix(imp, "github.com/google/go-cmp") || hasPathPrefix(imp, "pgregory.net/rapid")):
				default:
					t.Errorf("%s imports %s: scheduling may import only the root package, k8s.io/api, k8s.io/apimachinery, k8s.io/component-helpers and x/sync/errgroup", name, imp)
				}
			}
		}
		awsAllowed := under(dir, "pricing") || under(dir, "cloudprovider/ec2")
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			if hasPathPrefix(imp, "github.com/aws") && !awsAllowed {
				t.Errorf("%s imports %s: only pricing and cloudprovider/ec2 may import the AWS SDK", name, imp)
			}
		}
		if slices.ContainsFunc(pure, func(d string) bool { return under(dir, d) }) {
			for _, dep := range p.Deps {
				if hasPathPrefix(dep, "github.com/aws") {
					t.Errorf("%s depends on %s: the pure packages must not depend on the AWS SDK", name, dep)
					break
				}
			}
		}
	}

	// Tests included.
	for _, p := range listPackages(t, "-deps", "-test", "./...") {
		for _, banned := range bannedPackages {
			if hasPathPrefix(p.ImportPath, banned) {
				t.Errorf("the core module depends on %s: client-go and controller-runtime belong in examples/", p.ImportPath)
			}
		}
	}
}

func TestModuleRequirements(t *testing.T) {
	requireGo(t)
	var mod struct {
		Require []struct{ Path string }
	}
	if err := json.Unmarshal(goCommand(t, "mod", "edit", "-json"), &mod); err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	// The module graph by path: which modules each module's go.mod requires.
	edges := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(goCommand(t, "mod", "graph")))
	for sc.Scan() {
		from, to, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		from, _, _ = strings.Cut(from, "@")
		to, _, _ = strings.Cut(to, "@")
		edges[from] = append(edges[from], to)
	}
	allowedRoot := func(path string) bool {
		return slices.ContainsFunc(allowedModules, func(m string) bool { return hasPathPrefix(path, m) })
	}
	reachable := map[string]bool{}
	var queue []string
	for from, tos := range edges {
		for _, m := range append([]string{from}, tos...) {
			if allowedRoot(m) && !reachable[m] {
				reachable[m] = true
				queue = append(queue, m)
			}
		}
	}
	for len(queue) > 0 {
		m := queue[0]
		queue = queue[1:]
		for _, next := range edges[m] {
			if !reachable[next] {
				reachable[next] = true
				queue = append(queue, next)
			}
		}
	}
	for _, r := range mod.Require {
		if !allowedRoot(r.Path) && !reachable[r.Path] {
			t.Errorf("go.mod requires %s, which is not an allowed dependency (%s) nor pulled in by one",
				r.Path, strings.Join(allowedModules, ", "))
		}
	}
}
