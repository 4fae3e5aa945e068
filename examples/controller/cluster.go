package main

import (
	"context"
	"errors"
	"io"

	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

// runCluster runs the controller against a real cluster.
func runCluster(ctx context.Context, o options, metrics *controller.Metrics, planner controller.Planner, stderr io.Writer) error {
	return errors.New("--kubeconfig: the EC2 provider is not wired in yet")
}
