package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"
	apiversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
	"github.com/nodeplan/nodeplan/examples/internal/logging"
	"github.com/nodeplan/nodeplan/examples/kwok"
	"github.com/nodeplan/nodeplan/pricing"
	"github.com/nodeplan/nodeplan/scheduling"
)

// runCluster runs the controller against the cluster of o.kubeconfig, launching nodes with
// the provider --provider names: EC2 instances with the credentials of the environment (see
// README.md for the IAM permissions), or kwok's Nodes with no cloud at all.
func runCluster(ctx context.Context, o options, metrics *controller.Metrics, planner controller.Planner, stderr io.Writer) error {
	// The settings are checked before anything global changes (klog's routing).
	if err := o.lab.checkProvider(); err != nil {
		return err
	}
	if o.clusterName == "" && o.lab.provider == "ec2" {
		return errors.New("--cluster-name (CLUSTER_NAME) is required with the EC2 provider: instances are tagged with it")
	}
	if o.nodePools != "" && o.nodePoolsConfigMap != "" {
		return errors.New("give at most one of --nodepools (a file) and --nodepools-configmap (namespace/name); with neither, the cluster's NodePools and EC2NodeClasses are used")
	}
	log := newLogger(o.logFormat, stderr, o.verbose, o.logLevel)
	logging.RouteKlog(log)
	for _, note := range o.inert {
		log.Info("Karpenter setting has no effect here", "setting", note)
	}
	costModel, overlays, err := loadPrices(o)
	if err != nil {
		return err
	}
	restCfg, err := restConfig(o)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	ver, err := client.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("asking the API server its version: %w", err)
	}

	// NodePools and EC2NodeClasses come together, from a file, a ConfigMap or the cluster; the
	// provider and the controller (which prices each class's volumes into the node cost) look
	// classes up by name on every call, so an edit reaches both.
	var classes controller.NodeClasses
	decode := func(data []byte) ([]nodeplan.NodePool, error) {
		m, err := nodeplan.DecodeManifests(data)
		if err != nil {
			return nil, err
		}
		byName := map[string]*ec2.NodeClass{}
		ec2Classes := ec2.NodeClasses(m)
		for i := range ec2Classes {
			byName[ec2Classes[i].Name] = &ec2Classes[i]
		}
		classes.Set(byName)
		return m.NodePools, nil
	}
	var pools controller.NodePoolSource
	var clusterPools *controller.ClusterNodePools
	switch {
	case o.nodePools == "" && o.nodePoolsConfigMap == "":
		// Karpenter's objects, watched: kubectl apply -f nodepool.yaml takes effect.
		clusterPools = &controller.ClusterNodePools{Dynamic: dyn, Logger: log,
			OnClasses: classes.Set}
		pools = clusterPools
	case o.nodePools != "":
		data, err := os.ReadFile(o.nodePools)
		if err != nil {
			return err
		}
		ps, err := decode(data)
		if err != nil {
			return fmt.Errorf("%s: %w", o.nodePools, err)
		}
		pools = controller.StaticNodePools(ps)
	default:
		ns, name, ok := strings.Cut(o.nodePoolsConfigMap, "/")
		if !ok {
			return fmt.Errorf("--nodepools-configmap %q is not namespace/name", o.nodePoolsConfigMap)
		}
		pools = &controller.ConfigMapNodePools{Client: client, Namespace: ns, Name: name, Decode: decode, Logger: log}
	}

	built, err := newProvider(ctx, o, clusterInfo{rest: restCfg, client: client, version: ver, nodeClass: classes.Get}, log)
	if err != nil {
		return err
	}
	provider, tokens := built.provider, built.tokens

	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: controller.EventSource})
	if clusterPools != nil {
		clusterPools.Recorder = recorder
	}

	health := &controller.Health{CloudCheck: func(ctx context.Context) error {
		_, err := provider.List(ctx)
		return err
	}}
	health.SetStarted() // the API server answered the version request above
	if o.healthAddr != "" {
		if _, err := serveHealth(ctx, o.healthAddr, health); err != nil {
			return err
		}
	}
	lead := func(ctx context.Context) {
		health.SetLeading(true)
		defer health.SetLeading(false)
		if built.whileLeading != nil {
			go built.whileLeading(ctx)
		}
		c := &controller.Controller{Health: health, Client: client, Dynamic: dyn, Provider: provider, NodePools: pools, Solve: scheduling.Solve,
			Planner: planner, Logger: log, Recorder: recorder, Metrics: metrics, Installation: o.installation, Adopt: o.adopt,
			CostModel: costModel, NodeOverlays: overlays, BootstrapTokens: tokens, CapacityBuffers: o.capacityBuffers,
			NodeCost: scheduling.NodeCost{PerNode: o.nodeCost}, NodeClass: classes.Get,
			BatchIdle: o.batchIdle, BatchMax: o.batchMax, Preferences: scheduling.PreferencePolicy(o.preferencePolicy),
			MinValues:    scheduling.MinValuesPolicy(o.minValuesPolicy),
			NoSpotToSpot: o.noSpotToSpot}
		if err := c.Run(ctx); err != nil {
			log.Error("controller stopped", "err", err)
		}
	}
	if !o.leaderElect {
		lead(ctx)
		return nil
	}
	id := o.identity
	if id == "" {
		if id, err = os.Hostname(); err != nil {
			return err
		}
	}
	le := &controller.LeaderElection{Client: client, Namespace: o.leaseNamespace, Name: o.leaseName, Identity: id, Logger: log}
	return le.Run(ctx, lead)
}

