// Package cloudprovider is the seam between nodeplan's decisions and a cloud: the [Provider]
// interface that launches, lists, inspects and deletes nodes, the typed errors a controller
// branches on, and [Memory], an in-memory provider for tests and simulations.
//
// A Provider does effects, not decisions: the solver (package scheduling) chooses what to launch
// and hands the provider a [nodeplan.NodeClaim] whose InstanceTypeOptions are already ranked; the
// provider buys the cheapest option the cloud can supply right now and reports what it bought in
// the claim's Status.
//
// Capabilities not every cloud has are separate interfaces a controller detects with a type
// assertion: [InterruptionSource] (spot interruptions, scheduled maintenance) and [Repairer]
// (node conditions after which a node is replaced).
//
// The package does not start goroutines, keep clocks or talk to Kubernetes. Package
// cloudprovider/ec2 implements Provider for Amazon EC2.
//
// # Usage
//
//	var p cloudprovider.Provider = &cloudprovider.Memory{Catalog: catalog}
//	launched, err := p.Create(ctx, claim)
//	switch {
//	case cloudprovider.IsInsufficientCapacity(err):
//		// forget the claim; the next solve sees the offerings as unavailable
//	case err != nil:
//		// record the reason (errors.As *cloudprovider.LaunchError) and retry later
//	}
//	_ = launched.Status.ProviderID // e.g. memory:///us-east-1a/i-0000000000000001
//
//	// later
//	if err := p.Delete(ctx, launched.Status.ProviderID); cloudprovider.IsNotFound(err) {
//		// gone: remove the finalizer
//	}
package cloudprovider
