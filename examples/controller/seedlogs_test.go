package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// records runs a scenario and returns its JSON log records, each with its raw line.
func records(t *testing.T, scenario string) (raw []string, recs []map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, logs bytes.Buffer
	if err := simulate(ctx, &out, simOptions{Scenario: scenario, JSONLog: &logs}); err != nil {
		t.Fatalf("simulate %s: %v\n%s", scenario, err, out.String())
	}
	sc := bufio.NewScanner(&logs)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: record is not JSON: %v\n%s", scenario, err, sc.Text())
		}
		raw, recs = append(raw, sc.Text()), append(recs, r)
	}
	return raw, recs
}

// TestSeedLogGreps holds the operators' guides' log queries (../shared/seeds/) against the
// simulation's JSON records: each `grep <phrase>` finds a record, and the fields the guide
// then reads with jq are there with the values it shows. Every record names its controller,
// as Karpenter's do.
func TestSeedLogGreps(t *testing.T) {
	type query struct {
		seed, grep string
		fields     map[string]string // the record's keys the guide reads, with the value it shows
	}
	for _, c := range []struct {
		scenario string
		queries  []query
	}{
		{"inflate", []query{
			// 004: `grep "launched nodeclaim" | jq -s` shows logger controller, controller nodeclaim.lifecycle.
			{"004", "launched nodeclaim", map[string]string{"message": "launched nodeclaim", "logger": "controller", "controller": "nodeclaim.lifecycle"}},
			// 004: `grep "disrupting nodeclaim"` shows controller disruption, reason empty; Karpenter
			// v1.14's message is "disrupting node(s)" (the guide's is an older Karpenter's).
			{"004", "disrupting node", map[string]string{"message": "disrupting node(s)", "controller": "disruption", "reason": "empty"}},
			// 000: `grep "launched"`.
			{"000", "launched", map[string]string{"level": "INFO"}},
			{"004", "created nodeclaim", map[string]string{"controller": "provisioner"}},
			{"004", "tainted node", map[string]string{"controller": "node.termination"}},
		}},
		{"spot-interruption", []query{
			// 000: `grep interruption`.
			{"000", "interruption", map[string]string{"controller": "interruption"}},
		}},
	} {
		raw, recs := records(t, c.scenario)
		for i, r := range recs {
			if s, _ := r["controller"].(string); s == "" {
				t.Errorf("%s: record without a controller key: %s", c.scenario, raw[i])
			}
		}
		for _, q := range c.queries {
			found := false
			for i, line := range raw {
				if !strings.Contains(line, q.grep) {
					continue
				}
				match := true
				for k, v := range q.fields {
					if s, _ := recs[i][k].(string); s != v {
						match = false
					}
				}
				if match {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("seed %s, %s: no record matching grep %q with %v", q.seed, c.scenario, q.grep, q.fields)
			}
		}
	}
}

// TestSimulationLogFormatJSON: `controller --log-format json` simulating prints the JSON
// records alone on stdout (so `| grep … | jq` works as on `kubectl logs`) and the timeline on
// stderr; without the flag stdout is the timeline.
func TestSimulationLogFormatJSON(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"--log-format", "json"}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) < 5 {
		t.Fatalf("stdout has %d lines, want the run's records:\n%s", len(lines), stdout.String())
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("stdout line is not a JSON record: %s", l)
		}
	}
	if !strings.Contains(stdout.String(), `"message":"launched nodeclaim"`) {
		t.Errorf("stdout lacks the launched nodeclaim record:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "summary:") {
		t.Errorf("stderr lacks the timeline's summary:\n%s", stderr.String())
	}
}