// clusterInfo is what a provider may need to know of the cluster.
type clusterInfo struct {
	rest      *rest.Config
	client    kubernetes.Interface
	version   *apiversion.Info
	nodeClass func(name string) (*ec2.NodeClass, bool)
}

// builtProvider is a provider and what runs with it.
type builtProvider struct {
	provider cloudprovider.Provider
	// tokens, with EC2 and --kubeadm-ca-cert-hash, are the bootstrap tokens minted per launch.
	tokens *controller.BootstrapTokens
	// whileLeading runs beside the controller while this replica leads: kwok's kubelets,
	// played by one replica at a time.
	whileLeading func(ctx context.Context)
}

// newProvider builds the provider --provider names; EC2's price refreshes start at once.
func newProvider(ctx context.Context, o options, cl clusterInfo, log *slog.Logger) (builtProvider, error) {
	if err := o.lab.checkProvider(); err != nil {
		return builtProvider{}, err
	}
	if o.lab.provider == "kwok" {
		catalog, from, err := o.lab.loadCatalog()
		if err != nil {
			return builtProvider{}, err
		}
		p := &kwok.Provider{Client: cl.client, Catalog: catalog, Owner: o.installation,
			ReadyAfter: max(o.lab.kwokReadyAfter, time.Nanosecond), Logger: log}
		log.Info("kwok provider: Nodes as objects, no cloud", "catalog", from, "instance-types", len(catalog),
			"owner-label", kwok.LabelOwner+"="+o.installation, "ready-after", o.lab.kwokReadyAfter)
		kubelets := func(ctx context.Context) {
			if err := p.Run(ctx); err != nil {
				log.Error("kwok kubelets stopped", "err", err)
			}
		}
		return builtProvider{provider: p, whileLeading: kubelets}, nil
	}

	joinURL, err := endpoint(o, cl.rest.Host)
	if err != nil {
		return builtProvider{}, err
	}
	ca := cl.rest.CAData
	if len(ca) == 0 && cl.rest.CAFile != "" {
		if ca, err = os.ReadFile(cl.rest.CAFile); err != nil {
			return builtProvider{}, fmt.Errorf("cluster CA: %w", err)
		}
	}
	if ca, err = o.caBundle(ca); err != nil {
		return builtProvider{}, err
	}
	var awsOpts []func(*config.LoadOptions) error
	if o.region != "" {
		awsOpts = append(awsOpts, config.WithRegion(o.region))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, awsOpts...)
	if err != nil {
		return builtProvider{}, fmt.Errorf("AWS configuration: %w", err)
	}
	prices := pricing.NewFromConfig(awsCfg)
	prices.Logger = log
	cluster := ec2.Cluster{Name: o.clusterName, Endpoint: joinURL, CABundle: ca, ServiceCIDR: o.serviceCIDR,
		ClusterDNS: o.clusterDNS, KubernetesVersion: cl.version.Major + "." + strings.TrimSuffix(cl.version.Minor, "+")}
	var tokens *controller.BootstrapTokens // kubeadm: a bootstrap token per launch
	if o.kubeadmCACertHash != "" {
		cluster.Kubeadm = &ec2.KubeadmJoin{CACertHashes: strings.Split(o.kubeadmCACertHash, ",")}
		tokens = &controller.BootstrapTokens{}
	}
	popts := ec2.Options{
		Installation: o.installation,
		Cluster:      cluster,
		Region:       awsCfg.Region,
		EC2:          awsec2.NewFromConfig(awsCfg),
		SSM:          ssm.NewFromConfig(awsCfg),
		Prices:       prices,
		NodeClass:    cl.nodeClass,
		Logger:       log,
		// Karpenter's VM_MEMORY_OVERHEAD_PERCENT and AMI/SUBNET_REFRESH_INTERVAL.
		VMMemoryOverhead: o.vmOverhead(),
		CacheFor:         o.cacheFor(),
	}
	if o.interruptionQueue != "" {
		queues := sqs.NewFromConfig(awsCfg)
		url, err := interruptionQueueURL(ctx, queues, o.interruptionQueue, awsCfg.Region)
		if err != nil {
			return builtProvider{}, err
		}
		popts.SQS, popts.QueueURL = queues, url
	}
	provider, err := ec2.New(popts)
	if err != nil {
		return builtProvider{}, err
	}
	go refreshPrices(ctx, prices, log, o.isolatedVPC)
	return builtProvider{provider: provider, tokens: tokens}, nil
}

