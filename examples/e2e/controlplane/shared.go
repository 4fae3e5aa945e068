package controlplane

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// SkipEnv names the environment variable that skips the tests using the shared control plane
// when set to "0".
const SkipEnv = "NODEPLAN_E2E"

var shared struct {
	once sync.Once
	cfg  *rest.Config
	stop func()
	err  error
}

// Shared returns a config for the test binary's control plane, starting it on first use; every
// test of the binary shares it (namespaces or distinct names keep tests apart). It skips t only
// when asked to: with -short or NODEPLAN_E2E=0. Use Main in TestMain so the control plane is
// stopped and its files removed when the tests end.
func Shared(t testing.TB) *rest.Config {
	t.Helper()
	if os.Getenv(SkipEnv) == "0" {
		t.Skipf("control-plane test skipped: %s=0", SkipEnv)
	}
	if testing.Short() {
		t.Skip("control-plane test skipped in -short mode")
	}
	shared.once.Do(func() {
		shared.cfg, shared.stop, shared.err = Start(context.Background())
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("control plane log (tail):\n%s", LogTail(60))
		}
	})
	return rest.CopyConfig(shared.cfg)
}

// Main runs the tests and then stops the shared control plane if a test started it. Call it
// from TestMain: func TestMain(m *testing.M) { controlplane.Main(m) }.
//
// It does not change the test deadline: go test kills a binary a minute after the -timeout it
// was given, whatever the binary does with its own flag, so a slow run needs -timeout on the
// command line (the README's test command sets 30m).
func Main(m *testing.M) {
	code := m.Run()
	shared.once.Do(func() {}) // no test asked for it: nothing to stop, and no later start
	if shared.stop != nil {
		shared.stop()
	}
	if code != 0 {
		fmt.Fprintln(os.Stderr, "controlplane: tests failed; the control plane's log tail is in each failed test's output")
	}
	os.Exit(code)
}
