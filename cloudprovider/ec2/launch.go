package ec2

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
)

// Tags the provider puts on what it launches.
const (
	TagNodeClaim     = "karpenter.sh/nodeclaim"
	TagNodeClassHash = "karpenter.k8s.aws/ec2nodeclass-hash"
	TagEKSCluster    = "eks:eks-cluster-name"
	// TagInstallation names the installation that launched an instance ([Options].Installation).
	TagInstallation = "nodeplan.io/installation"
)

func clusterTag(name string) string { return "kubernetes.io/cluster/" + name }

// option is one instance type a launch may use, with the offerings it may use.
type option struct {
	it        *nodeplan.InstanceType
	offerings []nodeplan.Offering // of the chosen capacity type, available, allowed
	cheapest  float64
}

// Create implements [cloudprovider.Provider]. It resolves the claim's node class, keeps the
// claim's instance-type options whose offerings are available and allowed, picks the capacity
// type (reserved, then spot, then on-demand, the first the requirements allow that has an
// offering), and asks one instant CreateFleet for one instance over the cheapest 60 types (more
// if minValues needs them) in every zone that has a selected subnet. Spot uses
// price-capacity-optimized, on-demand lowest-price.
//
// Offerings EC2 reports out of capacity are avoided for UnavailableFor (longer when they keep
// failing). When every offering failed for capacity the error is an
// [*cloudprovider.InsufficientCapacityError]. The request's client token is derived from the
// claim and the request, so SDK retries and a retried Create of the same claim never launch a
// second instance; if the call fails after EC2 may have launched one, instances tagged with the
// claim are looked up and terminated before Create returns.
func (p *Provider) Create(ctx context.Context, claim *nodeplan.NodeClaim) (*nodeplan.NodeClaim, error) {
	if claim == nil || claim.Name == "" {
		return nil, &cloudprovider.LaunchError{Reason: cloudprovider.ReasonInvalidConfiguration, Message: "ec2: Create needs a NodeClaim with a Name"}
	}
	rc, err := p.resolveClass(ctx, claim.NodeClassRef.Name)
	if err != nil {
		return nil, err
	}
	cat, err := p.loadCatalog(ctx)
	if err != nil {
		return nil, &cloudprovider.LaunchError{Reason: cloudprovider.ReasonLaunchFailed, Err: err}
	}
	types := p.buildInstanceTypes(cat, rc)
	opts, ct := p.launchOptions(claim, types)
	if len(opts) == 0 {
		return nil, &cloudprovider.InsufficientCapacityError{}
	}
	for attempt := 0; ; attempt++ {
		out, err := p.launch(ctx, claim, rc, opts, ct, attempt)
		if errors.Is(err, errTemplateGone) && attempt == 0 {
			p.templates.forget()
			continue
		}
		return out, err
	}
}

var errTemplateGone = errors.New("ec2: launch template not found")

// launchOptions filters and ranks the claim's options and picks the capacity type.
func (p *Provider) launchOptions(claim *nodeplan.NodeClaim, types []nodeplan.InstanceType) ([]option, nodeplan.CapacityType) {
	byName := make(map[string]*nodeplan.InstanceType, len(types))
	for i := range types {
		byName[types[i].Name] = &types[i]
	}
	var cands []*nodeplan.InstanceType
	// Zone and capacity type are the offerings' to meet; a requirement on a label the claim
	// itself puts on the node (the pool's template labels, karpenter.sh/nodepool) is met by
	// that label, not by the instance type, whose labels never carry it.
	skip := []string{nodeplan.LabelZone, nodeplan.LabelCapacityType}
	for k, v := range claim.Labels {
		if r, ok := claim.Requirements.Get(k); ok && r.Accepts(v, true) {
			skip = append(skip, k)
		}
	}
	labelReqs := withoutKeys(claim.Requirements, skip...)
	if len(claim.InstanceTypeOptions) == 0 {
		for i := range types {
			if _, fits := nodeplan.Fits(claim.Resources, types[i].Allocatable()); fits && labelReqs.Matches(types[i].Labels) {
				cands = append(cands, &types[i])
			}
		}
	} else {
		for _, name := range claim.InstanceTypeOptions {
			if it, ok := byName[name]; ok && labelReqs.Matches(it.Labels) {
				cands = append(cands, it)
			}
		}
	}
	for _, ct := range []nodeplan.CapacityType{nodeplan.CapacityTypeReserved, nodeplan.CapacityTypeSpot, nodeplan.CapacityTypeOnDemand} {
		var opts []option
		for _, it := range cands {
			o := option{it: it}
			for _, off := range it.Offerings {
				if off.CapacityType == ct && off.Available && off.Accepts(claim.Requirements) {
					if len(o.offerings) == 0 || off.Price < o.cheapest {
						o.cheapest = off.Price
					}
					o.offerings = append(o.offerings, off)
				}
			}
			if len(o.offerings) > 0 {
				opts = append(opts, o)
			}
		}
		if len(opts) > 0 {
			slices.SortStableFunc(opts, func(a, b option) int {
				return cmp.Or(cmp.Compare(a.cheapest, b.cheapest), strings.Compare(a.it.Name, b.it.Name))
			})
			return p.truncate(opts, claim.Requirements), ct
		}
	}
	return nil, ""
}