// refreshPrices keeps prices current: spot every 5 minutes, on-demand every 12 hours. A failed
// refresh keeps the last prices (the static tables at first) and is logged by pricing. In an
// isolated VPC (ISOLATED_VPC) the Pricing API cannot be reached: on-demand prices stay the
// static tables', as Karpenter's do.
func refreshPrices(ctx context.Context, p *pricing.Live, log *slog.Logger, isolatedVPC bool) {
	var lastOnDemand time.Time
	for {
		if !isolatedVPC && time.Since(lastOnDemand) > 12*time.Hour {
			if _, err := p.RefreshOnDemand(ctx); err != nil && ctx.Err() == nil {
				log.Warn("could not refresh on-demand prices", "err", err)
			}
			lastOnDemand = time.Now()
		}
		if _, err := p.RefreshSpot(ctx); err != nil && ctx.Err() == nil {
			log.Warn("could not refresh spot prices", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Minute):
		}
	}
}

// loadPrices reads --cost-model and --nodeoverlays; either may be absent.
func loadPrices(o options) (*pricing.CostModel, []nodeplan.NodeOverlay, error) {
	var model *pricing.CostModel
	if o.costModel != "" {
		data, err := os.ReadFile(o.costModel)
		if err != nil {
			return nil, nil, fmt.Errorf("--cost-model: %w", err)
		}
		if model, err = pricing.ParseCostModel(data); err != nil {
			return nil, nil, fmt.Errorf("--cost-model %s: %w", o.costModel, err)
		}
	}
	var overlays []nodeplan.NodeOverlay
	if o.nodeOverlays != "" {
		data, err := os.ReadFile(o.nodeOverlays)
		if err != nil {
			return nil, nil, fmt.Errorf("--nodeoverlays: %w", err)
		}
		if overlays, err = nodeplan.DecodeNodeOverlays(data); err != nil {
			return nil, nil, fmt.Errorf("--nodeoverlays %s: %w", o.nodeOverlays, err)
		}
	}
	return model, overlays, nil
}
