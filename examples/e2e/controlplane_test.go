package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The control plane is built from examples/e2e/k8s, a module outside the workspace that pins
// k8s.io/kubernetes (with its staging modules at the published versions nodeplan uses) and
// etcd. Binaries are kept in the user cache dir under a hash of that module, so only the first
// run compiles them.

const (
	buildBudgetEnv = "NODEPLAN_E2E_BUILD_TIMEOUT" // e.g. "30m"; default: what the test deadline leaves
	skipEnv        = "NODEPLAN_E2E"               // "0" skips the end-to-end test
)

// binaries are the control plane's programs.
type binaries struct{ etcd, apiserver, scheduler string }

var (
	buildOnce sync.Once
	built     binaries
	buildErr  error
)

// buildControlPlane builds (or finds cached) etcd, kube-apiserver and kube-scheduler. It skips
// the test, saying why, when they cannot be had in the time the test has.
func buildControlPlane(t *testing.T) binaries {
	t.Helper()
	if os.Getenv(skipEnv) == "0" {
		t.Skipf("end-to-end test skipped: %s=0", skipEnv)
	}
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	buildOnce.Do(func() { built, buildErr = build(t) })
	if buildErr != nil {
		t.Skipf("end-to-end test skipped: the control plane could not be built: %v", buildErr)
	}
	return built
}

func build(t *testing.T) (binaries, error) {
	src, err := filepath.Abs("k8s")
	if err != nil {
		return binaries{}, err
	}
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum", "etcd/main.go"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return binaries{}, err
		}
		h.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "nodeplan-e2e", hex.EncodeToString(h.Sum(nil))[:16])
	bins := binaries{etcd: filepath.Join(dir, "etcd"), apiserver: filepath.Join(dir, "kube-apiserver"),
		scheduler: filepath.Join(dir, "kube-scheduler")}
	if exists(bins.etcd) && exists(bins.apiserver) && exists(bins.scheduler) {
		return bins, nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		if !exists(goBin) {
			return binaries{}, errors.New("no go command to build with")
		}
	}
	budget := 25 * time.Minute
	if d, ok := t.Deadline(); ok {
		budget = time.Until(d) - 4*time.Minute // leave time for the scenarios
	}
	if v := os.Getenv(buildBudgetEnv); v != "" {
		if budget, err = time.ParseDuration(v); err != nil {
			return binaries{}, fmt.Errorf("%s: %w", buildBudgetEnv, err)
		}
	}
	if budget <= time.Minute {
		return binaries{}, fmt.Errorf("only %v left before the test deadline; run with -timeout 40m (the first build takes about 15 minutes on 2 cores and is cached after)", budget)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return binaries{}, err
	}
	for _, b := range []struct{ out, pkg string }{
		{bins.etcd, "./etcd"},
		{bins.scheduler, "k8s.io/kubernetes/cmd/kube-scheduler"},
		{bins.apiserver, "k8s.io/kubernetes/cmd/kube-apiserver"},
	} {
		start := time.Now()
		cmd := exec.CommandContext(ctx, goBin, "build", "-o", b.out+".tmp", b.pkg)
		cmd.Dir = src
		// Outside the workspace, with the module's own requirements; no -race (the control plane
		// is not under test, and would be many times slower).
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly", "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			return binaries{}, fmt.Errorf("building %s did not finish within %v (compiled packages are cached, so a rerun continues; set %s to allow longer)", b.pkg, budget, buildBudgetEnv)
		}
		if err != nil {
			return binaries{}, fmt.Errorf("go build %s: %v\n%s", b.pkg, err, out)
		}
		if err := os.Rename(b.out+".tmp", b.out); err != nil {
			return binaries{}, err
		}
		t.Logf("built %s in %v", b.pkg, time.Since(start).Round(time.Second))
	}
	return bins, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// process runs a control-plane program until the test ends, with its output in the test log
// on failure.
func process(t *testing.T, name, bin string, args ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	out := &lockedBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s output (tail):\n%s", name, tail(out.String(), 40))
		}
	})
	return cmd, out
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// controlPlane is a running etcd, kube-apiserver and kube-scheduler.
type controlPlane struct {
	Config *rest.Config
	Client kubernetes.Interface
}

const adminToken = "nodeplan-e2e-admin-token"

// startControlPlane starts etcd, kube-apiserver (AlwaysAllow, a static admin token, no
// ServiceAccount admission since no controller-manager creates the default accounts) and
// kube-scheduler, and waits until the API server is ready.
func startControlPlane(t *testing.T, bins binaries) *controlPlane {
	t.Helper()
	dir := t.TempDir()
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	_, etcdOut := process(t, "etcd", bins.etcd, "--data-dir", filepath.Join(dir, "etcd"), "--client-url", etcdURL, "--peer-url", peerURL)
	waitFor(t, time.Minute, "etcd ready", func() bool { return strings.Contains(etcdOut.String(), "ready") })

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "sa.key")
	pubFile := filepath.Join(dir, "sa.pub")
	writePEM(t, keyFile, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key))
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, pubFile, "PUBLIC KEY", pub)
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(adminToken+`,admin,admin,"system:masters"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	process(t, "kube-apiserver", bins.apiserver,
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1",
		"--secure-port", fmt.Sprint(port),
		"--cert-dir", filepath.Join(dir, "certs"),
		"--token-auth-file", tokens,
		"--authorization-mode", "AlwaysAllow",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", pubFile,
		"--service-account-signing-key-file", keyFile,
		"--service-cluster-ip-range", "10.96.0.0/16",
		"--disable-admission-plugins", "ServiceAccount",
		"--enable-priority-and-fairness=false",
	)
	cfg := &rest.Config{
		Host:            fmt.Sprintf("https://127.0.0.1:%d", port),
		BearerToken:     adminToken,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             200,
		Burst:           400,
	}
	httpc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	waitFor(t, 2*time.Minute, "kube-apiserver ready", func() bool {
		req, _ := http.NewRequest(http.MethodGet, cfg.Host+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := httpc.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode == http.StatusOK
	})
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: %q}
contexts:
- name: e2e
  context: {cluster: e2e, user: admin}
current-context: e2e
`, cfg.Host, adminToken)), 0o600); err != nil {
		t.Fatal(err)
	}
	process(t, "kube-scheduler", bins.scheduler, "--kubeconfig", kubeconfig, "--leader-elect=false",
		"--secure-port", fmt.Sprint(freePort(t)), "--bind-address", "127.0.0.1")
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &controlPlane{Config: cfg, Client: client}
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	if err := pem.Encode(w, &pem.Block{Type: typ, Bytes: der}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, max time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(max)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, max)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
