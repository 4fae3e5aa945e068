package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestBuild builds both programs for amd64 and arm64 as a release does, writes the OCI layout,
// the archive, and pushes to a registry (go-containerregistry's in-memory one), then reads each
// back: an OCI index per program with both platforms, each image running the static binary as
// 65532 from /<program> on the built base; the amd64 binary, taken out of its layer, runs
// -version here, and the arm64 one is an arm64 ELF Go build without cgo (and runs -version
// too where qemu-aarch64 is on PATH).
func TestBuild(t *testing.T) {
	// Four release builds (-trimpath, two architectures) share nothing with the ordinary build
	// cache: the first run compiles client-go and the AWS SDK twice more, tens of minutes on 2
	// cores. So it runs on demand: NODEPLAN_IMAGE_TEST=1 (RELEASING.md step 4 runs it);
	// TestBuildSmall runs the same path on a small program every time.
	if testing.Short() || os.Getenv("NODEPLAN_IMAGE_TEST") != "1" {
		t.Skip("builds four release binaries; set NODEPLAN_IMAGE_TEST=1 to run it")
	}
	testBuild(t, "../../examples", "controller", "plan")
}

// TestBuildSmall is TestBuild on testdata/src's one small program: the same builder, flags,
// platforms and checks, in the time two standard-library builds take (about a minute each on
// a loaded 2-core machine the first time, seconds once cached).
func TestBuildSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles the standard library for two platforms")
	}
	// testdata/src is in no go.work.
	t.Setenv("GOWORK", "off")
	testBuild(t, "testdata/src", "hello")
}

