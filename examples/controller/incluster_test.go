package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
)

// TestMain runs the package's tests as outside a pod, whatever the machine: a CI job in a
// Kubernetes pod has KUBERNETES_SERVICE_HOST set, which would turn every simulation test into
// the in-pod refusal. The tests of the in-pod start set it themselves.
func TestMain(m *testing.M) {
	os.Unsetenv("KUBERNETES_SERVICE_HOST")
	os.Exit(m.Run())
}

// TestMisconfiguredStartFailsLoudly: a pod whose Deployment lacks CLUSTER_NAME, and cluster
// flags with neither a kubeconfig nor a pod, used to play the demo simulation and exit 0. Each
// is now an error saying what is missing, and prints no simulation.
func TestMisconfiguredStartFailsLoudly(t *testing.T) {
	for _, tc := range []struct {
		name  string
		inPod bool
		env   map[string]string
		args  []string
		want  []string
	}{
		{"pod without CLUSTER_NAME", true, nil, nil, []string{"KUBERNETES_SERVICE_HOST", "CLUSTER_NAME"}},
		{"pod with a queue but no CLUSTER_NAME", true, map[string]string{"INTERRUPTION_QUEUE": "prod"}, nil, []string{"--cluster-name (CLUSTER_NAME) is required"}},
		{"pod with --interruption-queue but no CLUSTER_NAME", true, nil, []string{"--interruption-queue", "prod"}, []string{"--cluster-name (CLUSTER_NAME) is required"}},
		{"--cluster-name without a kubeconfig", false, nil, []string{"--cluster-name", "prod"}, []string{"--cluster-name", "--kubeconfig"}},
		{"--interruption-queue without a kubeconfig", false, nil, []string{"--interruption-queue", "prod"}, []string{"--interruption-queue", "--kubeconfig"}},
		{"CLUSTER_NAME without a kubeconfig", false, map[string]string{"CLUSTER_NAME": "prod"}, nil, []string{"--cluster-name", "--kubeconfig"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearKarpenterEnv(t)
			if tc.inPod {
				t.Setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var out, errs bytes.Buffer
			err := run(context.Background(), tc.args, &out, &errs)
			if err == nil {
				t.Fatalf("run(%q) = nil, want an error\nstdout:\n%s", tc.args, out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("run(%q) = %v, want it to say %q", tc.args, err, w)
				}
			}
			if strings.Contains(out.String(), "simulation") || strings.Contains(out.String(), "summary:") {
				t.Errorf("run(%q) played the simulation:\n%s", tc.args, out.String())
			}
		})
	}
}

// TestOnCluster: where the controller runs, by kubeconfig, pod and flags.
func TestOnCluster(t *testing.T) {
	clearKarpenterEnv(t)
	for _, tc := range []struct {
		args        []string
		pod         string
		wantCluster bool
		wantErr     bool
	}{
		{nil, "", false, false},
		{[]string{"--kubeconfig", "k"}, "", true, false},
		{[]string{"--kubeconfig", "k"}, "10.96.0.1", true, false},
		{[]string{"--cluster-name", "prod"}, "10.96.0.1", true, false},
		{[]string{"--provider", "kwok"}, "10.96.0.1", true, false},
		{[]string{"--scenario", "ice"}, "10.96.0.1", false, false},
		{[]string{"--scale", "10"}, "10.96.0.1", false, false},
		{nil, "10.96.0.1", false, true},
		{[]string{"--metrics-addr", ":8080"}, "10.96.0.1", false, true},
	} {
		o, err := parseFlags(tc.args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		got, err := onCluster(o, func(k string) string {
			if k == "KUBERNETES_SERVICE_HOST" {
				return tc.pod
			}
			return ""
		})
		if got != tc.wantCluster || (err != nil) != tc.wantErr {
			t.Errorf("onCluster(%q, pod %q) = %v, %v; want %v, error %v", tc.args, tc.pod, got, err, tc.wantCluster, tc.wantErr)
		}
	}
}