// truncate keeps the cheapest MaxInstanceTypes options, then adds the cheapest further ones
// that bring new values for any requirement whose minValues the kept ones fall short of.
func (p *Provider) truncate(opts []option, reqs nodeplan.Requirements) []option {
	limit := p.opts.MaxInstanceTypes
	if limit <= 0 {
		limit = 60
	}
	if len(opts) <= limit {
		return opts
	}
	kept := slices.Clone(opts[:limit])
	for _, r := range reqs.All() {
		if r.MinValues <= 0 {
			continue
		}
		have := map[string]bool{}
		for _, o := range kept {
			if v, ok := o.it.Labels[r.Key]; ok {
				have[v] = true
			}
		}
		for _, o := range opts[limit:] {
			if len(have) >= r.MinValues {
				break
			}
			if v, ok := o.it.Labels[r.Key]; ok && !have[v] {
				have[v] = true
				kept = append(kept, o)
			}
		}
	}
	return kept
}

func withoutKeys(rs nodeplan.Requirements, keys ...string) nodeplan.Requirements {
	var keep []nodeplan.Requirement
	for _, r := range rs.All() {
		if !slices.Contains(keys, r.Key) {
			keep = append(keep, r)
		}
	}
	return nodeplan.NewRequirements(keep...)
}

