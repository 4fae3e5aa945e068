package main

import (
	"encoding/base64"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// karpenterV114Env is every environment variable Karpenter v1.14 documents for its controller
// (aws/karpenter-provider-aws website/content/en/v1.14/reference/settings.md), read from there.
var karpenterV114Env = []string{
	"AMI_REFRESH_INTERVAL", "BATCH_IDLE_DURATION", "BATCH_MAX_DURATION", "CLUSTER_CA_BUNDLE", "CLUSTER_ENDPOINT",
	"CLUSTER_NAME", "CPU_REQUESTS", "DISABLE_CLUSTER_STATE_OBSERVABILITY", "DISABLE_CONTROLLER_WARMUP", "DISABLE_DRY_RUN",
	"DISABLE_LEADER_ELECTION", "EKS_CONTROL_PLANE", "ENABLE_PROFILING", "ENABLE_ZONAL_SHIFT", "FEATURE_GATES",
	"HEALTH_PROBE_PORT", "IGNORE_DRA_REQUESTS", "INTERRUPTION_QUEUE", "ISOLATED_VPC", "KARPENTER_SERVICE",
	"KUBE_CLIENT_BURST", "KUBE_CLIENT_QPS", "LEADER_ELECTION_NAME", "LEADER_ELECTION_NAMESPACE", "LOG_ERROR_OUTPUT_PATHS",
	"LOG_LEVEL", "LOG_OUTPUT_PATHS", "MEMORY_LIMIT", "METRICS_PORT", "MIN_VALUES_POLICY", "PREFERENCE_POLICY",
	"RESERVED_ENIS", "SUBNET_REFRESH_INTERVAL", "VM_MEMORY_OVERHEAD_PERCENT",
}

// clearKarpenterEnv unsets every variable of the table for the test.
func clearKarpenterEnv(t *testing.T) {
	t.Helper()
	for _, e := range karpenterEnv {
		t.Setenv(e.env, "")
		os.Unsetenv(e.env)
	}
}

// TestKarpenterEnv: each of Karpenter v1.14's variables is honoured (it sets its flag, with
// Karpenter's meaning), refused with a sentence when set to what this controller cannot do,
// or accepted as meaningless here with the reason logged. None is silently ignored.
func TestKarpenterEnv(t *testing.T) {
	byEnv := map[string]envSetting{}
	for _, e := range karpenterEnv {
		byEnv[e.env] = e
	}
	for _, name := range karpenterV114Env {
		if _, ok := byEnv[name]; !ok {
			t.Errorf("karpenterEnv lacks Karpenter's %s: honour it, refuse it or say why it is inert", name)
		}
	}
	pem := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	// honoured: a value Karpenter's users set, and what it must do.
	honoured := map[string]struct {
		value string
		ok    func(o options) bool
	}{
		"AMI_REFRESH_INTERVAL":       {"2m", func(o options) bool { return o.amiRefresh == 2*time.Minute && o.cacheFor() == 2*time.Minute }},
		"SUBNET_REFRESH_INTERVAL":    {"3m", func(o options) bool { return o.subnetRefresh == 3*time.Minute }},
		"BATCH_IDLE_DURATION":        {"2s", func(o options) bool { return o.batchIdle == 2*time.Second }},
		"BATCH_MAX_DURATION":         {"30s", func(o options) bool { return o.batchMax == 30*time.Second }},
		"CLUSTER_CA_BUNDLE":          {base64.StdEncoding.EncodeToString([]byte(pem)), func(o options) bool { ca, err := o.caBundle([]byte("client")); return err == nil && string(ca) == pem }},
		"CLUSTER_ENDPOINT":           {"https://api.example", func(o options) bool { return o.clusterEndpoint == "https://api.example" }},
		"CLUSTER_NAME":               {"prod", func(o options) bool { return o.clusterName == "prod" }},
		"DISABLE_LEADER_ELECTION":    {"true", func(o options) bool { return !o.leaderElect }},
		"ENABLE_PROFILING":           {"true", func(o options) bool { return o.enableProfiling }},
		"HEALTH_PROBE_PORT":          {"8081", func(o options) bool { return o.healthAddr == ":8081" }},
		"INTERRUPTION_QUEUE":         {"prod", func(o options) bool { return o.interruptionQueue == "prod" }},
		"ISOLATED_VPC":               {"true", func(o options) bool { return o.isolatedVPC }},
		"KUBE_CLIENT_BURST":          {"50", func(o options) bool { return o.burst == 50 }},
		"KUBE_CLIENT_QPS":            {"20", func(o options) bool { return o.qps == 20 }},
		"LEADER_ELECTION_NAME":       {"karpenter-leader-election", func(o options) bool { return o.leaseName == "karpenter-leader-election" }},
		"LEADER_ELECTION_NAMESPACE":  {"karpenter", func(o options) bool { return o.leaseNamespace == "karpenter" }},
		"LOG_LEVEL":                  {"debug", func(o options) bool { return o.logLevel == "debug" }},
		"LOG_OUTPUT_PATHS":           {"stdout", func(o options) bool { return o.logOutputPaths == "stdout" }},
		"MEMORY_LIMIT":               {"1073741824", func(o options) bool { return o.memoryLimit == 1<<30 }},
		"METRICS_PORT":               {"8080", func(o options) bool { return o.metricsAddr == ":8080" }},
		"PREFERENCE_POLICY":          {"Ignore", func(o options) bool { return o.preferencePolicy == "Ignore" }},
		"MIN_VALUES_POLICY":          {"BestEffort", func(o options) bool { return o.minValuesPolicy == "BestEffort" }},
		"VM_MEMORY_OVERHEAD_PERCENT": {"0.05", func(o options) bool { return o.vmMemoryOverhead == 0.05 && o.vmOverhead() == 0.05 }},
		"FEATURE_GATES": {"NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=true",
			func(o options) bool { return o.noSpotToSpot && o.capacityBuffers }},
		"SYSTEM_NAMESPACE": {"karpenter", func(o options) bool { return o.leaseNamespace == "karpenter" }},
	}
	// refused: a value this controller cannot honour; the default must still be accepted.
	refused := map[string]string{
		"DISABLE_CLUSTER_STATE_OBSERVABILITY": "true", "DISABLE_CONTROLLER_WARMUP": "false", "EKS_CONTROL_PLANE": "true",
		"ENABLE_ZONAL_SHIFT": "true", "IGNORE_DRA_REQUESTS": "false", "LOG_ERROR_OUTPUT_PATHS": "/var/log/errors",
		"RESERVED_ENIS": "1",
	}
	for _, e := range karpenterEnv {
		t.Run(e.env, func(t *testing.T) {
			clearKarpenterEnv(t)
			switch {
			case e.inert != "":
				t.Setenv(e.env, "anything")
				o, err := parseFlags(nil, io.Discard)
				if err != nil || !slices.ContainsFunc(o.inert, func(n string) bool { return strings.HasPrefix(n, e.env+"=anything: ") }) {
					t.Errorf("%s=anything: err %v, notes %q; want it accepted and noted for the log", e.env, err, o.inert)
				}
			case e.refused != "":
				bad, ok := refused[e.env]
				if !ok {
					t.Fatalf("refused %s has no test value", e.env)
				}
				t.Setenv(e.env, bad)
				_, err := parseFlags(nil, io.Discard)
				if err == nil || !strings.Contains(err.Error(), e.env) || !strings.Contains(err.Error(), e.refused) {
					t.Errorf("%s=%s: parseFlags = %v, want an error naming it and saying why", e.env, bad, err)
				}
				t.Setenv(e.env, e.def)
				if _, err := parseFlags(nil, io.Discard); err != nil {
					t.Errorf("%s=%s (Karpenter's default): parseFlags = %v, want it accepted", e.env, e.def, err)
				}
			default:
				h, ok := honoured[e.env]
				if !ok {
					t.Fatalf("honoured %s has no test value", e.env)
				}
				t.Setenv(e.env, h.value)
				o, err := parseFlags(nil, io.Discard)
				if err != nil || !h.ok(o) {
					t.Errorf("%s=%s: parseFlags = %+v, %v; not honoured", e.env, h.value, o.settings, err)
				}
			}
		})
	}
}

// TestKarpenterEnvDefaults: with no variable set, each honoured setting has Karpenter's
// default, except where this controller's is documented to differ (the preference policy,
// the Lease name, the log stream, the provider's cache).
func TestKarpenterEnvDefaults(t *testing.T) {
	clearKarpenterEnv(t)
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.batchIdle != time.Second || o.batchMax != 10*time.Second || o.qps != 200 || o.burst != 300 ||
		o.vmMemoryOverhead != 0.075 || o.memoryLimit != -1 || o.enableProfiling || o.isolatedVPC || !o.leaderElect ||
		o.noSpotToSpot || len(o.inert) > 0 {
		t.Errorf("defaults = %+v, want Karpenter's", o.settings)
	}
}

// TestKarpenterEnvErrors: bad values name the variable; the command line wins over the
// environment; LEADER_ELECTION_NAMESPACE wins over the pod's SYSTEM_NAMESPACE.
func TestKarpenterEnvErrors(t *testing.T) {
	for _, tc := range []struct{ env, value, want string }{
		{"PREFERENCE_POLICY", "Sometimes", "PREFERENCE_POLICY"},
		{"MIN_VALUES_POLICY", "Loose", "MIN_VALUES_POLICY"},
		{"BATCH_MAX_DURATION", "ten", "BATCH_MAX_DURATION"},
		{"DISABLE_LEADER_ELECTION", "maybe", "DISABLE_LEADER_ELECTION"},
		{"FEATURE_GATES", "Drift=true", "unknown gate Drift"},
		{"FEATURE_GATES", "NodeRepair=true", "does not repair"},
		{"FEATURE_GATES", "CapacityBuffer", "not Name=true"},
		{"AMI_REFRESH_INTERVAL", "30s", "at least 1m"},
		{"VM_MEMORY_OVERHEAD_PERCENT", "7.5", "VM_MEMORY_OVERHEAD_PERCENT"},
		{"LOG_OUTPUT_PATHS", "/var/log/karpenter.log", "LOG_OUTPUT_PATHS"},
		{"CLUSTER_CA_BUNDLE", "not base64!", "CLUSTER_CA_BUNDLE"},
	} {
		clearKarpenterEnv(t)
		t.Setenv(tc.env, tc.value)
		o, err := parseFlags(nil, io.Discard)
		if err == nil && tc.env == "CLUSTER_CA_BUNDLE" {
			_, err = o.caBundle(nil)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: error %v, want one saying %q", tc.env, tc.value, err, tc.want)
		}
	}
	clearKarpenterEnv(t)
	t.Setenv("SYSTEM_NAMESPACE", "karpenter")
	t.Setenv("LEADER_ELECTION_NAMESPACE", "leases")
	t.Setenv("BATCH_IDLE_DURATION", "5s")
	o, err := parseFlags([]string{"--batch-idle-duration", "3s"}, io.Discard)
	if err != nil || o.leaseNamespace != "leases" || o.batchIdle != 3*time.Second {
		t.Errorf("parseFlags = %v, lease namespace %q, batch idle %v; want leases and 3s (the command line wins)", err, o.leaseNamespace, o.batchIdle)
	}
}
