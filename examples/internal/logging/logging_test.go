package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2"
)

func TestJSONLayout(t *testing.T) {
	var buf bytes.Buffer
	log, err := New(Options{Level: "info", Writer: &buf})
	if err != nil {
		t.Fatal(err)
	}
	log.Info("launched nodeclaim", "nodeclaim", "default-abcde", "nodepool", "default", "node", "ip-1",
		"pod", "ns/web-1", "provider-id", "aws:///us-east-1a/i-1")
	log.Error("could not launch nodeclaim", "err", errors.New("boom"))
	log.Debug("hidden at info")
	var lines []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("not JSON: %s", l)
		}
		delete(m, "time")
		delete(m, "commit")
		lines = append(lines, m)
	}
	want := []map[string]any{
		{"level": "INFO", "logger": "controller", "message": "launched nodeclaim",
			"NodeClaim": map[string]any{"name": "default-abcde"}, "NodePool": map[string]any{"name": "default"},
			"Node": map[string]any{"name": "ip-1"}, "Pod": map[string]any{"namespace": "ns", "name": "web-1"},
			"provider-id": "aws:///us-east-1a/i-1"},
		{"level": "ERROR", "logger": "controller", "message": "could not launch nodeclaim", "error": "boom"},
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

func TestTimeFormat(t *testing.T) {
	var buf bytes.Buffer
	log, _ := New(Options{Writer: &buf})
	log.Info("x")
	var m map[string]string
	_ = json.Unmarshal(buf.Bytes(), &m)
	if len(m["time"]) != len("2026-08-21T10:15:30.123Z") || m["time"][len(m["time"])-1] != 'Z' {
		t.Errorf("time %q, want ISO 8601 UTC with milliseconds", m["time"])
	}
}

func TestLevels(t *testing.T) {
	for _, c := range []struct {
		in      string
		wantErr bool
	}{{"", false}, {"debug", false}, {"INFO", false}, {"error", false}, {"verbose", true}} {
		_, err := New(Options{Level: c.in})
		if (err != nil) != c.wantErr {
			t.Errorf("New(Level %q) error = %v, want error %v", c.in, err, c.wantErr)
		}
	}
	if _, err := New(Options{Format: "xml"}); err == nil {
		t.Error("New(Format xml) accepted")
	}
}

// TestKlogRouted checks that client-go's klog lines come out in the same JSON layout.
func TestKlogRouted(t *testing.T) {
	var buf bytes.Buffer
	log, _ := New(Options{Writer: &buf})
	RouteKlog(log)
	defer klog.ClearLogger()
	klog.InfoS("Waited before sending request", "delay", "1.5s")
	klog.Flush()
	var m map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &m); err != nil {
		t.Fatalf("klog line not JSON: %q", buf.String())
	}
	if m["message"] != "Waited before sending request" || m["logger"] != "controller" || m["delay"] != "1.5s" {
		t.Errorf("klog line %v, want message, logger controller and delay", m)
	}
}
