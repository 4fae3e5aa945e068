package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/nodeplan/nodeplan/examples/internal/version"
	"github.com/nodeplan/nodeplan/examples/plan/internal/load"
)

// Exit statuses.
const (
	exitOK       = 0
	exitInternal = 1 // the tool failed: a bug, cancellation, a write error
	exitBadInput = 2 // the input or the command line cannot be used
)

// maxErrorLines is how many problems are printed before the rest are counted.
const maxErrorLines = 10

const usage = `usage:
  plan provision (--kubeconfig FILE | --current-context | --pods FILE --nodepools FILE) [--catalog FILE] [--daemonsets FILE] [--nodes FILE] [--nodeclaims FILE] [--pvcs FILE --pvs FILE --storageclasses FILE] [--node-cost $/h] [--preference-policy Respect|CostAware|Ignore] [-o text|json|yaml|nodes]
  plan catalog [--kubeconfig FILE | --current-context] [--region REGION] [--offline] > catalog.json
  plan watch (--kubeconfig FILE | --current-context) [--interval 1m] [--metrics-addr :9090] [-v]
  plan disrupt (--kubeconfig FILE | --current-context | --pods FILE --nodes FILE --nodepools FILE) [--catalog FILE] [--daemonsets FILE] [--pdbs FILE] [--now RFC3339] [--node-cost $/h] [-o text|json|yaml|nodes]

provision: which nodes to launch for the pending pods, and why any pod cannot be placed.
disrupt:   which managed nodes to delete or replace, and why the others stay.
watch:     shadow mode beside the cluster's autoscaler: plans every pass as if in charge, acts
           on nothing, and says what it would have done differently and at what cost.
catalog:   the instance catalog the other two build when no --catalog is given: from EC2 with
           AWS credentials, else from nodeplan's embedded data, each assumption printed.
With --kubeconfig or --current-context the inputs are listed from the cluster (read-only);
file flags given too replace that kind.
Run "plan provision -h" or "plan disrupt -h" for the flags, "plan -version" for the build.
`

// badInput marks an error as the user's to fix (exit status 2) rather than the tool's.
type badInput struct{ err error }

func (e badInput) Error() string { return e.err.Error() }
func (e badInput) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return badInput{fmt.Errorf(format, args...)}
}

// run is the whole program: it parses args (without the program name), writes the result to
// stdout only when there is one, and reports problems to stderr. It returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitBadInput
	}
	var cmd func(context.Context, []string, io.Writer, io.Writer) error
	switch args[0] {
	case "provision":
		cmd = provision
	case "disrupt":
		cmd = disrupt
	case "catalog":
		cmd = catalogCmd
	case "watch":
		cmd = watch
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, version.String("plan"))
		return exitOK
	default:
		fmt.Fprintf(stderr, "plan: unknown command %q\n%s", args[0], usage)
		return exitBadInput
	}

	// Output is buffered so that a failure half-way leaves stdout empty — except watch's, a
	// line per pass for as long as it runs.
	var out bytes.Buffer
	var w io.Writer = &out
	if args[0] == "watch" {
		w = stdout
	}
	err := cmd(ctx, args[1:], w, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case err != nil:
		// Every problem is reported, up to a screenful: a wrong file can make hundreds.
		lines := strings.Split(err.Error(), "\n")
		for i, line := range lines {
			if i == maxErrorLines && len(lines) > maxErrorLines+1 {
				fmt.Fprintf(stderr, "plan: ... and %d more problems\n", len(lines)-i)
				break
			}
			fmt.Fprintf(stderr, "plan: %s\n", line)
		}
		var bi badInput
		var le *load.Error
		if errors.As(err, &bi) || errors.As(err, &le) {
			return exitBadInput
		}
		return exitInternal
	}
	if _, err := stdout.Write(out.Bytes()); err != nil {
		fmt.Fprintf(stderr, "plan: writing the output: %v\n", err)
		return exitInternal
	}
	return exitOK
}

// outputFormat is the value of -o.
type outputFormat string

func (f *outputFormat) String() string { return string(*f) }

func (f *outputFormat) Set(s string) error {
	switch s {
	case "text", "json", "yaml", "nodes":
		*f = outputFormat(s)
		return nil
	}
	return fmt.Errorf("%q is not text, json, yaml or nodes", s)
}

// flags is a subcommand's flag set. Parse errors come back as one-line errors rather than
// being printed with the whole usage.
type flags struct {
	*flag.FlagSet
	synopsis string
	stderr   io.Writer
}

func newFlags(name, synopsis string, stderr io.Writer) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flags{FlagSet: fs, synopsis: synopsis, stderr: stderr}
}

// parse parses args and checks that every flag in required was given and that no arguments are
// left over. -h prints the usage and returns flag.ErrHelp.
func (f *flags) parse(args []string, required ...string) error {
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(f.stderr, "usage: plan %s %s\n\nflags:\n", f.Name(), f.synopsis)
			f.SetOutput(f.stderr)
			f.PrintDefaults()
			return err
		}
		return usageErrorf("%s: %v (see plan %s -h)", f.Name(), err, f.Name())
	}
	if f.NArg() > 0 {
		return usageErrorf("%s: unexpected argument %q (see plan %s -h)", f.Name(), f.Arg(0), f.Name())
	}
	return f.require(required...)
}

// require checks, after parsing, that every flag named was given.
func (f *flags) require(required ...string) error {
	set := map[string]bool{}
	f.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	var missing []string
	for _, name := range required {
		if !set[name] {
			missing = append(missing, "--"+name)
		}
	}
	if len(missing) > 0 {
		return usageErrorf("%s: missing %s (see plan %s -h)", f.Name(), strings.Join(missing, ", "), f.Name())
	}
	return nil
}
