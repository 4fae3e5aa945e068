// Package ec2 implements [cloudprovider.Provider] for Amazon EC2 with aws-sdk-go-v2, for EKS
// and for self-managed (kubeadm) clusters alike: it never calls the EKS API.
//
// The capacity model — what each instance type holds and what the kubelet keeps — reproduces
// Karpenter's AWS provider exactly, so a solver plans with the allocatable a Karpenter cluster
// would see (see [Capacity], [Overhead] and [NewInstanceType]; every type of the shared data is
// checked). Its assumptions are configurable: clusters whose CNI does not hand out VPC
// addresses set the node class's kubelet maxPods, and clusters that measured their VM memory
// overhead set [Options].VMMemoryOverhead (Karpenter's 7.5% over-estimates large instances).
//
// [NodeClass] is Karpenter's EC2NodeClass, with its validation and its manifest codec: the
// package registers the kind with nodeplan's manifest stream at init, so
// [nodeplan.DecodeManifests] reads EC2NodeClasses in any program that imports it.
//
// A [Provider] resolves a NodeClass (subnets, security groups, AMIs by alias through SSM, by
// id, name or tags), renders userData (AL2023 nodeadm, Bottlerocket TOML, a kubeadm join for
// Custom images when [Cluster].Kubeadm is set, or the class's own), keeps launch templates
// named by a hash of their content, and launches each NodeClaim with one instant CreateFleet.
//
// Every kubelet setting of the class reaches the node, together with the values the capacity
// model computed for each instance type (max pods, kube-reserved, the memory and nodefs hard
// eviction thresholds): in the AL2023 NodeConfig's spec.kubelet.config, in Bottlerocket's
// settings.kubernetes, in the kubeadm join's KubeletConfiguration patch. So the allocatable a
// solver plans with is the allocatable the kubelet reports, and instance types that differ in
// those values get launch templates of their own. The class's own userData is merged: AL2023
// NodeConfig parts come before the provider's (nodeadm lets the later win), Bottlerocket TOML
// keys the provider does not set are kept, node labels merged.
// Offerings that fail with capacity errors are avoided for 3 minutes, longer when they keep
// failing, so a short offering does not churn launches. Interruption events come from an SQS
// queue fed by EventBridge.
//
// What it does not do: create instance profiles (a class's Role names an existing instance
// profile of the same name; or set InstanceProfile), capacity reservations, Windows
// userData, AL2 (end-of-life; EC2NodeClass validation refuses it), prefix delegation, NodeOverlays, or background refreshes — caches refresh on the
// calls that find them stale, and no goroutine outlives a call.
//
// # IAM permissions
//
// The controller's role needs:
//
//	ec2:DescribeInstanceTypes, ec2:DescribeInstanceTypeOfferings   instance types and zones
//	ec2:DescribeSubnets, ec2:DescribeSecurityGroups, ec2:DescribeImages   node class resolution
//	ec2:DescribeLaunchTemplates, ec2:CreateLaunchTemplate           launch templates
//	ec2:DeleteLaunchTemplate                                        single-use (per-launch token) templates
//	ec2:CreateFleet, ec2:RunInstances, ec2:CreateTags               launching, tag-on-create
//	ec2:DescribeInstances, ec2:TerminateInstances                   Get, List, Delete, drift
//	iam:PassRole                                                    the nodes' role
//	ssm:GetParameter                                                AMI aliases, ssmParameter terms
//	sqs:ReceiveMessage, sqs:DeleteMessage                           interruption events (optional)
//	ec2:DescribeSpotPriceHistory, pricing:GetProducts               live prices (package pricing)
//
// and, once per account, iam:CreateServiceLinkedRole for spot (AWSServiceRoleForEC2Spot). The
// cluster tag kubernetes.io/cluster/<name> does not tell this installation's instances apart:
// EKS managed node groups and a Karpenter in the same cluster carry it too. Set
// [Options].Installation and scope TerminateInstances to aws:ResourceTag/nodeplan.io/installation;
// limit CreateTags to tag-on-create with an ec2:CreateAction condition.
//
// # Usage
//
//	cfg, _ := config.LoadDefaultConfig(ctx)
//	p, err := ec2.New(ec2.Options{
//		Cluster: ec2.Cluster{Name: "prod", Endpoint: "https://…", CABundle: ca,
//			ServiceCIDR: "10.100.0.0/16", ClusterDNS: "10.100.0.10", KubernetesVersion: "1.33"},
//		Region:    cfg.Region,
//		EC2:       awsec2.NewFromConfig(cfg),
//		SSM:       ssm.NewFromConfig(cfg),
//		Prices:    prices, // a pricing.Source
//		NodeClass: ec2.StaticNodeClasses(classes...),
//	})
//	its, err := p.InstanceTypes(ctx, pool)   // for the solver
//	claim, err = p.Create(ctx, claim)         // for each NodeClaim it returns
//
// Tests run it against package ec2test, a local EC2/SSM/SQS/Pricing endpoint.
package ec2
