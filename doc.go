// Package nodeplan is the vocabulary of the nodeplan SDK for Kubernetes node autoscaling: the
// types every other package speaks — [NodePool], [InstanceType] with its [Offering]s, [NodeClaim],
// label [Requirements], disruption [Budget]s — plus the Kubernetes rules they rest on (effective
// pod requests, taints and tolerations, do-not-disrupt) and a decoder for Karpenter v1 manifests,
// so NodePools written for Karpenter work unchanged.
//
// # The packages
//
//   - scheduling: a pure solver. Pending pods + NodePools + instance types + existing nodes →
//     the nodes to launch, where each pod goes, and why any pod cannot be placed.
//   - disruption: a pure planner. Managed nodes + budgets + PDBs → which nodes to delete or
//     replace, and why every other node stays.
//   - pricing: on-demand and spot prices, from embedded tables or the AWS APIs, and the user's
//     own cost model.
//   - cloudprovider: the Provider interface that turns a NodeClaim into a machine, an in-memory
//     provider, and (cloudprovider/ec2) the EC2 implementation.
//   - examples/controller: a real controller on client-go wiring them together; it runs in
//     simulation with no flags.
//
// # One pass of the loop
//
//	observe ──► build Input ──► Solve / Plan (pure) ──► Result / Plan ──► act ──► observe …
//
// The controller observes pods, nodes and prices; the pure packages decide; the controller acts
// through a cloudprovider (launch, delete) and the Kubernetes API (taint, evict), then observes
// again. Only the controller, cloudprovider and pricing do I/O. Solve and Plan never read the
// clock (time is an input), never log, keep no state between calls and give equal results for
// equal inputs — so a decision can be replayed, tested and explained.
//
// This package itself is pure: no I/O, no goroutines, no package-level mutable state.
//
// Where Kubernetes has a library for a rule, the rule comes from it rather than from a copy:
// [PodRequests] is k8s.io/component-helpers/resource.PodRequests with kube-scheduler's options,
// so pod-level resources, sidecars, init containers, overhead and in-place resizes count exactly
// as kube-scheduler counts them. Besides k8s.io/api and k8s.io/apimachinery, that helper library
// (which needs nothing else at run time) is the package's only dependency.
//
// # Usage
//
//	pools, err := nodeplan.DecodeNodePools(yamlBytes) // Karpenter v1 NodePool YAML
//	types, err := nodeplan.DecodeCatalog(catalogJSON)   // instance types with offerings
//	pod := nodeplan.RequirementsFromLabels(map[string]string{"kubernetes.io/arch": "arm64"})
//	ok := types[0].Requirements().Compatible(pod) == nil
package nodeplan
