package main

import (
	"io"
	"strings"
	"testing"
)

// TestSettingsFromEnv: Karpenter's environment variables set the flags, the command line wins,
// and bad values name the variable.
func TestSettingsFromEnv(t *testing.T) {
	env := map[string]string{"CLUSTER_NAME": "prod", "CLUSTER_ENDPOINT": "https://ABC.gr7.us-east-1.eks.amazonaws.com",
		"INTERRUPTION_QUEUE": "prod", "LOG_LEVEL": "debug", "KUBE_CLIENT_QPS": "50", "METRICS_PORT": "8080",
		"HEALTH_PROBE_PORT": "8081"}
	t.Setenv("CLUSTER_NAME", "")
	for k, v := range env {
		t.Setenv(k, v)
	}
	o, err := parseFlags([]string{"--log-level", "error"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.clusterName != "prod" || o.clusterEndpoint != env["CLUSTER_ENDPOINT"] || o.interruptionQueue != "prod" ||
		o.logLevel != "error" || o.qps != 50 || o.burst != 300 || o.metricsAddr != ":8080" || o.healthAddr != ":8081" {
		t.Errorf("settings = %+v", o)
	}
	t.Setenv("KUBE_CLIENT_BURST", "many")
	if _, err := parseFlags(nil, io.Discard); err == nil || !contains(err.Error(), "KUBE_CLIENT_BURST") {
		t.Errorf("bad KUBE_CLIENT_BURST: error %v, want one naming the variable", err)
	}
}

// TestEndpointInPod: in a pod the join URL must be given; outside, the kubeconfig's is used.
func TestEndpointInPod(t *testing.T) {
	if _, err := endpoint(options{}, "https://10.96.0.1:443"); err == nil {
		t.Error("in a pod without CLUSTER_ENDPOINT: no error")
	}
	if got, _ := endpoint(options{kubeconfig: "k"}, "https://api:6443"); got != "https://api:6443" {
		t.Errorf("outside: %q", got)
	}
	if got, _ := endpoint(options{settings: settings{clusterEndpoint: "https://x"}}, "https://10.96.0.1"); got != "https://x" {
		t.Errorf("given: %q", got)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