// testBuild runs the builder on programs of the module at src, to every output, and checks
// what it wrote.
func testBuild(t *testing.T, src string, programs ...string) {
	ctx := context.Background()
	dir := t.TempDir()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	repo := u.Host + "/nodeplan"
	var stdout, stderr bytes.Buffer
	args := []string{"-src", src, "-programs", strings.Join(programs, ","), "-tag", "v0.0.0-test",
		"-layout", filepath.Join(dir, "oci"), "-tar", filepath.Join(dir, "oci.tar"), "-push", repo}
	if err := run(ctx, args, &stdout, &stderr); err != nil {
		t.Fatalf("image %q: %v\n%s", args, err, stderr.String())
	}

	p, err := layout.FromPath(filepath.Join(dir, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	root, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, d := range im.Manifests {
		refs = append(refs, d.Annotations[refName])
	}
	var want []string
	for _, p := range programs {
		want = append(want, p+":v0.0.0-test")
	}
	if d := cmp.Diff(want, refs); d != "" {
		t.Errorf("layout's images (-want +got):\n%s", d)
	}
	for _, d := range im.Manifests {
		prog, _, _ := strings.Cut(d.Annotations[refName], ":")
		t.Run(prog, func(t *testing.T) {
			if d.MediaType != types.OCIImageIndex {
				t.Errorf("media type %s, want an OCI image index", d.MediaType)
			}
			idx, err := root.ImageIndex(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			checkIndex(t, prog, idx)
			// The pushed index is the same one, digest for digest.
			ref, _ := name.ParseReference(repo + "/" + prog + ":v0.0.0-test")
			pushed, err := remote.Index(ref, remote.WithContext(ctx))
			if err != nil {
				t.Fatalf("read back %s: %v", ref, err)
			}
			if pd, _ := pushed.Digest(); pd != d.Digest {
				t.Errorf("pushed %s has digest %s, the layout %s", ref, pd, d.Digest)
			}
			if !strings.Contains(stdout.String(), "pushed "+ref.String()+"@"+d.Digest.String()) {
				t.Errorf("output %q does not report the push of %s", stdout.String(), ref)
			}
		})
	}
	// The archive is the layout, as a tar.
	f, err := os.Open(filepath.Join(dir, "oci.tar"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	for _, want := range []string{"index.json", "oci-layout"} {
		if !slices.Contains(names, want) {
			t.Errorf("archive lacks %s (has %d entries)", want, len(names))
		}
	}
}

func checkIndex(t *testing.T, prog string, idx v1.ImageIndex) {
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var archs []string
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s has no platform", d.Digest)
		}
		archs = append(archs, d.Platform.OS+"/"+d.Platform.Architecture)
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
			t.Errorf("%s: media type %s, want an OCI manifest", d.Platform, mt)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != d.Platform.OS || cf.Architecture != d.Platform.Architecture {
			t.Errorf("config says %s/%s under platform %s", cf.OS, cf.Architecture, d.Platform)
		}
		if cf.Config.User != "65532:65532" {
			t.Errorf("%s: user %q, want 65532:65532", d.Platform, cf.Config.User)
		}
		if !cmp.Equal(cf.Config.Entrypoint, []string{"/" + prog}) {
			t.Errorf("%s: entrypoint %q, want [/%s]", d.Platform, cf.Config.Entrypoint, prog)
		}
		files := imageFiles(t, img)
		if pw := string(files["etc/passwd"].body); !strings.Contains(pw, "nonroot:x:65532:65532:") {
			t.Errorf("%s: /etc/passwd %q lacks the user 65532", d.Platform, pw)
		}
		if !bytes.Contains(files["etc/ssl/certs/ca-certificates.crt"].body, []byte("BEGIN CERTIFICATE")) {
			t.Errorf("%s: no CA certificates", d.Platform)
		}
		if h := files["home/nonroot/"]; h.uid != 65532 {
			t.Errorf("%s: /home/nonroot owned by %d, want 65532", d.Platform, h.uid)
		}
		bin := files[prog]
		if bin.mode&0o111 == 0 || len(bin.body) == 0 {
			t.Fatalf("%s: /%s mode %o, %d bytes", d.Platform, prog, bin.mode, len(bin.body))
		}
		path := filepath.Join(t.TempDir(), prog)
		if err := os.WriteFile(path, bin.body, 0o755); err != nil {
			t.Fatal(err)
		}
		checkStatic(t, path, d.Platform.Architecture)
		if cmd, how := runner(d.Platform.Architecture, path); cmd != nil {
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.HasPrefix(string(out), prog+" ") {
				t.Errorf("%s -version (from the %s image, %s): %q, %v", prog, d.Platform, how, out, err)
			}
		} else {
			t.Logf("%s: %s", d.Platform, how)
		}
	}
	if d := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, archs); d != "" {
		t.Errorf("platforms (-want +got):\n%s", d)
	}
}

// runner is the command that runs a binary of arch with -version here: directly on its own
// architecture, through qemu user emulation on another, or nil (saying why) without it.
func runner(arch, path string) (*exec.Cmd, string) {
	if runtime.GOOS != "linux" {
		return nil, "not run: the build machine is not linux"
	}
	if arch == runtime.GOARCH {
		return exec.Command(path, "-version"), "run natively"
	}
	qemu := map[string]string{"arm64": "aarch64", "amd64": "x86_64"}[arch]
	for _, q := range []string{"qemu-" + qemu, "qemu-" + qemu + "-static"} {
		if p, err := exec.LookPath(q); err == nil {
			return exec.Command(p, path, "-version"), "run with " + q
		}
	}
	return nil, "not run: no qemu-" + qemu + " on PATH (its ELF header checked instead)"
}

type file struct {
	body []byte
	mode int64
	uid  int
}

// imageFiles flattens the image's layers into name → file.
func imageFiles(t *testing.T, img v1.Image) map[string]file {
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]file{}
	for _, l := range layers {
		if mt, _ := l.MediaType(); mt != types.OCILayer {
			t.Errorf("layer media type %s, want %s", mt, types.OCILayer)
		}
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(tr)
			out[h.Name] = file{body: b, mode: h.Mode, uid: h.Uid}
		}
		rc.Close()
	}
	return out
}

// checkStatic: an ELF for the architecture with no program interpreter (a static binary), built
// by Go with cgo off.
func checkStatic(t *testing.T, path, arch string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if f.Machine != want {
		t.Errorf("%s: ELF machine %v, want %v", arch, f.Machine, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s: has a program interpreter: dynamically linked", arch)
		}
	}
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: build info: %v", arch, err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["GOARCH"] != arch || settings["CGO_ENABLED"] != "0" || settings["GOOS"] != "linux" {
		t.Errorf("%s: built with GOOS=%s GOARCH=%s CGO_ENABLED=%s", arch, settings["GOOS"], settings["GOARCH"], settings["CGO_ENABLED"])
	}
}

func TestParsePlatforms(t *testing.T) {
	if _, err := parsePlatforms("linux/amd64,windows/amd64"); err == nil || !strings.Contains(err.Error(), "windows/amd64") {
		t.Errorf("parsePlatforms(windows) = %v, want an error naming it", err)
	}
	got, err := parsePlatforms("linux/amd64, linux/arm64")
	if err != nil || len(got) != 2 || got[1].Architecture != "arm64" {
		t.Errorf("parsePlatforms = %v, %v", got, err)
	}
}
