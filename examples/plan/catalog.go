package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
	"github.com/nodeplan/nodeplan/pricing"
)

// When no --catalog is given, plan builds the catalog itself, always the same way: it asks an
// EC2 endpoint for the instance types and where they are offered (DescribeInstanceTypes,
// DescribeInstanceTypeOfferings), and the Pricing API and spot price history for prices
// (pricing.Live) — the calls the controller makes. With AWS credentials the endpoint is EC2
// itself; without, it is ec2test, an in-process endpoint holding the data nodeplan embeds (the
// 1,363 types Karpenter's AWS provider documents, its static on-demand tables, and a stated
// model of spot prices). Each assumption that makes is printed.

// fallbackPriceRegion prices regions that have no on-demand prices of their own, as Karpenter's
// AWS provider does when it has no table for the region.
const fallbackPriceRegion = "us-east-1"

// credentialTimeout bounds the look-up of AWS credentials: off EC2, the SDK's chain ends at the
// instance metadata service, which does not answer.
const credentialTimeout = 3 * time.Second

// catalogFlags choose how the catalog is built when no file is given.
type catalogFlags struct {
	region  string
	zones   string
	offline bool
}

func (c *catalogFlags) register(f *flags) {
	f.StringVar(&c.region, "region", "", "AWS `REGION` to build the catalog for (default: the nodes' topology.kubernetes.io/region label, then the AWS configuration)")
	f.StringVar(&c.zones, "zones", "", "comma-separated `ZONES` for the offline catalog (default: the nodes' zones, else the region's a, b and c)")
	f.BoolVar(&c.offline, "offline", false, "build the catalog from nodeplan's embedded data even when AWS credentials are available")
}

// builtCatalog is a catalog plan built, and what it assumed.
type builtCatalog struct {
	region string
	// types are priced instance types under the default capacity model (AL2023, no kubelet
	// overrides); perPool has a pool's own when its EC2NodeClass changes the model.
	types   []nodeplan.InstanceType
	perPool map[string][]nodeplan.InstanceType
	notices []string
}

// catalogInput is what building a catalog looks at.
type catalogInput struct {
	flags   catalogFlags
	nodes   []clusterNode
	pools   []nodeplan.NodePool
	classes []ec2.NodeClass
	// connect loads the AWS configuration; nil means the SDK's default chain.
	connect func(ctx context.Context, region string) (aws.Config, error)
}

