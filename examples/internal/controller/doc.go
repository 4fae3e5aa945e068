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
//   - Disruption: every DisruptionInterval the planner picks commands; each is carried out with
//     its replacements launched and initialized first, then the node tainted
//     karpenter.sh/disrupted:NoSchedule, its pods evicted through the Eviction API (PDBs
//     honoured, 429s retried), force-deleted only once the terminationGracePeriod has run out,
//     and finally Provider.Delete. Interruptions from the provider are drained at once.
//   - Restarts: there is no NodeClaim object; the cloud's instances and the Nodes are the
//     record. On start the claim table is rebuilt from Provider.List and the Nodes; an instance
//     that never registers is deleted after Timeouts.Registration.
//   - Ownership: the controller acts only on its claims. An instance no claim owns is reported
//     once and left alone; a Node without a claim is never touched; a claim's instance must be
//     missing from [MissedListings] listings in a row over Timeouts.Collect before the claim is
//     given up, and even then a Ready Node is not deleted. A NodePoolSource that cannot say
//     which pools exist stops provisioning and disruption; a claim whose pool is gone is
//     drained, not killed.
//   - High availability: [LeaderElection] runs the controller only while holding a Lease.
//   - Observability: log/slog lines with the messages operators grep for ("launched
//     nodeclaim", "could not schedule pod", "disrupting node(s)"), Events on pods and nodes,
//     and Prometheus [Metrics].
//
// It does not create NodeClaim or NodePool custom resources: NodePools come from a
// [NodePoolSource] (a file or a ConfigMap with Karpenter v1 YAML).
//
// # Usage
//
//	c := &controller.Controller{
//		Client:    clientset,
//		Provider:  provider,
//		NodePools: controller.StaticNodePools(pools),
//		Solve:     scheduling.Solve,
//		Logger:    slog.Default(),
//	}
//	err := c.Run(ctx)
package controller
