package examples

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The programs must install with one `go install` — from a checkout, and from a tagged release
// as a user without the repository would. RELEASING.md gives the release steps; this test
// carries them out against a module proxy in a temporary directory (the file:// layout the go
// command reads), so what it checks is exactly what `go install …@vX.Y.Z` does, minus the
// network. It needs the go command, and the dependencies already in the module cache (a build
// of this module put them there) or a reachable proxy.

const releaseTestVersion = "v0.999.0" // never tagged for real

func TestInstallFromCheckout(t *testing.T) {
	if testing.Short() {
		t.Skip("installs two programs; skipped in -short mode")
	}
	goBin := goCommand(t)
	root := repoRoot(t)
	bin := t.TempDir()
	run(t, root, []string{"GOBIN=" + bin}, goBin, "install", "./examples/plan", "./examples/controller")
	for _, prog := range []string{"plan", "controller"} {
		out := run(t, root, nil, filepath.Join(bin, prog), "-version")
		if !strings.HasPrefix(out, prog+" ") {
			t.Errorf("%s -version = %q, want a line starting with %q", prog, out, prog+" ")
		}
	}
}

func TestInstallTaggedRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("installs two programs; skipped in -short mode")
	}
	goBin := goCommand(t)
	root := repoRoot(t)
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	upstream := strings.TrimSpace(run(t, root, nil, goBin, "env", "GOPROXY"))
	env := []string{
		"GOWORK=off", "GOFLAGS=", "GONOSUMDB=github.com/nodeplan",
		"GOPROXY=file://" + filepath.ToSlash(proxy) + "," + upstream,
	}

	// Step 1 of RELEASING.md: tag the core module. Here: publish it to the proxy.
	publish(t, proxy, "github.com/nodeplan/nodeplan", releaseTestVersion, root)

	// Step 2: on a release branch, the examples module requires that tag instead of replacing
	// it with the checkout, and is tidied against the published core.
	examples := filepath.Join(tmp, "examples")
	copyModule(t, filepath.Join(root, "examples"), examples)
	run(t, examples, env, goBin, "mod", "edit",
		"-dropreplace=github.com/nodeplan/nodeplan",
		"-require=github.com/nodeplan/nodeplan@"+releaseTestVersion)
	run(t, examples, env, goBin, "mod", "tidy")
	mod, err := os.ReadFile(filepath.Join(examples, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(mod, []byte("replace")) {
		t.Fatalf("the released examples/go.mod still has a replace directive, which go install refuses:\n%s", mod)
	}

	// Step 3: tag examples/vX.Y.Z. Here: publish it. Then install as a user would.
	publish(t, proxy, "github.com/nodeplan/nodeplan/examples", releaseTestVersion, examples)
	bin := filepath.Join(tmp, "bin")
	run(t, tmp, append(env, "GOBIN="+bin), goBin, "install",
		"github.com/nodeplan/nodeplan/examples/plan@"+releaseTestVersion,
		"github.com/nodeplan/nodeplan/examples/controller@"+releaseTestVersion)
	for _, prog := range []string{"plan", "controller"} {
		out := run(t, tmp, nil, filepath.Join(bin, prog), "-version")
		if want := prog + " " + releaseTestVersion + " "; !strings.HasPrefix(out, want) {
			t.Errorf("%s -version = %q, want a line starting with %q", prog, out, want)
		}
	}
}

func goCommand(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		if _, statErr := os.Stat(goBin); statErr != nil {
			t.Fatalf("no go command to install with: %v", err)
		}
	}
	return goBin
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s (in %s): %v\n%s", filepath.Base(name), strings.Join(args, " "), dir, err, stderr.String())
	}
	return string(out)
}

// moduleFiles lists the files of the module rooted at dir as the go command packs it: no
// nested modules, no VCS metadata, nothing under vendor.
func moduleFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			name := d.Name()
			if name == ".git" || name == "vendor" || strings.HasPrefix(name, ".") && name != "." {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func copyModule(t *testing.T, from, to string) {
	t.Helper()
	for _, rel := range moduleFiles(t, from) {
		b, err := os.ReadFile(filepath.Join(from, rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(to, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// publish writes module path@version, packed from dir, into a GOPROXY directory.
func publish(t *testing.T, proxy, path, version, dir string) {
	t.Helper()
	at := filepath.Join(proxy, filepath.FromSlash(path), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	for _, rel := range moduleFiles(t, dir) {
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create(path + "@" + version + "/" + filepath.ToSlash(rel))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)})
	for name, b := range map[string][]byte{
		version + ".mod": mod, version + ".zip": zipped.Bytes(), version + ".info": info, "list": []byte(version + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(at, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