// buildCatalog builds the catalog for the cluster's region, live or offline.
func buildCatalog(ctx context.Context, in catalogInput) (*builtCatalog, error) {
	connect := in.connect
	if connect == nil {
		connect = defaultAWSConfig
	}
	b := &builtCatalog{region: in.flags.region}
	if b.region == "" {
		b.region = mostCommon(in.nodes, func(n clusterNode) string { return n.node.Labels[nodeplan.LabelRegion] })
	}
	cfg, cfgErr := connect(ctx, b.region)
	if b.region == "" {
		b.region = cfg.Region
	}
	if b.region == "" {
		return nil, badInput{errors.New("catalog: the region is unknown: no node has a topology.kubernetes.io/region label and the AWS configuration names none; pass --region")}
	}
	live := !in.flags.offline && cfgErr == nil
	if live {
		if err := hasCredentials(ctx, cfg); err != nil {
			live = false
			b.notef("no AWS credentials (%v): the catalog is built offline from nodeplan's embedded data", err)
		}
	} else if cfgErr != nil && !in.flags.offline {
		b.notef("no AWS configuration (%v): the catalog is built offline from nodeplan's embedded data", cfgErr)
	}
	var zones []string
	if !live {
		zones = splitList(in.flags.zones)
		if len(zones) == 0 {
			zones = distinct(in.nodes, func(n clusterNode) string {
				if strings.HasPrefix(n.zone, b.region) {
					return n.zone
				}
				return ""
			})
		}
		if len(zones) == 0 {
			zones = []string{b.region + "a", b.region + "b", b.region + "c"}
			b.notef("zones: none known for %s, assumed %s (pass --zones to change)", b.region, strings.Join(zones, ", "))
		}
		srv := ec2test.NewServer(ec2test.WithZones(b.region, zones...))
		defer srv.Close()
		cfg = srv.Config(b.region)
		b.notef("offline catalog for %s: instance types as Karpenter's AWS provider documents them (Aug 2026), offered in %s; spot prices are a model (28–42%% of on-demand, fixed per type and zone), not market prices", b.region, strings.Join(zones, ", "))
	}
	infos, offered, err := ec2.DescribeInstanceTypes(ctx, awsec2.NewFromConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	if !live {
		// The embedded data says nothing of which zones offer a type: offline, every zone does.
		for t := range offered {
			offered[t] = zones
		}
	}
	prices, err := b.prices(ctx, cfg, live)
	if err != nil {
		return nil, err
	}
	b.types = priced(infos, offered, ec2.CapacityOptions{}, prices)
	b.perPool = map[string][]nodeplan.InstanceType{}
	classes := map[string]*ec2.NodeClass{}
	for i := range in.classes {
		classes[in.classes[i].Name] = &in.classes[i]
	}
	for _, p := range in.pools {
		nc, ok := classes[p.Template.NodeClassRef.Name]
		if !ok {
			continue
		}
		opts := ec2.CapacityOptionsFor(nc, 0)
		if !capacityOptionsEqual(opts, ec2.CapacityOptions{Family: opts.Family}) || opts.Family != "" && opts.Family != string(ec2.AMIFamilyAL2023) {
			b.perPool[p.Name] = priced(infos, offered, opts, prices)
		}
	}
	if len(b.types) == 0 {
		return nil, fmt.Errorf("catalog: no priced instance types in %s", b.region)
	}
	return b, nil
}

func (b *builtCatalog) notef(format string, args ...any) {
	b.notices = append(b.notices, fmt.Sprintf(format, args...))
}

// prices refreshes on-demand and spot prices from the endpoint; where the region has no
// on-demand prices at all, those of fallbackPriceRegion stand in, with a notice.
func (b *builtCatalog) prices(ctx context.Context, cfg aws.Config, live bool) (pricing.Source, error) {
	src := pricing.NewFromConfig(cfg)
	// Offline, a region the embedded data does not price answers with nothing; the fallback
	// below says so. Live, a failed refresh is news.
	if _, err := src.RefreshOnDemand(ctx); err != nil && live {
		b.notef("on-demand prices for %s could not be refreshed (%v); using the embedded table where there is one", b.region, err)
	}
	if _, err := src.RefreshSpot(ctx); err != nil && live {
		b.notef("spot prices for %s could not be refreshed (%v): spot offerings without a price are left out", b.region, err)
	}
	if src.Currency() != "USD" {
		b.notef("prices for %s are in %s, not USD: costs are in that currency", b.region, src.Currency())
	}
	if _, ok := anyOnDemand(src); ok {
		return src, nil
	}
	table, err := pricing.Static(fallbackPriceRegion)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	b.notef("WARNING: no on-demand prices for %s; using %s's prices instead, as Karpenter does — costs are estimates", b.region, fallbackPriceRegion)
	if !live {
		b.notef("spot prices for %s: the offline model applied to %s's on-demand prices", b.region, fallbackPriceRegion)
	}
	return fallbackSource{Source: src, onDemand: table, modelSpot: !live}, nil
}

// fallbackSource prices on-demand from another region's table and spot from the region's own
// history, or offline from the model of spot prices the embedded data uses.
type fallbackSource struct {
	pricing.Source
	onDemand  *pricing.Table
	modelSpot bool
}

func (f fallbackSource) OnDemand(instanceType string) (float64, bool) {
	return f.onDemand.OnDemand(instanceType)
}

func (f fallbackSource) Spot(instanceType, zone string) (float64, bool) {
	if p, ok := f.Source.Spot(instanceType, zone); ok || !f.modelSpot {
		return p, ok
	}
	od, ok := f.onDemand.OnDemand(instanceType)
	if !ok {
		return 0, false
	}
	return ec2test.SeededSpotPrice(instanceType, zone, od), true
}

// anyOnDemand reports whether src prices any common instance type on demand.
func anyOnDemand(src pricing.Source) (float64, bool) {
	for _, t := range []string{"m5.large", "m6i.large", "c5.large", "t3.medium", "m7i.large"} {
		if p, ok := src.OnDemand(t); ok {
			return p, true
		}
	}
	return 0, false
}

func hasCredentials(ctx context.Context, cfg aws.Config) error {
	if cfg.Credentials == nil {
		return errors.New("none configured")
	}
	ctx, cancel := context.WithTimeout(ctx, credentialTimeout)
	defer cancel()
	_, err := cfg.Credentials.Retrieve(ctx)
	return err
}

func defaultAWSConfig(ctx context.Context, region string) (aws.Config, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	return awsconfig.LoadDefaultConfig(ctx, opts...)
}

// priced builds the instance types under one capacity model, with an offering for each zone
// and capacity type that has a price; a type with none is left out.
func priced(infos []ec2types.InstanceTypeInfo, offered map[string][]string, opts ec2.CapacityOptions, prices pricing.Source) []nodeplan.InstanceType {
	var out []nodeplan.InstanceType
	for i := range infos {
		it := ec2.NewInstanceType(&infos[i], opts)
		it.Offerings = nil
		for _, zone := range offered[it.Name] {
			if p, ok := prices.OnDemand(it.Name); ok && p > 0 {
				it.Offerings = append(it.Offerings, nodeplan.Offering{Zone: zone, CapacityType: nodeplan.CapacityTypeOnDemand, Price: p, Available: true})
			}
			if p, ok := prices.Spot(it.Name, zone); ok && p > 0 {
				it.Offerings = append(it.Offerings, nodeplan.Offering{Zone: zone, CapacityType: nodeplan.CapacityTypeSpot, Price: p, Available: true})
			}
		}
		if len(it.Offerings) > 0 {
			out = append(out, it)
		}
	}
	return out
}

func capacityOptionsEqual(a, b ec2.CapacityOptions) bool {
	return fmt.Sprintf("%+v", a) == fmt.Sprintf("%+v", b)
}

func mostCommon[T any](items []T, key func(T) string) string {
	counts := map[string]int{}
	for _, it := range items {
		if k := key(it); k != "" {
			counts[k]++
		}
	}
	best := ""
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		if counts[k] > counts[best] {
			best = k
		}
	}
	return best
}

func distinct[T any](items []T, key func(T) string) []string {
	var out []string
	for _, it := range items {
		if k := key(it); k != "" {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// writeNotices prints the catalog's assumptions to w, one line each.
func writeNotices(w io.Writer, b *builtCatalog) {
	for _, n := range b.notices {
		fmt.Fprintf(w, "plan: %s\n", n)
	}
}

// ensureCatalog builds the snapshot's catalog when no --catalog file was given; the assumptions
// it made become the snapshot's notices, which the output carries.
func ensureCatalog(ctx context.Context, snap *snapshot, flags catalogFlags) error {
	if snap.catalog != nil {
		return nil
	}
	b, err := buildCatalog(ctx, catalogInput{flags: flags, nodes: snap.nodes, pools: snap.pools, classes: snap.classes, connect: connectAWS})
	if err != nil {
		return err
	}
	snap.catalog, snap.poolCatalog = b.types, b.perPool
	snap.notices = append(snap.notices, b.notices...)
	return nil
}

// connectAWS loads the AWS configuration; tests point it at ec2test.
var connectAWS = defaultAWSConfig
