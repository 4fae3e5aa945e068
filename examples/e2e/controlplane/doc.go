// Package controlplane runs a real etcd, kube-apiserver and kube-scheduler inside the calling
// process, from go.etcd.io/etcd/server/v3/embed and k8s.io/kubernetes' own command packages
// (cmd/kube-apiserver/app, cmd/kube-scheduler/app), as Kubernetes' integration tests do.
//
// Because they are packages, not programs built at run time, `go test`'s compile step builds
// them with the test binary (no -timeout applies to it) and Go's build cache keeps them: only
// the first build on a machine pays for compiling Kubernetes.
//
// It does not run a controller-manager or kubelets: nothing creates ServiceAccounts, garbage
// collects, or runs pods. Tests create Nodes and pod status themselves (examples/internal/sim).
// Authorization is Node,RBAC as in a real cluster; Start's config is an admin token (group
// system:masters) on a loopback port, and ServiceAccount tokens from the TokenRequest API
// authenticate their accounts, so a client can run with exactly the rights a Role grants.
//
// # Usage
//
//	func TestMain(m *testing.M) { controlplane.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		cfg := controlplane.Shared(t) // skips only with -short or NODEPLAN_E2E=0
//		client := kubernetes.NewForConfigOrDie(cfg)
//		...
//	}
//
// Start starts a control plane outside tests (at most one at a time a process) and returns its
// config and a stop function.
package controlplane
