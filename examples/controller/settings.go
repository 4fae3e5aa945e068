package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

// settings are the in-cluster settings, named as Karpenter's chart names them. Each flag also
// reads an environment variable (Karpenter's name) when not given on the command line, so a
// Deployment sets them through env as Karpenter's does.
type settings struct {
	clusterEndpoint string
	logLevel        string
	qps             float64
	burst           int
	healthAddr      string
}

// envFlags maps flags to Karpenter's environment variables.
var envFlags = []struct{ flag, env string }{
	{"cluster-name", "CLUSTER_NAME"},
	{"cluster-endpoint", "CLUSTER_ENDPOINT"},
	{"interruption-queue", "INTERRUPTION_QUEUE"},
	{"log-level", "LOG_LEVEL"},
	{"kube-client-qps", "KUBE_CLIENT_QPS"},
	{"kube-client-burst", "KUBE_CLIENT_BURST"},
	{"metrics-addr", "METRICS_PORT"},
	{"health-probe-addr", "HEALTH_PROBE_PORT"},
	{"lease-namespace", "SYSTEM_NAMESPACE"},
}

func (s *settings) register(fs *flag.FlagSet) {
	fs.StringVar(&s.clusterEndpoint, "cluster-endpoint", "", "the API server URL nodes join (written into node bootstrap); empty means the client's own server URL")
	fs.StringVar(&s.logLevel, "log-level", "", "debug, info or error (default info; -v means debug)")
	// Karpenter's defaults: 200 requests/s, bursts of 300. client-go's own (5/10) throttle a
	// 1,000-node cluster's drains, patches and events to minutes.
	fs.Float64Var(&s.qps, "kube-client-qps", 200, "API requests per second")
	fs.IntVar(&s.burst, "kube-client-burst", 300, "API request burst")
	fs.StringVar(&s.healthAddr, "health-probe-addr", "", `serve /healthz and /readyz on this address (e.g. ":8081"); off when empty`)
}

// applyEnv sets every flag not given on the command line from its environment variable, if
// set. Port variables (METRICS_PORT, HEALTH_PROBE_PORT) become ":<port>".
func applyEnv(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, e := range envFlags {
		v := getenv(e.env)
		if v == "" || given[e.flag] || fs.Lookup(e.flag) == nil {
			continue
		}
		if portEnv(e.env) {
			v = ":" + v
		}
		if err := fs.Set(e.flag, v); err != nil {
			return fmt.Errorf("environment variable %s=%q (flag --%s): %w", e.env, getenv(e.env), e.flag, err)
		}
	}
	return nil
}

// portEnv reports whether a variable holds a port where its flag takes an address.
func portEnv(env string) bool { return env == "METRICS_PORT" || env == "HEALTH_PROBE_PORT" }

// inCluster reports whether the controller runs in a pod configured for a cluster: the
// kubelet's KUBERNETES_SERVICE_HOST is set and a cluster name is given. Then in-cluster
// configuration is the default; --kubeconfig is for running outside.
func inCluster(o options) bool {
	return o.kubeconfig == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != "" && o.clusterName != ""
}

// restConfig is the API client's configuration: --kubeconfig's, else the pod's service account
// (in-cluster), with the QPS and burst settings.
func restConfig(o options) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if o.kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", o.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", o.kubeconfig, err)
		}
	} else {
		cfg, err = rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster configuration: %w (outside a pod, give --kubeconfig)", err)
		}
	}
	if o.qps <= 0 || o.burst <= 0 {
		return nil, errors.New("--kube-client-qps and --kube-client-burst must be positive")
	}
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	return cfg, nil
}

// endpoint is the API server URL written into node bootstrap: --cluster-endpoint
// (CLUSTER_ENDPOINT), else the client's own server URL. In a pod the client's URL is the
// in-cluster Service address, which nodes outside the cluster network cannot reach.
func endpoint(o options, clientHost string) (string, error) {
	if o.clusterEndpoint != "" {
		return o.clusterEndpoint, nil
	}
	if o.kubeconfig == "" {
		return "", errors.New("--cluster-endpoint (CLUSTER_ENDPOINT) is required in a pod: the in-cluster Service address is not one nodes can join")
	}
	return clientHost, nil
}

// serveHealth serves /healthz and /readyz on addr until ctx ends.
func serveHealth(ctx context.Context, addr string, h *controller.Health) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("health probes: %w", err)
	}
	srv := &http.Server{Handler: h.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	return ln.Addr(), nil
}
