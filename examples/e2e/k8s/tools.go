//go:build tools

// Package k8s pins the Kubernetes and etcd versions the end-to-end test builds its control
// plane from. It is a module of its own, outside the workspace, so that k8s.io/kubernetes and
// its dependencies never enter the nodeplan build: the test runs `go build` here with
// GOWORK=off.
package k8s

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"
)
