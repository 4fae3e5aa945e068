// Package e2e is the example controller's end-to-end test: a real etcd, kube-apiserver and
// kube-scheduler (package controlplane starts them inside the test binary), with the in-memory
// cloud and simulated kubelets registering Nodes for its instances. It has no code outside its
// tests and the controlplane package.
//
// # Scenarios
//
//   - TestEndToEnd: the in-memory cloud, NodePools from a list: launch, consolidation, spot
//     interruption, ICE fallback, a restart mid-launch, leader election.
//   - The "world" tests (world_test.go) run the controller as `controller --kubeconfig` does:
//     Karpenter's CRDs installed, NodePools and EC2NodeClasses read from the API server, the
//     EC2 provider on the real AWS SDK against an ec2test endpoint, kube-controller-manager's
//     PodDisruptionBudget controller keeping PDB status, simulated kubelets registering Nodes.
//     TestInflateLab (the seeds' lab applied unchanged, scaled 0 → 5 and watched through
//     Launched, Registered, Initialized, Ready; `delete node` and `delete nodeclaim` drained
//     under a PDB before the instance goes; an invalid NodePool edit; a restart between
//     Launched and Registered), TestNodePoolFeatures (a static pool; a template edit drifting
//     the pool's nodes under a budget), TestCapacityBufferKeepsRoom (a CapacityBuffer's room kept
//     free), TestAdoptKarpenterCluster (nodes made as Karpenter makes them, taken over with
//     Adopt).
//   - The kwok tests (kwok_test.go, kwok_command_test.go): the kwok provider (examples/kwok),
//     whose instances are Node objects and whose kubelets it plays, with no simulated cloud.
//     TestKwokProvider (a launch's Node, Ready, a bound pod run, Delete under the termination
//     finalizer), TestKwokController (scale 0 → 5 → `delete node` → 0 with the controller
//     in-process), TestKwokControllerCommand (the controller program built and run with
//     --kubeconfig --provider kwok against the lab's NodePool applied to the API server).
//   - TestInstall and TestShadowInstall (install_test.go, install_shadow_test.go): nodeplan
//     as shipped — the kustomize bases and the Helm charts, the charts as deploy/charts'
//     TestGolden renders them into deploy/charts/testdata (Helm stays out of this module) —
//     applied to the API server, the controller (or plan watch) run with its ServiceAccount's
//     token: every request allowed, every grant used, then uninstalled, leaving the NodePools
//     and NodeClaims.
//
// Each world has its own namespace and installation name, and cleans up after itself (every
// Node, NodeClaim and instance gone), so the tests share one control plane one after another.
//
// # Why in-process
//
// The control plane is compiled as part of the test binary, by `go test`'s build step, which no
// -timeout cuts and whose results Go's build cache keeps. Building kube-apiserver as a program
// from inside the test (as this package once did) ran into the test's own deadline on a fresh
// machine and could only skip.
//
// # Why under -race
//
// The README's test command runs everything with -race, so the API server, etcd and the
// scheduler are race-instrumented too. That costs a separate, larger first compile (Go caches
// race and non-race builds apart) and makes the control plane slower and bigger at run time,
// but the scenarios mostly wait on timers and watches, so the run stays within a small multiple
// of the non-race one (measured: 5–9 minutes against 3, 1.3 GB against 0.34, on a shared 2-core
// machine); the README's test command gives it -timeout 30m (go test's default 10m is too
// close under load). The alternatives were worse: a
// build tag or a separate command would mean the test does not run under the README's command,
// and exec'ing a non-race binary brings back the build at run time this package removed.
//
// # Usage
//
//	go test -race ./examples/e2e/...           # as CI runs it; the first build compiles Kubernetes
//	NODEPLAN_E2E=0 go test ./examples/e2e/...  # skip it (so does -short)
//
// examples/e2e is a module of its own (k8s.io/kubernetes with its staging modules at the
// published v0.37.2, and etcd, stay out of the examples module), so `./examples/...` does not
// reach it: the README's test command names `./examples/e2e/...` too.
package e2e
