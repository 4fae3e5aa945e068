package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user the images run as: distroless's "nonroot", which the Deployments' securityContext
// (runAsUser 65532) also names.
const (
	uid     = 65532
	user    = "65532:65532"
	refName = "org.opencontainers.image.ref.name"
)

type options struct {
	src       string // the examples module
	programs  []string
	platforms []v1.Platform
	tag       string
	caCerts   string // "" finds the build machine's
	log       io.Writer
}

// programImage is one program's multi-arch image.
type programImage struct {
	program string
	tag     string
	index   v1.ImageIndex
}

// caPaths are where Linux distributions keep the CA bundle (those crypto/x509 reads).
var caPaths = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Alpine
	"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL
	"/etc/ssl/ca-bundle.pem",                            // openSUSE
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS, RHEL 7
	"/etc/ssl/cert.pem",                                 // macOS, Alpine
}

func parsePlatforms(s string) ([]v1.Platform, error) {
	var out []v1.Platform
	for _, p := range strings.Split(s, ",") {
		os, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || os != "linux" || arch == "" || strings.Contains(arch, "/") {
			return nil, fmt.Errorf("platform %q: want linux/<arch>, e.g. linux/amd64", p)
		}
		out = append(out, v1.Platform{OS: os, Architecture: arch})
	}
	return out, nil
}

// build builds every program's image.
func build(ctx context.Context, o options) ([]programImage, error) {
	certs, err := readCACerts(o.caCerts)
	if err != nil {
		return nil, err
	}
	base, err := baseLayer(certs)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "nodeplan-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var out []programImage
	for _, prog := range o.programs {
		if prog == "" || strings.ContainsAny(prog, "/.") {
			return nil, fmt.Errorf("program %q: want a directory name of the examples module (controller, plan)", prog)
		}
		idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
		for _, p := range o.platforms {
			bin := filepath.Join(tmp, prog+"-"+p.OS+"-"+p.Architecture)
			if err := goBuild(ctx, o, prog, p, bin); err != nil {
				return nil, err
			}
			img, err := image(base, prog, bin, p, o.tag)
			if err != nil {
				return nil, fmt.Errorf("%s %s/%s: %w", prog, p.OS, p.Architecture, err)
			}
			plat := p
			idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &plat}})
		}
		out = append(out, programImage{program: prog, tag: o.tag, index: idx})
	}
	return out, nil
}

// goBuild builds a static binary of the program for the platform.
func goBuild(ctx context.Context, o options, prog string, p v1.Platform, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./"+prog)
	cmd.Dir = o.src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	cmd.Stdout, cmd.Stderr = o.log, o.log
	fmt.Fprintf(o.log, "building %s for %s/%s\n", prog, p.OS, p.Architecture)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./%s for %s/%s in %s: %w", prog, p.OS, p.Architecture, o.src, err)
	}
	return nil
}

// readCACerts reads a PEM bundle, the given file or the first of caPaths, and checks it holds
// certificates.
func readCACerts(path string) ([]byte, error) {
	paths := caPaths
	if path != "" {
		paths = []string{path}
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) && path == "" {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("CA certificates: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("CA certificates %s: no PEM certificate in it", p)
		}
		return b, nil
	}
	return nil, fmt.Errorf("CA certificates: none of %v exists; give -ca-certs FILE", caPaths)
}

// entry is one file or directory of a layer.
type entry struct {
	name string
	mode int64
	uid  int
	body []byte
	dir  bool
}

// tarLayer makes a layer of the entries, owned as given, all dated the epoch so that the same
// inputs give the same digest.
func tarLayer(entries []entry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag, h.Name = tar.TypeDir, e.name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// baseLayer is the minimal base: the users, the CA bundle, a home and /tmp.
func baseLayer(certs []byte) (v1.Layer, error) {
	return tarLayer([]entry{
		{name: "etc", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, body: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, body: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/ssl", mode: 0o755, dir: true},
		{name: "etc/ssl/certs", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, body: certs},
		{name: "home", mode: 0o755, dir: true},
		{name: "home/nonroot", mode: 0o700, uid: uid, dir: true},
		{name: "tmp", mode: 0o1777, dir: true},
	})
}

// image is one platform's image of a program: the base and the binary at /<program>.
func image(base v1.Layer, prog, bin string, p v1.Platform, tag string) (v1.Image, error) {
	body, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	layer, err := tarLayer([]entry{{name: prog, mode: 0o755, body: body}})
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, base, layer); err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cf.Config.User = user
	cf.Config.Entrypoint = []string{"/" + prog}
	cf.Config.WorkingDir = "/home/nonroot"
	cf.Config.Env = []string{"HOME=/home/nonroot", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":   "nodeplan " + prog,
		"org.opencontainers.image.source":  "https://github.com/nodeplan/nodeplan",
		"org.opencontainers.image.version": tag,
	}
	return mutate.ConfigFile(img, cf)
}

// writeLayout adds every image to an OCI layout at dir (created when missing), each index
// named <program>:<tag>.
func writeLayout(dir string, images []programImage) error {
	p, err := layout.FromPath(dir)
	if err != nil {
		if p, err = layout.Write(dir, empty.Index); err != nil {
			return fmt.Errorf("OCI layout %s: %w", dir, err)
		}
	}
	for _, img := range images {
		if err := p.AppendIndex(img.index, layout.WithAnnotations(map[string]string{refName: img.program + ":" + img.tag})); err != nil {
			return fmt.Errorf("OCI layout %s: %s: %w", dir, img.program, err)
		}
	}
	return nil
}

// writeArchive writes an OCI layout as a tar file, entries sorted.
func writeArchive(file string, images []programImage) error {
	dir, err := os.MkdirTemp("", "nodeplan-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := writeLayout(dir, images); err != nil {
		return err
	}
	var files []string
	if err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, path)
		}
		return err
	}); err != nil {
		return err
	}
	sort.Strings(files)
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, path := range files {
		body, err := os.ReadFile(path)
		if err != nil {
			f.Close()
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			f.Close()
			return err
		}
		if _, err := tw.Write(body); err != nil {
			f.Close()
			return err
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// pushImage pushes an image index to repo/<program>:<tag>.
func pushImage(ctx context.Context, repo string, img programImage) (string, v1.Hash, error) {
	ref, err := name.ParseReference(strings.TrimSuffix(repo, "/") + "/" + img.program + ":" + img.tag)
	if err != nil {
		return "", v1.Hash{}, fmt.Errorf("-push %s: %w", repo, err)
	}
	if err := remote.WriteIndex(ref, img.index, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return "", v1.Hash{}, fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := img.index.Digest()
	return ref.String(), d, err
}
