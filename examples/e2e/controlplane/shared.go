package controlplane

import (
	"context"
	"flag"
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

// defaultTimeout is the -timeout go test passes when none is given.
const defaultTimeout = "10m0s"

// raisedTimeout replaces the default: a race-instrumented API server, on two cores shared with
// the rest of the suite's test binaries, can take most of ten minutes for a long scenario list.
const raisedTimeout = "30m"

// Main runs the tests and then stops the shared control plane if a test started it. Call it
// from TestMain: func TestMain(m *testing.M) { controlplane.Main(m) }.
//
// A deadline of exactly go test's default 10m is raised to 30m (any other -timeout, including
// 0, is kept): the alarm still catches a hang, and a loaded machine does not fail a slow run.
func Main(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.timeout"); f != nil && f.Value.String() == defaultTimeout {
		_ = f.Value.Set(raisedTimeout) // a valid duration for a duration flag
	}
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
