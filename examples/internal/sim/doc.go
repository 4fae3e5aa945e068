// Package sim is an in-process Kubernetes cluster and cloud for running the example controller
// with no cluster and no cloud account: client-go's fake clientset (with the Eviction API and
// binding added), the in-memory cloudprovider selling an embedded EC2 catalog, and simulated
// kubelets, kube-scheduler and Deployment controller, all on a virtual clock that a scenario
// advances.
//
// [Timeline] prints a run's story from the controller's typed events (controller.Event), the
// script's own lines, and, with -v, the debug log records.
//
// It is a test double, not a Kubernetes: the scheduler is first fit over node selector,
// required node affinity, taints and resources; there are no volumes, no pod affinity, no
// priorities.
//
// # Usage
//
//	w := sim.NewWorld(nil)
//	ctrl := &controller.Controller{Client: w.Client, Provider: w.Cloud, Clock: w.Clock, …}
//	go ctrl.Run(ctx)
//	w.Deployments.Create(ctx, inflate)
//	w.Deployments.Scale(ctx, "karpenter-test", "inflate", 5)
//	w.Until(ctx, 2*time.Minute, func() bool { return runningPods() == 5 })
package sim
