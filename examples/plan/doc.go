// Command plan is nodeplan's what-if tool: it runs the provisioning solver or the disruption
// planner on a live cluster (read-only) or a snapshot of one saved with kubectl, and prints what
// nodeplan would do and why — without touching the cluster or the cloud.
//
// provision decides which nodes to launch for the pending pods (pods without spec.nodeName),
// after filling the free room of the existing nodes, and explains every pod it cannot place: which
// constraint of which NodePool blocked it. disrupt decides which managed nodes to delete or
// replace, and says for every other managed node why it stays.
//
// A node's NodePool, instance type, zone and capacity type come from its well-known labels
// (karpenter.sh/nodepool, node.kubernetes.io/instance-type, topology.kubernetes.io/zone,
// karpenter.sh/capacity-type); its price from the catalog. Pods with spec.nodeName run on that
// node; finished pods (Succeeded, Failed) are ignored, and so are pending DaemonSet pods, which
// the DaemonSet controller creates for one node each.
//
// Input is what kubectl prints: a List, a typed list (PodList…), one object, or several YAML
// documents, in YAML or JSON. Bad input — an unreadable file, a wrong kind, an invalid quantity,
// an unknown operator — is one error per problem naming the file and the object, exit status 2,
// and nothing on standard output. Exit status 1 is an internal failure; 0 is success, also when
// some pods cannot be placed: that is a result, reported in the output.
//
// # Usage
//
// On a live cluster (read-only: list only; examples/plan/shadow-rbac.yaml is the ClusterRole):
//
//	plan provision --current-context          # or --kubeconfig FILE [--context NAME]
//	plan disrupt --current-context
//	plan catalog --current-context > catalog.json
//	plan watch --current-context [--interval 1m] [--metrics-addr :9090] [-v]
//
// Without --catalog the catalog is built for the cluster's region (--region, else the nodes'
// region label, else the AWS configuration): from EC2 and the Pricing API when AWS credentials
// answer, else (or with --offline) from the data nodeplan embeds, served by an in-process
// ec2test so both take the same code path. Every assumption is a NOTE in the output: zones
// assumed, spot prices modelled, and, for a region with no embedded prices, us-east-1's prices
// with a WARNING, as Karpenter falls back. A pool whose EC2NodeClass changes what nodes
// allocate (maxPods, reserved resources, root volume) gets a catalog of its own.
//
// --cost-model FILE applies what you really pay (pricing.CostModel: discounts, Savings Plan and
// RI rates), then NodeOverlays (--nodeoverlays FILE, or the cluster's) adjust prices and add
// extended resources as in Karpenter; node classes' volumes and --node-cost add a per-node $/h.
// provision also reports what the managed nodes cost against the same pods planned from
// scratch and the lower bound.
//
// watch is shadow mode: beside the incumbent autoscaler it plans every pass as if in charge,
// acts on nothing, and prints what the incumbent launched and removed against what nodeplan
// would have done and what that costs or saves, with nodeplan_shadow_* metrics.
//
// From files (a snapshot; file flags also replace single kinds of a live read):
//
//	go run ./examples/plan provision --pods pods.yaml --nodepools nodepools.yaml --catalog catalog.json \
//		[--daemonsets ds.yaml] [--nodes nodes.yaml] [--node-cost 0.012] [-o text|json|yaml|nodes]
//
//	go run ./examples/plan disrupt --pods pods.yaml --nodes nodes.yaml --nodepools nodepools.yaml \
//		--catalog catalog.json [--daemonsets ds.yaml] [--pdbs pdbs.yaml] [--now 2026-11-22T10:00:00Z] \
//		[--node-cost 0.012] [-o text|json|yaml|nodes]
//
// A node costs more than its instance: the EBS volumes of its pool's EC2NodeClass
// (--ec2nodeclasses, or the cluster's; spec.blockDeviceMappings, 20Gi gp3 when there are none)
// are priced at us-east-1 list prices (ec2.NodeClass.VolumeCost; a 20Gi gp3 root is about
// $0.0022/h), with a NOTE listing each pool's figure, or a NOTE naming the pools whose class
// was not given and whose volumes are therefore not priced. --node-cost adds, in $/h, what
// else every node brings (a public IPv4 address $0.005, a $20/month monitoring agent $0.027).
// Plans weigh both, and their cost includes both: provision's last line says how much of the
// total it is ("total $1.4066/h ($1.0666/h of it node cost), ..., 1 node"), its JSON nodeCost.
//
// --nodeclaims FILE (or, from a cluster, its karpenter.sh/v1 NodeClaims) gives the launches in
// flight: a NodeClaim whose Node is not in the snapshot (by status.nodeName or providerID) is
// room pending pods use before any new node, at its status.allocatable once launched, else the
// smallest of its instance types; one being deleted takes no pod but counts for its pool's
// limits. A claim whose Node is there is that node.
//
// --preference-policy takes Karpenter's PREFERENCE_POLICY words: Respect (preferences honoured
// whatever they cost, relaxed only where a pod could not be placed, Karpenter's default) or
// Ignore; the default, CostAware, honours them where they cost at most 5% more.
//
// Take the snapshot with
//
//	kubectl get pods -A -o yaml > pods.yaml
//	kubectl get nodes -o yaml > nodes.yaml
//	kubectl get nodepools -o yaml > nodepools.yaml
//	kubectl get nodeclaims -o yaml > nodeclaims.yaml
//	kubectl get daemonsets -A -o yaml > ds.yaml
//	kubectl get pdb -A -o yaml > pdbs.yaml
//
// The catalog is a JSON object with an "instanceTypes" array, in the shape of
// shared/data/catalog.json. examples/plan/testdata holds a small snapshot to try (its spot prices
// are synthetic):
//
//	go run ./examples/plan provision --pods examples/plan/testdata/pods.yaml \
//		--nodepools examples/plan/testdata/nodepools.yaml --catalog examples/plan/testdata/catalog.json \
//		--daemonsets examples/plan/testdata/ds.yaml --nodes examples/plan/testdata/nodes.yaml
//
//	go run ./examples/plan disrupt --pods examples/plan/testdata/pods.yaml \
//		--nodes examples/plan/testdata/nodes.yaml --nodepools examples/plan/testdata/nodepools.yaml \
//		--catalog examples/plan/testdata/catalog.json --daemonsets examples/plan/testdata/ds.yaml \
//		--pdbs examples/plan/testdata/pdbs.yaml --now 2026-11-22T10:00:00Z
//
// # Output
//
// -o text (the default) prints tables for people: the nodes to launch with their $/h, the pods
// placed on existing nodes, every unschedulable pod with the reason each NodePool gave, and a
// summary with the cost over the lower bound no plan can beat; or, for disrupt, the commands and
// the nodes that stay, with why.
//
// -o json prints a document that says what it is: apiVersion plan.nodeplan.io/v1alpha1, and
// kind ProvisionPlan or DisruptionPlan. Within an apiVersion fields are only added, never
// renamed, removed or given another meaning; a change that would break a reader comes with a
// new apiVersion. For provision:
//
//	{"apiVersion": "plan.nodeplan.io/v1alpha1", "kind": "ProvisionPlan",
//	 "nodeClaims": [{"nodePool", "instanceType", "zone", "capacityType", "price",
//	                 "instanceTypeOptions": [names], "labels": {key: value},
//	                 "requirements": [{"key", "operator", "values": [values], "minValues"}],
//	                 "pods": ["namespace/name"]}],
//	 "existingNodes": [{"node", "pods": ["namespace/name"]}],
//	 "inFlightNodeClaims": [{"nodeClaim", "pods": ["namespace/name"]}],
//	 "unschedulable": [{"pod", "code", "reason"}],
//	 "totalPrice", "nodeCost", "lowerBound", "solveSeconds", "comparison", "notices": [sentences]}
//
// and for disrupt, where every managed node is in a command or in blocked:
//
//	{"apiVersion": "plan.nodeplan.io/v1alpha1", "kind": "DisruptionPlan",
//	 "commands": [{"action": "delete"|"replace", "reason", "nodes": [names],
//	               "replacements": [{"instanceType", "zone", "capacityType", "price",
//	                                 "labels", "requirements"}],
//	               "pods": ["namespace/name"], "oneAtATime": [PDBs], "price",
//	               "replacementPrice", "replacementWorstCase", "savings"}],
//	 "blocked": [{"node", "code", "reason"}], "notices": [sentences]}
//
// A command's price is what its nodes cost now, replacementPrice its replacements at the
// offerings planned (node costs on both sides), and savings the difference, negative when the
// replacements are dearer: the figure the controller logs and counts, and the one disrupt's
// and watch's text and watch's would-save gauge report. replacementWorstCase prices the
// replacements at the dearest offering their options could launch at, the bar the planner
// judged the command by so its saving holds whatever the cloud picks; the text names it when it
// differs.
//
// A NodeClaim's labels are the ones the node gets (its pool's, and every requirement pinned to
// one value); its requirements, in Karpenter's NodeClaim spec.requirements form (minValues
// only when set), are what any of its instance type options satisfies, so the values left open
// (a zone, a capacity type) are there too; zone and capacityType are the cheapest offering
// among them, the one price counts.
//
// -o yaml prints the same document as YAML (keys sorted, as kubectl -o yaml prints them).
//
// provision -o nodes is the plan for people, node by node as eks-node-viewer shows a cluster:
// each new node with its pool, instance type, zone, capacity type and $/h, bars of the cpu and
// memory its pods and DaemonSets request against what the type allocates, and its pods; each
// existing node that receives pods (all its pods' requests against its status.allocatable,
// the pods placed listed); the in-flight NodeClaims that receive pods; then the new nodes
// together, their $/h against the lower bound, and the pods left unschedulable. It fits in 100
// columns:
//
//	go run ./examples/plan provision --pods examples/plan/testdata/pods.yaml \
//		--nodepools examples/plan/testdata/nodepools.yaml --catalog examples/plan/testdata/catalog.json \
//		--daemonsets examples/plan/testdata/ds.yaml --nodes examples/plan/testdata/nodes.yaml -o nodes
//
//	default  r5.large    us-east-1c  spot       $0.0375/h  1 pod
//	    cpu     [█████████████████░░░░░░░░░░░░░]   58%  1125m of 1930m
//	    memory  [██████████████████████████░░░░]   86%  12.1Gi of 14.1Gi
//	    pods    shop/cache-5d9f7b6c84-w9q2h
//
// disrupt -o nodes shows every node the same way (its pods' requests against its
// status.allocatable, its pods without DaemonSet and mirror pods) and, last, what the plan does
// with it: the command that deletes or replaces it, with its reason and saving, or why it stays;
// then the replacements to launch, as provision shows new nodes; then the fleet's $/h and what
// the commands save.
//
// Prices are USD per hour; solveSeconds is the time spent inside the solver. Slices are never
// null, and are in the solver's and planner's stable order.
package main
