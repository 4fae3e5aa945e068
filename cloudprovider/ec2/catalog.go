package ec2

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
)

// catalog is what EC2 says about the region's instance types: their descriptions, and the zones
// that offer each.
type catalog struct {
	types []ec2types.InstanceTypeInfo // by name
	zones map[string][]string         // type → zones, sorted
	all   []string                    // every zone, sorted

	mu    sync.Mutex
	built map[string][]nodeplan.InstanceType // class hash → base types
}

type catalogCache struct{ cached[*catalog] }

// catalog returns the region's instance types, fetching them when missing or older than 12
// hours (or CacheFor, if set).
func (p *Provider) loadCatalog(ctx context.Context) (*catalog, error) {
	c := &p.catalog
	c.mu.Lock()
	defer c.mu.Unlock()
	ttl := 12 * time.Hour
	if p.opts.CacheFor > 0 {
		ttl = p.opts.CacheFor
	}
	if c.ok && p.now().Sub(c.fetched) < ttl {
		return c.value, nil
	}
	types, zones, err := DescribeInstanceTypes(ctx, p.opts.EC2)
	if err != nil {
		return nil, err
	}
	cat := &catalog{types: types, zones: zones}
	allZones := map[string]bool{}
	for _, zs := range zones {
		for _, z := range zs {
			allZones[z] = true
		}
	}
	for z := range allZones {
		cat.all = append(cat.all, z)
	}
	slices.Sort(cat.all)
	c.value, c.fetched, c.ok = cat, p.now(), true
	p.log.Debug("ec2: instance types refreshed", "types", len(cat.types), "zones", len(cat.all))
	return cat, nil
}

// capacityOptions derives the capacity model's settings from a node class.
func (p *Provider) capacityOptions(nc *NodeClass) CapacityOptions {
	return CapacityOptionsFor(nc, p.opts.VMMemoryOverhead)
}

// CapacityOptionsFor returns the capacity model's settings for nodes of class nc, as the
// provider launches them: the AMI family, the class's kubelet settings (max pods, pods per
// core, reservations, hard eviction), its instance-store policy and root volume.
// vmMemoryOverhead is as in [CapacityOptions].VMMemoryOverhead (0: the default). With
// [NewInstanceType] it describes an instance type exactly as [Provider.InstanceTypes] would for
// the class, without calling EC2.
func CapacityOptionsFor(nc *NodeClass, vmMemoryOverhead float64) CapacityOptions {
	o := CapacityOptions{
		Family:             string(nc.ResolvedAMIFamily()),
		MaxPods:            nc.Kubelet.MaxPods,
		PodsPerCore:        nc.Kubelet.PodsPerCore,
		VMMemoryOverhead:   vmMemoryOverhead,
		KubeReserved:       nc.Kubelet.KubeReserved,
		SystemReserved:     nc.Kubelet.SystemReserved,
		EvictionHard:       nc.Kubelet.EvictionHard,
		InstanceStoreRAID0: nc.InstanceStorePolicy == InstanceStoreRAID0,
	}
	for _, b := range nc.BlockDeviceMappings {
		if b.RootVolume && b.EBS != nil {
			o.RootVolume = b.EBS.VolumeSize
		}
	}
	return o
}

// InstanceTypes implements [cloudprovider.Provider]: every hvm x86_64/arm64 type of the region
// for which the pool's node class has an image, with an offering per zone EC2 offers it in and
// capacity type it supports. An offering is available when it has a price, a selected subnet
// is in its zone, and it has not failed with a capacity error recently. Labels, Capacity and
// Overhead are shared with other calls' results and must not be modified; Offerings are fresh.
func (p *Provider) InstanceTypes(ctx context.Context, pool *nodeplan.NodePool) ([]nodeplan.InstanceType, error) {
	if pool == nil {
		return nil, fmt.Errorf("ec2: InstanceTypes: nil NodePool")
	}
	rc, err := p.resolveClass(ctx, pool.Template.NodeClassRef.Name)
	if err != nil {
		return nil, err
	}
	cat, err := p.loadCatalog(ctx)
	if err != nil {
		return nil, err
	}
	return p.buildInstanceTypes(cat, rc), nil
}

// baseTypes returns the region's types described under the class's capacity options, without
// offerings, computed once per catalog and class. They are shared: never modify them.
func (p *Provider) baseTypes(cat *catalog, rc *resolvedClass) []nodeplan.InstanceType {
	cat.mu.Lock()
	defer cat.mu.Unlock()
	key := rc.class.Name + "/" + rc.hash // the labels name the class
	if its, ok := cat.built[key]; ok {
		return its
	}
	opts := p.capacityOptions(rc.class)
	its := make([]nodeplan.InstanceType, len(cat.types))
	for i := range cat.types {
		its[i] = NewInstanceType(&cat.types[i], opts)
		if p.opts.Region != "" {
			its[i].Labels[nodeplan.LabelRegion] = p.opts.Region
		}
		its[i].Labels[LabelNodeClass] = rc.class.Name
	}
	if cat.built == nil {
		cat.built = map[string][]nodeplan.InstanceType{}
	}
	cat.built[key] = its
	return its
}

func (p *Provider) buildInstanceTypes(cat *catalog, rc *resolvedClass) []nodeplan.InstanceType {
	base := p.baseTypes(cat, rc)
	avoid := p.unavailable.snapshot(p.now())
	subnetZones := map[string]bool{}
	for _, s := range rc.subnets {
		subnetZones[s.zone] = true
	}
	out := make([]nodeplan.InstanceType, 0, len(cat.types))
	for i := range cat.types {
		info := &cat.types[i]
		it := base[i] // shares Labels, Capacity and Overhead; Offerings are new
		if _, ok := rc.amis[it.Labels[nodeplan.LabelArch]]; !ok {
			continue
		}
		zones := cat.zones[it.Name]
		it.Offerings = make([]nodeplan.Offering, 0, 2*len(zones))
		for _, ct := range []nodeplan.CapacityType{nodeplan.CapacityTypeOnDemand, nodeplan.CapacityTypeSpot} {
			if !slices.Contains(info.SupportedUsageClasses, ec2types.UsageClassType(ct)) && len(info.SupportedUsageClasses) > 0 {
				continue
			}
			for _, z := range zones {
				price, ok := p.price(it.Name, z, ct)
				avail := ok && subnetZones[z] && !avoid[cloudprovider.OfferingKey{InstanceType: it.Name, Zone: z, CapacityType: ct}]
				it.Offerings = append(it.Offerings, nodeplan.Offering{Zone: z, CapacityType: ct, Price: price, Available: avail})
			}
		}
		out = append(out, it)
	}
	return out
}

func (p *Provider) price(instanceType, zone string, ct nodeplan.CapacityType) (float64, bool) {
	if p.opts.Prices == nil {
		return 0, false
	}
	if op, isPricer := p.opts.Prices.(interface {
		Price(instanceType, zone string, ct nodeplan.CapacityType) (float64, bool)
	}); isPricer {
		price, ok := op.Price(instanceType, zone, ct)
		return price, ok && price > 0
	}
	var price float64
	var ok bool
	if ct == nodeplan.CapacityTypeSpot {
		price, ok = p.opts.Prices.Spot(instanceType, zone)
	} else {
		price, ok = p.opts.Prices.OnDemand(instanceType)
	}
	return price, ok && price > 0
}
