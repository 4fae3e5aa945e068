package e2e

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodeplan/nodeplan/examples/e2e/controlplane"
)

func TestMain(m *testing.M) { controlplane.Main(m) }

// controlPlane is the test binary's etcd, kube-apiserver and kube-scheduler, running in-process.
type controlPlane struct {
	Config *rest.Config
	Client kubernetes.Interface
}

// startControlPlane returns the shared control plane, starting it on first use. It skips the
// test only with -short or NODEPLAN_E2E=0.
func startControlPlane(t *testing.T) *controlPlane {
	t.Helper()
	cfg := controlplane.Shared(t)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &controlPlane{Config: cfg, Client: client}
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

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