// launch makes one CreateFleet call for the claim.
func (p *Provider) launch(ctx context.Context, claim *nodeplan.NodeClaim, rc *resolvedClass, opts []option, ct nodeplan.CapacityType, attempt int) (*nodeplan.NodeClaim, error) {
	nc := rc.class
	tags := p.launchTags(claim, rc)
	labels := maps.Clone(claim.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelNodeClass] = nc.Name
	// One launch template per image (architecture) and kubelet configuration (instance types
	// differ in max pods and reservations); overrides per (type, zone).
	type override struct {
		it   *nodeplan.InstanceType
		zone string
		sub  subnet
	}
	byTemplate := map[string][]override{}
	templateData := map[string]*ec2types.RequestLaunchTemplateData{}
	images := map[string]string{}
	rendered := map[string]string{} // kubelet configuration → userData
	for _, o := range opts {
		img, ok := rc.amis[o.it.Labels[nodeplan.LabelArch]]
		if !ok {
			continue
		}
		kc := kubeletFor(o.it, nc, p.opts.Cluster.ClusterDNS)
		userData, ok := rendered[kc.key()]
		if !ok {
			var err error
			userData, err = p.renderUserData(userDataInput{family: nc.ResolvedAMIFamily(), classData: nc.UserData, labels: labels,
				taints: nodeTaints(claim), kubelet: kc, token: claim.BootstrapToken})
			if err != nil {
				return nil, &cloudprovider.LaunchError{Reason: cloudprovider.ReasonInvalidConfiguration, Err: err}
			}
			rendered[kc.key()] = userData
		}
		data := p.templateData(rc, img.id, userData)
		name := templateName(data)
		templateData[name] = data
		images[name] = img.id
		zones := map[string]bool{}
		for _, off := range o.offerings {
			if s, ok := rc.byZone[off.Zone]; ok && !zones[off.Zone] {
				zones[off.Zone] = true
				byTemplate[name] = append(byTemplate[name], override{o.it, off.Zone, s})
			}
		}
	}
	in := &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity:       aws.Int32(1),
			DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(ct),
		},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: tags},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: tags},
			{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: tags},
			{ResourceType: ec2types.ResourceTypeFleet, Tags: tags},
		},
	}
	if ct == nodeplan.CapacityTypeSpot {
		in.TagSpecifications = append(in.TagSpecifications, ec2types.TagSpecification{ResourceType: ec2types.ResourceTypeSpotInstancesRequest, Tags: tags})
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	} else {
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	for _, name := range sortedKeys(byTemplate) {
		if err := p.ensureTemplate(ctx, name, templateData[name]); err != nil {
			return nil, err
		}
		cfg := ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(name), Version: aws.String("$Latest")},
		}
		for _, ov := range byTemplate[name] {
			cfg.Overrides = append(cfg.Overrides, ec2types.FleetLaunchTemplateOverridesRequest{
				InstanceType: ec2types.InstanceType(ov.it.Name), SubnetId: aws.String(ov.sub.id), AvailabilityZone: aws.String(ov.zone),
			})
		}
		in.LaunchTemplateConfigs = append(in.LaunchTemplateConfigs, cfg)
	}
	if len(in.LaunchTemplateConfigs) == 0 {
		return nil, &cloudprovider.InsufficientCapacityError{}
	}
	in.ClientToken = aws.String(clientToken(claim.Name, attempt, in))

	if claim.BootstrapToken != "" && nc.ResolvedAMIFamily() == AMIFamilyCustom && p.opts.Cluster.Kubeadm != nil {
		// The templates hold this launch's token: no other launch can use them.
		defer p.deleteTemplates(ctx, sortedKeys(byTemplate))
	}
	out, err := p.opts.EC2.CreateFleet(ctx, in)
	if err != nil {
		if code := errorCode(err); isTemplateNotFound(code) {
			return nil, errTemplateGone
		}
		p.cleanupClaim(ctx, claim.Name, "")
		return nil, launchError(err)
	}
	var ids []string
	var got *ec2types.CreateFleetInstance
	for i := range out.Instances {
		fi := &out.Instances[i]
		if got == nil && len(fi.InstanceIds) > 0 {
			got = fi
		}
		ids = append(ids, fi.InstanceIds...)
	}
	var iceKeys []cloudprovider.OfferingKey
	var other []ec2types.CreateFleetError
	templateGone := false
	for _, fe := range out.Errors {
		code := aws.ToString(fe.ErrorCode)
		var itype, zone string
		if ov := fe.LaunchTemplateAndOverrides; ov != nil && ov.Overrides != nil {
			itype, zone = string(ov.Overrides.InstanceType), aws.ToString(ov.Overrides.AvailabilityZone)
		}
		switch {
		case isCapacityError(code) && itype != "":
			k := cloudprovider.OfferingKey{InstanceType: itype, Zone: zone, CapacityType: ct}
			p.markUnavailable(k, code)
			iceKeys = append(iceKeys, k)
		case isTemplateNotFound(code):
			templateGone = true
		default:
			other = append(other, fe)
		}
	}
	if len(ids) > 1 { // a one-instance fleet should not give more; never leave extras running
		p.terminateQuietly(ctx, ids[1:])
	}
	if got == nil {
		switch {
		case templateGone:
			return nil, errTemplateGone
		case len(other) == 0:
			slices.SortFunc(iceKeys, func(a, b cloudprovider.OfferingKey) int { return strings.Compare(a.String(), b.String()) })
			iceKeys = slices.Compact(iceKeys)
			return nil, &cloudprovider.InsufficientCapacityError{Offerings: iceKeys}
		default:
			fe := other[0]
			msg := aws.ToString(fe.ErrorCode) + ": " + aws.ToString(fe.ErrorMessage)
			return nil, &cloudprovider.LaunchError{Reason: reasonFor(aws.ToString(fe.ErrorCode)), Message: msg}
		}
	}
	zone, itype := "", string(got.InstanceType)
	if ov := got.LaunchTemplateAndOverrides; ov != nil && ov.Overrides != nil {
		zone = aws.ToString(ov.Overrides.AvailabilityZone)
		if itype == "" {
			itype = string(ov.Overrides.InstanceType)
		}
	}
	lt := ""
	if ov := got.LaunchTemplateAndOverrides; ov != nil && ov.LaunchTemplateSpecification != nil {
		lt = aws.ToString(ov.LaunchTemplateSpecification.LaunchTemplateName)
	}
	launchedCT := ct
	if got.Lifecycle == ec2types.InstanceLifecycleSpot {
		launchedCT = nodeplan.CapacityTypeSpot
	} else if got.Lifecycle == ec2types.InstanceLifecycleOnDemand {
		launchedCT = nodeplan.CapacityTypeOnDemand
	}
	res := claim.DeepCopy()
	var it *nodeplan.InstanceType
	var price float64
	for _, o := range opts {
		if o.it.Name == itype {
			it = o.it
			for _, off := range o.offerings {
				if off.Zone == zone {
					price = off.Price
				}
			}
		}
	}
	res.Status = nodeplan.NodeClaimStatus{
		ProviderID:   providerID(zone, ids[0]),
		InstanceType: itype,
		Zone:         zone,
		CapacityType: launchedCT,
		Price:        price,
		ImageID:      images[lt],
		LaunchTime:   p.now(),
	}
	if it != nil {
		res.Status.Capacity = it.Capacity.DeepCopy()
		res.Status.Allocatable = it.Allocatable()
	}
	if res.Labels == nil {
		res.Labels = map[string]string{}
	}
	if it != nil {
		maps.Copy(res.Labels, it.Labels)
	}
	res.Labels[nodeplan.LabelInstanceType] = itype
	res.Labels[nodeplan.LabelZone] = zone
	if s, ok := rc.byZone[zone]; ok && s.zoneID != "" {
		res.Labels[LabelZoneID] = s.zoneID
	}
	res.Labels[LabelNodeClass] = nc.Name
	res.Labels[nodeplan.LabelCapacityType] = string(launchedCT)
	if claim.NodePool != "" {
		res.Labels[nodeplan.LabelNodePool] = claim.NodePool
	}
	if res.Annotations == nil {
		res.Annotations = map[string]string{}
	}
	res.Annotations[TagNodeClassHash] = rc.hash
	p.log.Info("ec2: launched", "claim", claim.Name, "instance", ids[0], "type", itype, "zone", zone, "capacityType", launchedCT, "price", price)
	return res, nil
}

