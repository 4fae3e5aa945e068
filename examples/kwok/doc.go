// Package kwok is a [cloudprovider.Provider] with no cloud behind it: an instance is a Node
// object. Create writes a Node for the claim — the instance type's labels, capacity and
// allocatable from a catalog (the controller gives it the embedded EC2 catalog or a catalog
// file), the claim's labels and taints, karpenter.sh/unregistered, provider ID
// kwok://<claim name> as in Karpenter's kwok provider — Delete removes it, and Get and List
// answer from the Nodes labelled nodeplan.io/kwok=<Owner>. [Provider.Run] plays the kubelets:
// Ready after a delay, Leases renewed, pods bound to the Nodes reported Running, their
// deletions confirmed. The controller (examples/controller --provider kwok) then runs unchanged
// on any cluster — kind, k3d, a real one with a dedicated NodePool — or on the e2e's control
// plane, and kubectl sees NodeClaims launch, register, initialize and go, with no cloud account.
//
// Faults are injected by Go calls (SetCapacityError, SetImageID for drift, Interrupt) or, for a
// person with kubectl, by annotating a Node: nodeplan.io/kwok-interrupt=SpotInterruption
// delivers an interruption, nodeplan.io/kwok-ready=False makes the kubelet report NotReady.
//
// It is the second real provider, and it exists to prove the interface. Where it had to reach
// past cloudprovider.Provider — what the next cloud's provider will cost too:
//
//   - The kubelet. A cloud's machines run their own kubelet; here something must play it, and
//     the interface has no place for it: Run is a separate loop the program starts beside the
//     controller (examples/controller/cluster.go does), not something the controller calls.
//   - A Kubernetes client. The interface knows nothing of the cluster; this provider writes
//     Nodes, node status, Leases in kube-node-lease and pod status, so it needs its own client
//     and RBAC beyond the controller's (nodes create/delete, nodes/status, pods/status,
//     pods delete, leases in kube-node-lease). The EC2 provider likewise takes the cluster's
//     endpoint and CA through its own Options, outside the interface.
//   - "Terminated" versus "the Node object is gone". Provider.Delete's NotFound means the
//     instance is gone; the controller's termination finalizer keeps the Node object after
//     that, and here the object is the instance. So Delete records the termination on the
//     Node (nodeplan.io/kwok-terminated), and Get and List stop seeing it, as EC2 reports a
//     terminated instance whose Node still exists.
//   - The Node exists before Create returns. The controller matches Nodes to claims by provider
//     ID whenever they appear, so this needed no change; Status.NodeName is left empty, as a
//     cloud's Create leaves it, and the controller learns it at registration.
//   - Node classes. The controller serves NodePools whose nodeClassRef is an EC2NodeClass
//     (examples/internal/controller/clusterpools.go) and prices its EBS volumes into the node
//     cost; this provider ignores the class, so the lab's pools keep their EC2NodeClass, whose
//     status nothing fills (this provider is not a cloudprovider.NodeClassResolver). Its
//     cloud-call metrics are labelled provider "aws" (metrics.go) whatever the provider is.
//   - Interruptions from kubectl. A cloud delivers them through a queue (SQS for EC2); here Run
//     turns Node annotations into the events Interruptions returns, so it only works while Run
//     runs.
//
// What it does not do: it runs no containers (a pod "runs" when its status says so), gives
// pods no IPs, serves no kubelet API (kubectl logs and exec fail), and deletes the pods of a
// Node only while that Node is still there to be seen (a cluster's pod garbage collector
// handles the rest).
//
// # Usage
//
//	p := &kwok.Provider{Client: client, Catalog: sim.Catalog(), ReadyAfter: 3 * time.Second}
//	go p.Run(ctx) // the kubelets
//	c := &controller.Controller{Client: client, Provider: p, ...}
//	launched, err := p.Create(ctx, claim) // a Node named claim.Name appears, NotReady
//	_ = launched.Status.ProviderID         // kwok://<claim name>
//	err = p.Delete(ctx, launched.Status.ProviderID) // nil: terminating; later NotFound
package kwok
