// Package controller is nodeplan's example node autoscaler on client-go: the loop that
// observes pods and nodes, asks scheduling.Solve what to launch and a [Planner] what to remove,
// and acts through a cloudprovider.Provider and the Kubernetes API.
//
// # What it does
//
//   - Provisioning: pods the scheduler marked unschedulable are batched (a batch closes after
//     BatchIdle without a new one, or BatchMax after it opened), solved together with the
//     existing nodes and the claims still on their way, and the new NodeClaims launched with
//     bounded concurrency. Each claim is tracked from launch to a registered, initialized node,
//     matched by provider ID, with launch and registration timeouts ([Tracker]).
//   - Volumes: pending pods' claims are resolved to zones (scheduling.ResolveVolumes, from the
//     PVC, PV, StorageClass and CSINode informers) before the solve; pods whose volumes no zone
//     can serve are reported, not solved.
//   - Disruption: every DisruptionInterval the planner picks commands; each is carried out with
//     its replacements launched and initialized first, then the node tainted
//     karpenter.sh/disrupted:NoSchedule, its pods evicted through the Eviction API (PDBs
//     honoured, 429s retried), force-deleted only once the terminationGracePeriod has run out,
//     and finally Provider.Delete. Interruptions from the provider are drained at once.
//   - NodeClaims are the record: each launch is a karpenter.sh/v1 NodeClaim, created before the
//     cloud call (a crash mid-launch leaves an object that says so, which the next run binds to
//     the instance the cloud made for it), with the finalizer karpenter.sh/termination and the
//     annotation nodeplan.io/installation. Its status follows the claim — providerID, imageID,
//     nodeName, capacity, allocatable and the conditions Launched, Registered, Initialized,
//     Ready, Drifted (reason and a message naming the old and new value), Consolidatable (its
//     pool's consolidateAfter has passed since the last pod event; never for static pools)
//     and DisruptionReason — and it goes only once the instance is gone. The
//     claim table ([Tracker]) is a cache of these objects; a restarted controller rebuilds it
//     from them ([Tracker.Load]) and Provider.List.
//   - Drift, in Karpenter's order, first match wins: NodePoolDrifted (the pool's template hash,
//     Karpenter's own v3 rules in package poolhash, stamped on the NodePool and on each
//     NodeClaim and Node at launch, changed: labels, annotations, taints, startup taints, node
//     class, expireAfter, terminationGracePeriod), RequirementsDrifted (the claim's labels no
//     longer meet the pool's requirements, which are not hashed), then the provider's verdict
//     (AMIDrift naming the node's image and the class's current ones, SubnetDrift,
//     SecurityGroupDrift, NodeClassDrift). Drifted nodes are replaced by the planner within the
//     pools' Drifted budgets.
//   - Static NodePools (spec.replicas): the pool holds exactly that many nodes whatever the
//     pending pods (the solver never launches for it; its nodes are room for pods all the
//     same), within limits.nodes; a lower count removes the surplus at once (unregistered
//     claims first, then empty nodes, then the least busy, do-not-disrupt last); drifted nodes
//     are replaced from the template, replacement first, within the pool's Drifted budget;
//     never consolidated (no Consolidatable condition). See static.go.
//   - CapacityBuffers (with CapacityBuffers set): each autoscaling.x-k8s.io/v1beta1
//     CapacityBuffer's slots (a PodTemplate's or a workload's pod template times replicas, a
//     percentage of the workload, capped by limits) are virtual pods added to every solve and
//     to the planner's pending pods: room is launched or kept for them, nothing binds to them,
//     and real pods take that room first. See buffers.go.
//   - Node cost: every solve and disruption plan weighs a node at its instance's price plus
//     NodeCost ($/h per node and per pool) plus, with NodeClass set, the EBS volumes of its
//     pool's EC2NodeClass (ec2.NodeClass.VolumeCost); the solve's log line and the Solved
//     event report the node count, the cost and the part of it that is the nodes' own. A class
//     whose volumes cannot be priced keeps its pool out of the pass, with an error naming the
//     class and the mapping: never a free volume. See instanceTypes in provision.go.
//   - EC2NodeClass status: with a provider that resolves node classes
//     (cloudprovider.NodeClassResolver), each class's status carries the resolved subnets,
//     security groups, AMIs (with their architecture requirement) and instance profile.
//   - Termination by finalizer: registered Nodes get the same finalizer and an owner
//     reference to their NodeClaim. Deleting either (`kubectl delete nodeclaim|node`) drains
//     the node through the Eviction API, terminates the instance and only then lets the
//     objects go — the path disruption takes too.
//   - Ownership: the controller acts only on its claims — the NodeClaims carrying its
//     installation's annotation, or, with Adopt, those of a Karpenter controller it replaces.
//     An instance no claim owns is reported once and left alone; a Node without a claim is
//     never touched; a claim's instance must be missing from [MissedListings] listings in a
//     row over Timeouts.Collect before the claim is given up, and even then a Ready Node is
//     not deleted. A NodePoolSource that cannot say which pools exist stops provisioning and
//     disruption; a claim whose pool is gone is drained, not killed.
//   - High availability: [LeaderElection] runs the controller only while holding a Lease.
//   - Observability: log/slog lines with the messages operators grep for ("launched
//     nodeclaim", "could not schedule pod", "disrupting node(s)"), Events on pods and nodes,
//     and Prometheus [Metrics]; for programs, the same steps as typed [Event]s
//     (Controller.Events), which the simulation's timeline is printed from.
//
// NodePools come from a [NodePoolSource] (a file or a ConfigMap with Karpenter v1 YAML).
//
// # Karpenter's CRDs: a dependency, not a copy
//
// The objects are Karpenter's own: [CRDs] returns the CustomResourceDefinitions that
// github.com/aws/karpenter-provider-aws/pkg/apis (v1.14.1) embeds — EC2NodeClass, NodeClaim,
// NodePool, NodeOverlay, with their schemas, CEL rules and printer columns — so manifests
// written for Karpenter apply unchanged and `kubectl get nodeclaims -o wide` prints the same
// columns. The alternatives were sigs.k8s.io/karpenter/pkg/apis (the same NodePool and
// NodeClaim CRDs without the AWS label rules, and no EC2NodeClass) or writing them here (a
// second copy to keep in step with every Karpenter release). The cost of the dependency: the
// examples module requires the AWS provider module, and the controller binary links
// operatorpkg/object and parts of controller-runtime's client (a few dozen more packages); the
// core nodeplan module is untouched. The controller reads and writes the objects through a
// dynamic client as unstructured data, never through Karpenter's Go types, so the only thing
// taken from the module is the CRDs.
//
// # Usage
//
//	c := &controller.Controller{
//		Client:    clientset,
//		Dynamic:   dynamicClient, // NodeClaims; Karpenter's CRDs installed
//		Provider:  provider,
//		NodePools: controller.StaticNodePools(pools),
//		Solve:     scheduling.Solve,
//		Logger:    slog.Default(),
//	}
//	err := c.Run(ctx)
package controller