func providerID(zone, id string) string { return "aws:///" + zone + "/" + id }

// instanceID returns the instance id of an aws:///zone/i-… provider ID.
func instanceID(pid string) (string, bool) {
	rest, ok := strings.CutPrefix(pid, "aws://")
	if !ok {
		return "", false
	}
	id := rest[strings.LastIndexByte(rest, '/')+1:]
	return id, strings.HasPrefix(id, "i-")
}

func (p *Provider) launchTags(claim *nodeplan.NodeClaim, rc *resolvedClass) []ec2types.Tag {
	m := map[string]string{}
	maps.Copy(m, rc.class.Tags)
	m[clusterTag(p.opts.Cluster.Name)] = "owned"
	m[TagEKSCluster] = p.opts.Cluster.Name
	m[nodeplan.LabelNodePool] = claim.NodePool
	m[LabelNodeClass] = rc.class.Name
	m[TagNodeClaim] = claim.Name
	m[TagNodeClassHash] = rc.hash
	if p.opts.Installation != "" {
		m[TagInstallation] = p.opts.Installation
	}
	tags := make([]ec2types.Tag, 0, len(m))
	for _, k := range sortedKeys(m) {
		tags = append(tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return tags
}

// clientToken derives the idempotency token from the claim and the request, so the same launch
// retried (by the SDK or by a controller) is recognised by EC2, while a different request for
// the same claim (after capacity errors changed the options) is not refused as a mismatch. The
// attempt tells apart the retry after a launch template vanished, whose request is identical.
func clientToken(claim string, attempt int, in *ec2.CreateFleetInput) string {
	b, _ := json.Marshal(struct {
		C string
		A int
		L []ec2types.FleetLaunchTemplateConfigRequest
		T *ec2types.TargetCapacitySpecificationRequest
	}{claim, attempt, in.LaunchTemplateConfigs, in.TargetCapacitySpecification})
	sum := sha256.Sum256(b)
	return "nodeplan-" + hex.EncodeToString(sum[:16])
}

func (p *Provider) templateData(rc *resolvedClass, imageID, userData string) *ec2types.RequestLaunchTemplateData {
	nc := rc.class
	md := nc.MetadataOptions.WithDefaults()
	d := &ec2types.RequestLaunchTemplateData{
		ImageId:  aws.String(imageID),
		UserData: aws.String(userData),
		MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
			HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointState(md.HTTPEndpoint),
			HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(md.HTTPProtocolIPv6),
			HttpPutResponseHopLimit: aws.Int32(int32(md.HTTPPutResponseHopLimit)),
			HttpTokens:              ec2types.LaunchTemplateHttpTokensState(md.HTTPTokens),
		},
		Monitoring: &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(nc.DetailedMonitoring)},
	}
	if rc.profile != "" {
		d.IamInstanceProfile = &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(rc.profile)}
	}
	if nc.AssociatePublicIPAddress != nil {
		d.NetworkInterfaces = []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
			DeviceIndex: aws.Int32(0), AssociatePublicIpAddress: nc.AssociatePublicIPAddress, Groups: rc.groups,
		}}
	} else {
		d.SecurityGroupIds = rc.groups
	}
	blocks := nc.BlockDeviceMappings
	if len(blocks) == 0 {
		dev := "/dev/xvda"
		if nc.ResolvedAMIFamily() == AMIFamilyBottlerocket {
			dev = "/dev/xvdb"
		}
		d.BlockDeviceMappings = []ec2types.LaunchTemplateBlockDeviceMappingRequest{{DeviceName: aws.String(dev),
			Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{VolumeSize: aws.Int32(20), VolumeType: ec2types.VolumeTypeGp3, Encrypted: aws.Bool(true), DeleteOnTermination: aws.Bool(true)}}}
	}
	for _, b := range blocks {
		m := ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: aws.String(b.DeviceName)}
		if e := b.EBS; e != nil {
			ebs := &ec2types.LaunchTemplateEbsBlockDeviceRequest{Encrypted: e.Encrypted, DeleteOnTermination: e.DeleteOnTermination}
			if !e.VolumeSize.IsZero() {
				ebs.VolumeSize = aws.Int32(int32((e.VolumeSize.Value() + gibi - 1) / gibi))
			}
			if e.VolumeType != "" {
				ebs.VolumeType = ec2types.VolumeType(e.VolumeType)
			}
			if e.IOPS > 0 {
				ebs.Iops = aws.Int32(int32(e.IOPS))
			}
			if e.Throughput > 0 {
				ebs.Throughput = aws.Int32(int32(e.Throughput))
			}
			if e.KMSKeyID != "" {
				ebs.KmsKeyId = aws.String(e.KMSKeyID)
			}
			if e.SnapshotID != "" {
				ebs.SnapshotId = aws.String(e.SnapshotID)
			}
			m.Ebs = ebs
		}
		d.BlockDeviceMappings = append(d.BlockDeviceMappings, m)
	}
	return d
}

