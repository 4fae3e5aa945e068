// Package e2e is the example controller's end-to-end test: a real kube-apiserver, etcd and
// kube-scheduler, built from their Go modules (see k8s/go.mod), with the in-memory cloud and
// simulated kubelets registering Nodes for its instances. It has no code outside its tests.
//
// The first run compiles the control plane (about 15 minutes on 2 cores; the binaries are then
// kept in the user cache directory). The test skips, saying why, when the binaries cannot be
// built within the test's deadline; a rerun continues from the compiled packages.
//
// # Usage
//
//	go test -timeout 40m ./examples/e2e/   # first run: builds the control plane
//	go test ./examples/e2e/                # later runs: about two minutes
//	NODEPLAN_E2E=0 go test ./examples/e2e/...  # skip it
//
// examples/e2e is a module of its own (k8s.io/kubernetes and its staging modules stay out of
// the examples module), so `./examples/...` does not reach it: the README's test command names
// `./examples/e2e/...` too.
package e2e
