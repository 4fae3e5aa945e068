//go:build tools

package e2e

// The control plane the test is moving to start in-process: these imports keep the module's
// requirements on Kubernetes and etcd until non-test code of the module uses them.
import (
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app/testing"
)