// templateName names a launch template by a hash of its content, so equal content shares one
// template and changed content gets a new one.
func templateName(d *ec2types.RequestLaunchTemplateData) string {
	b, _ := json.Marshal(d)
	sum := sha256.Sum256(b)
	return "nodeplan/" + hex.EncodeToString(sum[:12])
}

type templateCache struct {
	mu    sync.Mutex
	known map[string]time.Time // name → when last seen to exist
}

func (c *templateCache) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.known)
}

// ensureTemplate makes sure the named template exists: known recently, found by name, or created.
func (p *Provider) ensureTemplate(ctx context.Context, name string, data *ec2types.RequestLaunchTemplateData) error {
	c := &p.templates
	c.mu.Lock()
	seen, ok := c.known[name]
	c.mu.Unlock()
	if ok && p.now().Sub(seen) < p.cacheFor() {
		return nil
	}
	out, err := p.opts.EC2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
	switch {
	case err == nil && len(out.LaunchTemplates) > 0:
	case err == nil || isTemplateNotFound(errorCode(err)):
		_, err = p.opts.EC2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
			LaunchTemplateName: aws.String(name),
			LaunchTemplateData: data,
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: []ec2types.Tag{
				{Key: aws.String(clusterTag(p.opts.Cluster.Name)), Value: aws.String("owned")},
			}}},
		})
		if err != nil && errorCode(err) != "InvalidLaunchTemplateName.AlreadyExistsException" {
			return launchError(fmt.Errorf("ec2: creating launch template %s: %w", name, err))
		}
		p.log.Info("ec2: launch template created", "name", name)
	default:
		return launchError(fmt.Errorf("ec2: describing launch template %s: %w", name, err))
	}
	c.mu.Lock()
	if c.known == nil {
		c.known = map[string]time.Time{}
	}
	c.known[name] = p.now()
	c.mu.Unlock()
	return nil
}

