package ec2

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/nodeplan/nodeplan/cloudprovider"
)

// EC2API is the part of the EC2 client the provider calls; *ec2.Client implements it.
type EC2API interface {
	DescribeInstanceTypes(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(context.Context, *ec2.DescribeInstanceTypeOfferingsInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
	DescribeSubnets(context.Context, *ec2.DescribeSubnetsInput, ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
	DescribeSecurityGroups(context.Context, *ec2.DescribeSecurityGroupsInput, ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error)
	DescribeImages(context.Context, *ec2.DescribeImagesInput, ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error)
	DescribeLaunchTemplates(context.Context, *ec2.DescribeLaunchTemplatesInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
	CreateLaunchTemplate(context.Context, *ec2.CreateLaunchTemplateInput, ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error)
	// DeleteLaunchTemplate removes the single-use templates of launches that carry their own
	// bootstrap token (NodeClaim.BootstrapToken).
	DeleteLaunchTemplate(context.Context, *ec2.DeleteLaunchTemplateInput, ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error)
	CreateFleet(context.Context, *ec2.CreateFleetInput, ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error)
	DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	TerminateInstances(context.Context, *ec2.TerminateInstancesInput, ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error)
}

// SSMAPI is the part of the SSM client the provider calls (AMI aliases); *ssm.Client implements it.
type SSMAPI interface {
	GetParameter(context.Context, *ssm.GetParameterInput, ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// SQSAPI is the part of the SQS client the provider calls (interruption events); *sqs.Client
// implements it.
type SQSAPI interface {
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

// Prices gives the price per hour of an offering; package pricing's sources implement it. A
// Prices that also has Price(instanceType, zone, capacityType) (an effective-cost model) is
// asked that instead.
type Prices interface {
	OnDemand(instanceType string) (price float64, ok bool)
	Spot(instanceType, zone string) (price float64, ok bool)
}

// Cluster describes the Kubernetes cluster nodes join. The provider never calls the EKS API:
// everything userData needs comes from here.
type Cluster struct {
	// Name is the cluster's name; instances are tagged kubernetes.io/cluster/<Name>=owned.
	Name string
	// Endpoint is the API server URL, https://….
	Endpoint string
	// CABundle is the cluster CA certificate, PEM.
	CABundle []byte
	// ServiceCIDR is the Service IP range (AL2023 nodeadm needs it), e.g. 10.100.0.0/16.
	ServiceCIDR string
	// ClusterDNS is the cluster DNS Service IP, unless the node class's kubelet sets one.
	ClusterDNS string
	// KubernetesVersion is the minor version, e.g. "1.33", used to resolve AMI aliases.
	KubernetesVersion string
	// Kubeadm, when set, makes nodes of Custom-family classes join with kubeadm (see
	// [KubeadmJoin]) instead of running the class's userData verbatim.
	Kubeadm *KubeadmJoin
}

// Options configure a [Provider]. Cluster.Name, EC2 and NodeClass are required.
type Options struct {
	Cluster Cluster
	// Region is the EC2 region, for the topology.kubernetes.io/region label.
	Region string
	EC2    EC2API
	// SSM resolves AMI aliases and ssmParameter terms; nil makes such terms fail.
	SSM SSMAPI
	// SQS and QueueURL give interruption events; nil disables Interruptions.
	SQS      SQSAPI
	QueueURL string
	// QueueWait is the SQS long-poll wait, 0–20 s; zero means 20 s.
	QueueWait time.Duration
	// Prices prices offerings; an offering without a price is unavailable. Nil prices nothing.
	Prices Prices
	// NodeClass looks up an EC2NodeClass by name. It is called on every Create, InstanceTypes
	// and IsDrifted and must be safe for concurrent use.
	NodeClass func(name string) (*NodeClass, bool)
	// VMMemoryOverhead overrides DefaultVMMemoryOverhead (negative: none).
	VMMemoryOverhead float64
	// UnavailableFor is how long an offering that failed with a capacity error is avoided;
	// zero means 3 minutes. Repeated failures of the same offering double it, up to
	// MaxUnavailableFor (zero: 30 minutes).
	UnavailableFor    time.Duration
	MaxUnavailableFor time.Duration
	// MaxInstanceTypes bounds the types offered to one CreateFleet; zero means 60.
	MaxInstanceTypes int
	// CacheFor is how long instance types, subnets, security groups, images and launch
	// templates are cached; zero means 5 minutes (instance types: 12 hours).
	CacheFor time.Duration
	// BatchWindow is how long Get and Delete wait to merge concurrent calls into one
	// DescribeInstances or TerminateInstances; zero means 10ms, negative disables batching.
	BatchWindow time.Duration
	// Installation, when set, names this installation of the provider: every launch is tagged
	// nodeplan.io/installation=<Installation> (TagInstallation), and List, Get's bulk drift view
	// and garbage collection see only instances carrying it. It tells this installation's
	// instances from those of a Karpenter or a second nodeplan in the same cluster, which carry
	// the same cluster and karpenter.sh/nodepool tags, and lets an IAM policy scope
	// TerminateInstances to them (aws:ResourceTag/nodeplan.io/installation).
	Installation string
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Validate reports every missing or invalid option at once.
func (o *Options) Validate() error {
	var errs []error
	if o.Cluster.Name == "" {
		errs = append(errs, errors.New("ec2: Options.Cluster.Name is required"))
	}
	if o.EC2 == nil {
		errs = append(errs, errors.New("ec2: Options.EC2 is required"))
	}
	if o.NodeClass == nil {
		errs = append(errs, errors.New("ec2: Options.NodeClass is required"))
	}
	if o.SQS != nil && o.QueueURL == "" {
		errs = append(errs, errors.New("ec2: Options.QueueURL is required with Options.SQS"))
	}
	if o.QueueWait < 0 || o.QueueWait > 20*time.Second {
		errs = append(errs, fmt.Errorf("ec2: Options.QueueWait %v is not within 0–20s", o.QueueWait))
	}
	if o.VMMemoryOverhead >= 1 {
		errs = append(errs, fmt.Errorf("ec2: Options.VMMemoryOverhead %v is not a fraction below 1", o.VMMemoryOverhead))
	}
	if o.Cluster.Kubeadm != nil {
		if err := o.Cluster.Kubeadm.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return joinErrors(errs)
}

// StaticNodeClasses returns a NodeClass lookup over a fixed set of classes.
func StaticNodeClasses(classes ...*NodeClass) func(string) (*NodeClass, bool) {
	m := map[string]*NodeClass{}
	for _, c := range classes {
		m[c.Name] = c
	}
	return func(name string) (*NodeClass, bool) { c, ok := m[name]; return c, ok }
}

// Provider is the EC2 [cloudprovider.Provider]. Create it with New; it is safe for concurrent
// use and starts no goroutines: caches refresh on the calls that find them stale.
type Provider struct {
	opts Options
	log  *slog.Logger

	catalog     catalogCache
	classes     classCache
	templates   templateCache
	unavailable unavailableCache
	describe    batcher[string, instanceResult]
	terminate   batcher[string, terminateResult]
	drift       driftSnapshot
}

var _ interface {
	cloudprovider.Provider
	cloudprovider.InterruptionSource
	cloudprovider.Repairer
} = (*Provider)(nil)

// New returns a provider, or the problems with opts.
func New(opts Options) (*Provider, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	p := &Provider{opts: opts, log: opts.Logger}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	window := opts.BatchWindow
	if window == 0 {
		window = 10 * time.Millisecond
	}
	p.describe = batcher[string, instanceResult]{window: window, max: 500, run: p.describeBatch}
	p.terminate = batcher[string, terminateResult]{window: window, max: 500, run: p.terminateBatch}
	return p, nil
}

func (p *Provider) now() time.Time {
	if p.opts.Now != nil {
		return p.opts.Now()
	}
	return time.Now()
}

func (p *Provider) cacheFor() time.Duration {
	if p.opts.CacheFor > 0 {
		return p.opts.CacheFor
	}
	return 5 * time.Minute
}

// RepairPolicies implements [cloudprovider.Repairer] with the policies Karpenter's AWS provider
// uses: a node NotReady for 30 minutes, or whose accelerators, storage, networking, kernel or
// container runtime report a problem, is replaced.
func (p *Provider) RepairPolicies() []cloudprovider.RepairPolicy {
	return []cloudprovider.RepairPolicy{
		{ConditionType: "Ready", ConditionStatus: "False", TolerationDuration: 30 * time.Minute},
		{ConditionType: "Ready", ConditionStatus: "Unknown", TolerationDuration: 30 * time.Minute},
		{ConditionType: "AcceleratedHardwareReady", ConditionStatus: "False", TolerationDuration: 10 * time.Minute},
		{ConditionType: "StorageReady", ConditionStatus: "False", TolerationDuration: 30 * time.Minute},
		{ConditionType: "NetworkingReady", ConditionStatus: "False", TolerationDuration: 30 * time.Minute},
		{ConditionType: "KernelReady", ConditionStatus: "False", TolerationDuration: 30 * time.Minute},
		{ConditionType: "ContainerRuntimeReady", ConditionStatus: "False", TolerationDuration: 30 * time.Minute},
	}
}

// cached is a value fetched at a time, guarded by its own mutex so one slow fetch does not
// block unrelated caches.
type cached[T any] struct {
	mu      sync.Mutex
	value   T
	fetched time.Time
	ok      bool
}
