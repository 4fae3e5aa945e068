package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestHelpGroups: `controller -h` shows every flag once, under its mode's heading, in the
// groups' order, with the environment variable of each flag a Karpenter setting sets.
func TestHelpGroups(t *testing.T) {
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, &out, &errs); err != nil {
		t.Fatalf("run(-h) = %v, want nil", err)
	}
	if errs.Len() > 0 {
		t.Errorf("run(-h) wrote to stderr: %q", errs.String())
	}
	help := out.String()
	// Headings in order, and which heading each flag is under.
	heading := regexp.MustCompile(`(?m)^(\S[^\n]*):$`)
	entry := regexp.MustCompile(`(?m)^  -(\S+)`)
	var titles []string
	under := map[string]string{}
	for _, part := range strings.Split(help, "\n\n") {
		h := heading.FindStringSubmatch(part)
		if h == nil {
			continue
		}
		titles = append(titles, h[1])
		for _, m := range entry.FindAllStringSubmatch(part, -1) {
			if prev, ok := under[m[1]]; ok {
				t.Errorf("-%s shown under both %q and %q", m[1], prev, h[1])
			}
			under[m[1]] = h[1]
		}
	}
	var want []string
	for _, g := range flagGroups {
		want = append(want, g.title)
	}
	// Then Karpenter's variables that set no flag: refused, and inert.
	want = append(want, "Karpenter's other settings (start-up fails when one is set to anything but Karpenter's default)",
		"Karpenter's settings accepted with no effect (logged at start-up)")
	if strings.Join(titles, "\n") != strings.Join(want, "\n") {
		t.Errorf("headings of -h:\n%s\nwant:\n%s", strings.Join(titles, "\n"), strings.Join(want, "\n"))
	}
	for _, tc := range []struct{ flag, group string }{
		{"scenario", "Simulation"}, {"scale", "Simulation"}, {"kubeconfig", "Cluster"}, {"cluster-name", "Cluster"},
		{"region", "AWS"}, {"interruption-queue", "AWS"}, {"metrics-addr", "Observability"}, {"log-level", "Observability"},
	} {
		if !strings.HasPrefix(under[tc.flag], tc.group) {
			t.Errorf("-%s is under %q, want the %s group", tc.flag, under[tc.flag], tc.group)
		}
	}
	if _, err := parseFlags([]string{"-h"}, &bytes.Buffer{}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("parseFlags(-h) = %v, want flag.ErrHelp", err)
	}
	// Every registered flag is shown, none under "Other": a new flag needs its group.
	var o options
	o.flagSet().VisitAll(func(f *flag.Flag) {
		if under[f.Name] == "" {
			t.Errorf("-h does not show -%s", f.Name)
		}
	})
	for name, g := range under {
		if g == "Other" {
			t.Errorf("-%s is in no group: add it to flagGroups (help.go)", name)
		}
	}
	for _, e := range karpenterEnv {
		if e.refused != "" || e.inert != "" {
			if !regexp.MustCompile(`(?m)^  ` + e.env + `\b`).MatchString(help) {
				t.Errorf("-h does not list Karpenter's %s (refused or inert)", e.env)
			}
			continue
		}
		if e.flag == "" {
			continue // FEATURE_GATES: gate by gate
		}
		if under[e.flag] == "" {
			continue // a variable of a flag not registered here
		}
		line := regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(e.flag) + `\b.*\(env ([^)]*, )?` + e.env + `[:,)]`)
		if !line.MatchString(help) {
			t.Errorf("-h: -%s's line lacks (env %s)", e.flag, e.env)
		}
	}
}

// TestUnknownFlag: a mistyped flag is answered in one line that names it and where to look,
// and nothing else is printed.
func TestUnknownFlag(t *testing.T) {
	var out, errs bytes.Buffer
	err := run(context.Background(), []string{"-foo"}, &out, &errs)
	const want = "flag provided but not defined: -foo (see controller -h)"
	if err == nil || err.Error() != want || !isUsage(err) {
		t.Errorf("run(-foo) = %v, want the usage error %q", err, want)
	}
	if out.Len()+errs.Len() > 0 {
		t.Errorf("run(-foo) printed %q and %q, want nothing beside the error", out.String(), errs.String())
	}
	if err := run(context.Background(), []string{"--kube-client-qps", "x"}, &out, &errs); !isUsage(err) || strings.Contains(err.Error(), "\n") {
		t.Errorf("run(--kube-client-qps x) = %v, want a one-line usage error", err)
	}
}

// TestMainExitCodes runs the command itself: a refused command line exits 2 with one line on
// stderr, -h exits 0.
func TestMainExitCodes(t *testing.T) {
	if args := os.Getenv("CONTROLLER_TEST_MAIN"); args != "" {
		os.Args = append([]string{"controller"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	for _, tc := range []struct {
		args   string
		code   int
		stderr string
	}{
		{"-foo", 2, "controller: flag provided but not defined: -foo (see controller -h)\n"},
		{"-h", 0, ""},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMainExitCodes$")
		cmd.Env = append(os.Environ(), "CONTROLLER_TEST_MAIN="+tc.args)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || stderr.String() != tc.stderr {
			t.Errorf("controller %s: exit %d, stderr %q; want exit %d, stderr %q", tc.args, code, stderr.String(), tc.code, tc.stderr)
		}
	}
}
