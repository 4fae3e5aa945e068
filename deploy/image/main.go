// Command image builds nodeplan's container images without docker: for each program (the
// controller, plan) a static (CGO_ENABLED=0) binary per platform, on a minimal base it builds
// itself — no registry pulls: /etc/passwd and /etc/group with the non-root user 65532, the
// build machine's CA certificates, a home and /tmp — as a multi-arch OCI image index. It writes
// the indexes to an OCI image layout (a directory, or a tar of one: an "OCI archive") and, given
// a repository, pushes them.
//
//	cd deploy && go run ./image -tag v0.1.0 -layout ../dist/oci          # linux/amd64 + linux/arm64
//	cd deploy && go run ./image -tag v0.1.0 -tar ../dist/nodeplan-images.tar
//	cd deploy && go run ./image -tag v0.1.0 -push ghcr.io/nodeplan     # ghcr.io/nodeplan/controller:v0.1.0, …/plan:v0.1.0
//
// Pushing authenticates as docker and crane do (~/.docker/config.json and its credential
// helpers). The images run as 65532:65532 with the binary as entrypoint (/controller, /plan).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	programs := fs.String("programs", "controller,plan", "comma-separated programs of the examples module to build")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch platforms of each image")
	fs.StringVar(&o.src, "src", "../examples", "the examples module's directory")
	fs.StringVar(&o.tag, "tag", "dev", "the images' tag (RELEASING.md: the release version)")
	fs.StringVar(&o.caCerts, "ca-certs", "", "PEM file of CA certificates for the base (default: the build machine's, from the usual paths)")
	layoutDir := fs.String("layout", "", "write an OCI image layout to this directory")
	tarFile := fs.String("tar", "", "write an OCI image layout as a tar file (an OCI archive)")
	push := fs.String("push", "", "push each image to REPOSITORY/<program>:<tag> (e.g. ghcr.io/nodeplan)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *layoutDir == "" && *tarFile == "" && *push == "" {
		return fmt.Errorf("nothing to do: give -layout DIR, -tar FILE or -push REPOSITORY")
	}
	o.programs = strings.Split(*programs, ",")
	var err error
	if o.platforms, err = parsePlatforms(*platforms); err != nil {
		return err
	}
	o.log = stderr
	images, err := build(ctx, o)
	if err != nil {
		return err
	}
	if *layoutDir != "" {
		if err := writeLayout(*layoutDir, images); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote OCI layout %s\n", *layoutDir)
	}
	if *tarFile != "" {
		if err := writeArchive(*tarFile, images); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote OCI archive %s\n", *tarFile)
	}
	if *push != "" {
		for _, img := range images {
			ref, digest, err := pushImage(ctx, *push, img)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "pushed %s@%s\n", ref, digest)
		}
	}
	return nil
}
