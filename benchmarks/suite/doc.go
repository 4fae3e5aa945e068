// Package suite is nodeplan's published scenario suite: deterministic provisioning problems,
// from a few identical replicas to 100,000 pods, with the topology, taints, weights and limits
// real clusters use. Every solver in the comparison — nodeplan and its peers — gets exactly the
// same inputs from here.
//
// Scenarios are generated, never downloaded: pods come from fixed-seed PCG streams, and the
// instance catalog (164 us-east-1 types with on-demand and modelled spot prices) is embedded in
// the package, copied from the project's shared data by go generate. Generating twice gives
// equal inputs.
//
// The suite does not run anything: cmd/bench runs it through nodeplan, and the karpenter
// module runs it through Karpenter's scheduler as well.
//
// # Usage
//
//	for _, sc := range suite.Scenarios(suite.Full) {
//		res, err := scheduling.Solve(ctx, sc.Input)
//		...
//	}
//
// suite.Small gives the same scenarios at sizes that solve in well under a second, for tests.
package suite

//go:generate cp ../../../shared/data/catalog.json catalog.json