// deleteTemplates deletes single-use launch templates once their launch is done, so templates
// do not pile up one per node (EC2 allows 5,000 a region). It runs even when ctx is done,
// bounded by 30 seconds; a template it fails to delete is logged.
func (p *Provider) deleteTemplates(ctx context.Context, names []string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for _, name := range names {
		p.templates.mu.Lock()
		delete(p.templates.known, name)
		p.templates.mu.Unlock()
		_, err := p.opts.EC2.DeleteLaunchTemplate(cctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(name)})
		if err != nil && !isTemplateNotFound(errorCode(err)) {
			p.log.Error("ec2: could not delete a single-use launch template", "name", name, "err", err)
		}
	}
}

// cleanupClaim terminates instances tagged for the claim, after a CreateFleet whose outcome is
// unknown. It runs even when ctx is done, bounded by 30 seconds. except, if set, is kept.
func (p *Provider) cleanupClaim(ctx context.Context, claim, except string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	out, err := p.opts.EC2.DescribeInstances(cctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + TagNodeClaim), Values: []string{claim}},
		{Name: aws.String("tag:" + clusterTag(p.opts.Cluster.Name)), Values: []string{"owned"}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}},
	}})
	if err != nil {
		p.log.Error("ec2: could not check for instances left by a failed launch; List will report them", "claim", claim, "err", err)
		return
	}
	var ids []string
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			if id := aws.ToString(i.InstanceId); id != except {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) > 0 {
		p.log.Warn("ec2: terminating instances of a failed launch", "claim", claim, "instances", ids)
		p.terminateQuietly(cctx, ids)
	}
}

func (p *Provider) terminateQuietly(ctx context.Context, ids []string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := p.opts.EC2.TerminateInstances(cctx, &ec2.TerminateInstancesInput{InstanceIds: ids}); err != nil {
		p.log.Error("ec2: terminating instances failed; List will report them", "instances", ids, "err", err)
	}
}

// errorCode returns the AWS error code of err, or "".
func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

func isTemplateNotFound(code string) bool {
	return code == "InvalidLaunchTemplateName.NotFoundException" || code == "InvalidLaunchTemplateId.NotFound"
}

// isCapacityError reports whether a fleet error code means the offering cannot be supplied now.
func isCapacityError(code string) bool {
	switch code {
	case "InsufficientInstanceCapacity", "MaxSpotInstanceCountExceeded", "VcpuLimitExceeded", "UnfulfillableCapacity",
		"Unsupported", "InsufficientFreeAddressesInSubnet", "MaxFleetCountExceeded", "ReservationCapacityExceeded",
		"InsufficientCapacity", "SpotMaxPriceTooLow":
		return true
	}
	return false
}

// reasonFor maps an EC2 error code to a launch failure reason.
func reasonFor(code string) string {
	switch {
	case code == "UnauthorizedOperation" || code == "AuthFailure" || strings.HasPrefix(code, "AccessDenied") || strings.Contains(code, "NotPermitted"):
		return cloudprovider.ReasonUnauthorized
	case strings.HasPrefix(code, "InvalidAMIID"):
		return cloudprovider.ReasonImageNotFound
	case strings.Contains(code, "LimitExceeded") || strings.Contains(code, "QuotaExceeded"):
		return cloudprovider.ReasonQuotaExceeded
	case strings.HasPrefix(code, "InvalidUserData"):
		return cloudprovider.ReasonUserDataTooLarge
	case code == "InvalidGroup.NotFound" || strings.Contains(code, "VPCIdNotSpecified") || strings.Contains(code, "Mismatch"):
		return cloudprovider.ReasonNetworkMismatch
	case strings.HasPrefix(code, "InvalidParameter") || strings.HasPrefix(code, "Invalid"):
		return cloudprovider.ReasonInvalidConfiguration
	}
	return cloudprovider.ReasonLaunchFailed
}

func launchError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &cloudprovider.LaunchError{Reason: reasonFor(errorCode(err)), Err: err}
}
