package controlplane

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/embed"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	apiserveroptions "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	scheduleroptions "k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// adminToken authenticates the control plane's admin clients (the tests', kube-scheduler's) as a
// member of system:masters, which RBAC lets do anything. It only ever guards a loopback port.
const adminToken = "nodeplan-e2e-admin-token"

// Client rates: kube-scheduler's default 50 QPS would throttle binding hundreds of pods, and
// the test's own clients create and watch as many.
const (
	clientQPS   = 1000
	clientBurst = 2000
)

// running guards the process-wide state the control plane's packages keep (feature gates,
// metrics registries, klog's output): one control plane a process at a time.
var running sync.Mutex

// Start starts etcd, kube-apiserver and kube-scheduler in this process and returns once the
// API server is ready. The returned config authenticates as a cluster admin; copy it before
// changing it. stop shuts the three down and removes their files; Start fails if another
// control plane started by it is still running in the process. Their logs go to LogTail.
//
// The API server authorizes as a real cluster does (Node,RBAC, with the default roles and
// bindings it creates at start-up); the returned config is a static admin token in
// system:masters. ServiceAccount tokens (TokenRequest) authenticate their accounts, so a test can
// run a client with exactly a Role's rights. The ServiceAccount admission plugin is off (no
// controller-manager creates the default accounts). The scheduler runs without leader election
// and without a serving port, as the admin.
func Start(ctx context.Context) (cfg *rest.Config, stop func(), err error) {
	if !running.TryLock() {
		return nil, nil, errors.New("controlplane: a control plane is already running in this process")
	}
	captureLogs()
	dir, err := os.MkdirTemp("", "nodeplan-controlplane-")
	if err != nil {
		running.Unlock()
		return nil, nil, fmt.Errorf("controlplane: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	var stops []func()
	stop = func() {
		cancel()
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		_ = os.RemoveAll(dir)
		running.Unlock()
	}
	defer func() {
		if err != nil {
			stop()
			cfg, stop = nil, nil
		}
	}()

	etcdURL, stopEtcd, err := startEtcd(filepath.Join(dir, "etcd"))
	if err != nil {
		return nil, nil, err
	}
	stops = append(stops, stopEtcd)

	cfg, stopAPI, err := startAPIServer(ctx, dir, etcdURL)
	if err != nil {
		return nil, nil, err
	}
	stops = append(stops, stopAPI)

	stopSched, err := startScheduler(ctx, dir, cfg)
	if err != nil {
		return nil, nil, err
	}
	stops = append(stops, stopSched)
	return rest.CopyConfig(cfg), stop, nil
}

// startEtcd runs a single-member etcd on loopback ports.
func startEtcd(dir string) (clientURL string, stop func(), err error) {
	client, err := freeLoopbackURL()
	if err != nil {
		return "", nil, err
	}
	peer, err := freeLoopbackURL()
	if err != nil {
		return "", nil, err
	}
	c := embed.NewConfig()
	c.Dir = dir
	c.ListenClientUrls, c.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	c.ListenPeerUrls, c.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	c.InitialCluster = c.Name + "=" + peer.String()
	c.ZapLoggerBuilder = embed.NewZapLoggerBuilder(etcdLogger())
	e, err := embed.StartEtcd(c)
	if err != nil {
		return "", nil, fmt.Errorf("controlplane: starting etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return "", nil, fmt.Errorf("controlplane: etcd: %w", err)
	case <-time.After(time.Minute):
		e.Close()
		return "", nil, errors.New("controlplane: etcd not ready within a minute")
	}
	return client.String(), e.Close, nil
}

// startAPIServer runs kube-apiserver as its command would with the flags below, on a loopback
// listener it binds first (no port race).
func startAPIServer(ctx context.Context, dir, etcdURL string) (*rest.Config, func(), error) {
	keyFile := filepath.Join(dir, "sa.key")
	if err := writeServiceAccountKey(keyFile); err != nil {
		return nil, nil, err
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(adminToken+`,admin,admin,"system:masters"`+"\n"), 0o600); err != nil {
		return nil, nil, fmt.Errorf("controlplane: %w", err)
	}
	s := apiserveroptions.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse([]string{
		"--etcd-servers=" + etcdURL,
		"--cert-dir=" + filepath.Join(dir, "certs"),
		"--token-auth-file=" + tokens,
		"--authorization-mode=Node,RBAC",
		"--enable-bootstrap-token-auth", // kubeadm joins: tokens minted by the controller authenticate
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + keyFile,
		"--service-account-signing-key-file=" + keyFile,
		"--service-cluster-ip-range=10.96.0.0/16",
		"--disable-admission-plugins=ServiceAccount",
		"--enable-priority-and-fairness=false",
		// The loopback address cannot be advertised as the kubernetes Service's endpoint.
		"--endpoint-reconciler-type=none",
	}); err != nil {
		return nil, nil, fmt.Errorf("controlplane: kube-apiserver flags: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("controlplane: %w", err)
	}
	// The options belong to the server once it runs (it rewrites them), so the port is read here.
	port := l.Addr().(*net.TCPAddr).Port
	s.SecureServing.Listener = l
	s.SecureServing.BindAddress = net.IPv4(127, 0, 0, 1)
	s.SecureServing.BindPort = port
	s.SecureServing.ExternalAddress = s.SecureServing.BindAddress
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		l.Close()
		return nil, nil, fmt.Errorf("controlplane: kube-apiserver: %w", err)
	}
	completed, err := s.Complete(ctx)
	if err != nil {
		l.Close()
		return nil, nil, fmt.Errorf("controlplane: kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) > 0 {
		l.Close()
		return nil, nil, fmt.Errorf("controlplane: kube-apiserver options: %w", errors.Join(errs...))
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- apiserver.Run(ctx, completed) }()
	stop := func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
	}

	cfg := &rest.Config{
		Host:            fmt.Sprintf("https://127.0.0.1:%d", port),
		BearerToken:     adminToken,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             clientQPS,
		Burst:           clientBurst,
	}
	if err := waitReady(ctx, cfg, done); err != nil {
		stop()
		return nil, nil, err
	}
	return cfg, stop, nil
}

// waitReady waits for /readyz and for the default namespace, which the API server creates
// after it reports ready.
func waitReady(ctx context.Context, cfg *rest.Config, done <-chan error) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	var last error
	for {
		status := 0
		res := client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status)
		last = res.Error()
		if status == 200 {
			_, last = client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
			if last == nil {
				return nil
			}
		}
		select {
		case err := <-done:
			return fmt.Errorf("controlplane: kube-apiserver stopped: %v\n%s", err, LogTail(40))
		case <-ctx.Done():
			return fmt.Errorf("controlplane: kube-apiserver: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("controlplane: kube-apiserver not ready within 3 minutes (last: %v)\n%s", last, LogTail(40))
		}
	}
}

// startScheduler runs kube-scheduler as its command would with the flags below.
func startScheduler(ctx context.Context, dir string, cfg *rest.Config) (func(), error) {
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, cfg); err != nil {
		return nil, err
	}
	opts := scheduleroptions.NewOptions()
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse([]string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		fmt.Sprintf("--kube-api-qps=%d", clientQPS),
		fmt.Sprintf("--kube-api-burst=%d", clientBurst),
	}); err != nil {
		return nil, fmt.Errorf("controlplane: kube-scheduler flags: %w", err)
	}
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, fmt.Errorf("controlplane: kube-scheduler: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	cc, sched, err := scheduler.Setup(ctx, opts)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("controlplane: kube-scheduler: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := scheduler.Run(ctx, cc, sched); err != nil && ctx.Err() == nil {
			klog.ErrorS(err, "kube-scheduler stopped")
		}
	}()
	return func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
	}, nil
}

func writeServiceAccountKey(path string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	return nil
}

func writeKubeconfig(path string, cfg *rest.Config) error {
	b := fmt.Appendf(nil, `apiVersion: v1
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
`, cfg.Host, cfg.BearerToken)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	return nil
}

// freeLoopbackURL returns an http URL on a loopback port that was free a moment ago; etcd
// binds its own listeners from URLs.
func freeLoopbackURL() (*url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("controlplane: %w", err)
	}
	defer l.Close()
	return &url.URL{Scheme: "http", Host: l.Addr().String()}, nil
}
