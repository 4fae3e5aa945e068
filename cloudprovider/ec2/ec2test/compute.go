package ec2test

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nodeplan/nodeplan"
)

func init() {
	for k, h := range map[string]handler{
		"DescribeInstanceTypes":         (*Server).describeInstanceTypes,
		"DescribeInstanceTypeOfferings": (*Server).describeInstanceTypeOfferings,
		"DescribeSubnets":               (*Server).describeSubnets,
		"DescribeSecurityGroups":        (*Server).describeSecurityGroups,
		"DescribeImages":                (*Server).describeImages,
		"CreateLaunchTemplate":          (*Server).createLaunchTemplate,
		"DescribeLaunchTemplates":       (*Server).describeLaunchTemplates,
		"DeleteLaunchTemplate":          (*Server).deleteLaunchTemplate,
		"CreateFleet":                   (*Server).createFleet,
		"DescribeInstances":             (*Server).describeInstances,
		"TerminateInstances":            (*Server).terminateInstances,
		"CreateTags":                    (*Server).createTags,
	} {
		operations[k] = h
	}
}

// DiscoveryTag is the tag the seeded subnets, security group and images carry, with the value
// DiscoveryValue: select them with a selector term {tags: {karpenter.sh/discovery: ec2test}}.
const (
	DiscoveryTag   = "karpenter.sh/discovery"
	DiscoveryValue = "ec2test"
)

// Subnet is a subnet the server knows.
type Subnet struct {
	ID, Zone string
	// FreeIPs is the available IPv4 address count; each instance launched in it takes one.
	FreeIPs int32
	Tags    map[string]string
}

// SecurityGroup is a security group the server knows.
type SecurityGroup struct {
	ID, Name string
	Tags     map[string]string
}

// Image is a machine image the server knows.
type Image struct {
	ID, Name string
	// Arch is x86_64 or arm64.
	Arch string
	// Created is the creation date, RFC 3339.
	Created string
	Owner   string
	Tags    map[string]string
}

// Instance is an instance the server launched.
type Instance struct {
	ID, Type, Zone, SubnetID, ImageID string
	// Lifecycle is "spot" or "on-demand".
	Lifecycle string
	// State is pending, running, shutting-down or terminated.
	State          string
	SecurityGroups []string
	Tags           map[string]string
	LaunchTime     time.Time
	LaunchTemplate string
}

// LaunchTemplate is a launch template the server holds, with its request parameters as sent.
type LaunchTemplate struct {
	ID, Name string
	Data     url.Values // LaunchTemplateData.* parameters, prefix removed
}

type fleetResult struct {
	resp *createFleetResponse
	err  *APIError
}

// computeState is the EC2 state behind instances, fleets, launch templates, subnets, security
// groups and images, per server (one region's worth; the region of requests is not consulted).
type computeState struct {
	seeded      bool
	types       []InstanceTypeData
	typeZones   map[string][]string // type → zones; nil entry means every zone
	subnets     []*Subnet
	groups      []*SecurityGroup
	images      []*Image
	templates   map[string]*LaunchTemplate // by name
	instances   map[string]*Instance
	order       []string // instance ids in launch order
	seq         int
	fleets      map[string]fleetResult // by client token
	capErrs     map[string]string      // "capacityType:type:zone" → error code
	afterLaunch []*APIError            // CreateFleet faults applied after instances are made
	extra       int                    // CreateFleet calls to come that launch one instance more than asked
	denied      map[string]bool        // instance ids TerminateInstances is not allowed on
	ssm         map[string]string
}

// seedCompute fills the state on first use: every built-in instance type offered in every zone
// of DefaultRegion, one subnet per zone, one security group, AL2023 and Bottlerocket images per
// architecture with their SSM parameters. s.mu must be held.
func (s *Server) seedCompute() {
	c := &s.compute
	if c.seeded {
		return
	}
	c.seeded = true
	c.types, _ = InstanceTypes()
	c.typeZones = map[string][]string{}
	c.templates = map[string]*LaunchTemplate{}
	c.instances = map[string]*Instance{}
	c.fleets = map[string]fleetResult{}
	c.capErrs = map[string]string{}
	c.ssm = map[string]string{}
	disc := map[string]string{DiscoveryTag: DiscoveryValue}
	for i, z := range s.zonesOf(DefaultRegion) {
		c.subnets = append(c.subnets, &Subnet{ID: "subnet-0" + z, Zone: z, FreeIPs: int32(4000 + 10*i), Tags: clone(disc)})
	}
	c.groups = []*SecurityGroup{{ID: "sg-0ec2test", Name: "ec2test-nodes", Tags: clone(disc)}}
	created := s.now().Add(-24 * time.Hour).UTC().Format(time.RFC3339)
	for _, arch := range []string{"x86_64", "arm64"} {
		al := &Image{ID: "ami-al2023" + archSuffix(arch), Name: "amazon-eks-node-al2023-" + arch + "-standard", Arch: arch, Created: created, Owner: "amazon", Tags: clone(disc)}
		br := &Image{ID: "ami-bottlerocket" + archSuffix(arch), Name: "bottlerocket-aws-k8s-" + arch, Arch: arch, Created: created, Owner: "amazon"}
		c.images = append(c.images, al, br)
	}
}

func archSuffix(arch string) string {
	if arch == "arm64" {
		return "arm"
	}
	return "x86"
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// SetInstanceTypes replaces the instance types the server describes.
func (s *Server) SetInstanceTypes(types []InstanceTypeData) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seedCompute()
	s.compute.types = slices.Clone(types)
}

// SetInstanceFamilies limits the instance types the server describes to the built-in ones of
// the given families (label karpenter.k8s.aws/instance-family, e.g. "m5"): a provider's
// catalog stays small, so a test that needs only a few types loads quickly, even under -race.
func (s *Server) SetInstanceFamilies(families ...string) error {
	all, err := InstanceTypes()
	if err != nil {
		return err
	}
	var few []InstanceTypeData
	for _, d := range all {
		if slices.Contains(families, d.Labels[nodeplan.LabelInstanceFamily]) {
			few = append(few, d)
		}
	}
	if len(few) == 0 {
		return fmt.Errorf("ec2test: no built-in instance type of the families %v", families)
	}
	s.SetInstanceTypes(few)
	return nil
}

// SetTypeZones limits the zones offering a type (by default every type is offered in every zone).
func (s *Server) SetTypeZones(instanceType string, zones ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seedCompute()
	s.compute.typeZones[instanceType] = slices.Clone(zones)
}

// AddSubnet, AddSecurityGroup and AddImage add to (or, for an existing ID, replace in) what the
// server knows.
func (s *Server) AddSubnet(sn Subnet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seedCompute()
	c := &s.compute
	c.subnets = slices.DeleteFunc(c.subnets, func(o *Subnet) bool { return o.ID == sn.ID })
	c.subnets = append(c.subnets, &sn)
}

// AddSecurityGroup: see AddSubnet.
func (s *Server) AddSecurityGroup(g SecurityGroup) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seedCompute()
	c := &s.compute
	c.groups = slices.DeleteFunc(c.groups, func(o *SecurityGroup) bool { return o.ID == g.ID })
	c.groups = append(c.groups, &g)
}

// AddImage: see AddSubnet.
func (s *Server) AddImage(img Image) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seedCompute()
	c := &s.compute
	c.images = slices.DeleteFunc(c.images, func(o *Image) bool { return o.ID == img.ID })
	c.images = append(c.images, &img)
}

// RemoveSubnet forgets a subnet (for drift tests).
func (s *Server) RemoveSubnet(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seedCompute()
	s.compute.subnets = slices.DeleteFunc(s.compute.subnets, func(o *Subnet) bool { return o.ID == id })
}

// SetCapacityError makes CreateFleet refuse the offering with the error code
// (InsufficientInstanceCapacity if empty); capacityType is "spot" or "on-demand".
func (s *Server) SetCapacityError(capacityType, instanceType, zone, code string) {
	if code == "" {
		code = "InsufficientInstanceCapacity"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seedCompute()
	s.compute.capErrs[capacityType+":"+instanceType+":"+zone] = code
}

// ClearCapacityErrors removes every capacity error.
func (s *Server) ClearCapacityErrors() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seedCompute()
	clear(s.compute.capErrs)
}

// FailFleetAfterLaunch makes the next n CreateFleet calls launch their instances and then answer
// with err (a 500 InternalError if nil), as when a response is lost: the instances exist but
// the caller does not learn of them. A call repeating an earlier client token meets the fault
// too, and otherwise gets the earlier answer, as EC2's idempotency promises.
func (s *Server) FailFleetAfterLaunch(n int, err *APIError) {
	if err == nil {
		err = &APIError{Code: "InternalError", Message: "An internal error has occurred", Status: http.StatusInternalServerError}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seedCompute()
	for range n {
		s.compute.afterLaunch = append(s.compute.afterLaunch, err)
	}
}

// FleetExtraInstances makes the next n CreateFleet calls that launch anything launch one
// instance more than their target capacity asks for (on the next override in price order), and
// answer with all of them: a partial fleet's other face, which a caller must not leave running.
func (s *Server) FleetExtraInstances(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seedCompute()
	s.compute.extra += n
}

// Instances returns every instance the server launched, in launch order, terminated ones included.
func (s *Server) Instances() []Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seedCompute()
	out := make([]Instance, 0, len(s.compute.order))
	for _, id := range s.compute.order {
		i := *s.compute.instances[id]
		i.Tags = clone(i.Tags)
		out = append(out, i)
	}
	return out
}

// LaunchTemplates returns the launch templates, by name.
func (s *Server) LaunchTemplates() []LaunchTemplate {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seedCompute()
	var out []LaunchTemplate
	for _, name := range sortedKeys(s.compute.templates) {
		out = append(out, *s.compute.templates[name])
	}
	return out
}

// DeleteLaunchTemplates forgets every launch template, as if deleted outside the provider.
func (s *Server) DeleteLaunchTemplates() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seedCompute()
	clear(s.compute.templates)
}

// DenyTerminate makes TerminateInstances refuse the instances, as an IAM policy scoped by tag
// refuses instances it does not cover: a call that names any of them fails whole with
// UnauthorizedOperation and terminates nothing.
func (s *Server) DenyTerminate(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seedCompute()
	if s.compute.denied == nil {
		s.compute.denied = map[string]bool{}
	}
	for _, id := range ids {
		s.compute.denied[id] = true
	}
}

// instanceIDPattern is the shape of an instance id; EC2 answers InvalidInstanceID.Malformed to
// anything else.
var instanceIDPattern = regexp.MustCompile(`^i-[0-9a-f]{8}([0-9a-f]{9})?$`)

// checkInstanceIDs fails the way EC2 fails a call naming ids it cannot use: the first malformed
// id, else the unknown ones, fail the whole call.
func (c *computeState) checkInstanceIDs(ids []string) *APIError {
	var missing []string
	for _, id := range ids {
		if !instanceIDPattern.MatchString(id) {
			return &APIError{Code: "InvalidInstanceID.Malformed", Message: fmt.Sprintf("Invalid id: \"%s\"", id)}
		}
		if _, ok := c.instances[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) == 1 {
		return &APIError{Code: "InvalidInstanceID.NotFound", Message: fmt.Sprintf("The instance ID '%s' does not exist", missing[0])}
	} else if len(missing) > 1 {
		return &APIError{Code: "InvalidInstanceID.NotFound", Message: fmt.Sprintf("The instance IDs '%s' do not exist", strings.Join(missing, ", "))}
	}
	return nil
}

// LaunchInstance adds a running instance, as if launched outside the code under test.
func (s *Server) LaunchInstance(i Instance) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seedCompute()
	return s.addInstance(i)
}

func (s *Server) addInstance(i Instance) string {
	c := &s.compute
	c.seq++
	if i.ID == "" {
		i.ID = fmt.Sprintf("i-%017x", c.seq)
	}
	if i.State == "" {
		i.State = "running"
	}
	if i.Lifecycle == "" {
		i.Lifecycle = "on-demand"
	}
	if i.LaunchTime.IsZero() {
		i.LaunchTime = s.now()
	}
	i.Tags = clone(i.Tags)
	c.instances[i.ID] = &i
	c.order = append(c.order, i.ID)
	return i.ID
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// --- wire types ---

type xmlTag struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

func xmlTags(m map[string]string) xmlItems[xmlTag] {
	var out xmlItems[xmlTag]
	for _, k := range sortedKeys(m) {
		out.Items = append(out.Items, xmlTag{k, m[k]})
	}
	return out
}

// tagsMatch applies tag:<k> and tag-key filters.
func tagsMatch(filters map[string][]string, tags map[string]string) bool {
	for name, vals := range filters {
		if k, ok := strings.CutPrefix(name, "tag:"); ok {
			v, present := tags[k]
			if !present || !matchAny(vals, v) {
				return false
			}
		}
		if name == "tag-key" {
			for _, k := range vals {
				if _, ok := tags[k]; !ok {
					return false
				}
			}
		}
	}
	return true
}

// matchAny reports whether v matches one of the patterns (* and ? wildcards, as EC2 filters).
func matchAny(patterns []string, v string) bool {
	for _, p := range patterns {
		if wildcard(p, v) {
			return true
		}
	}
	return false
}

func wildcard(p, v string) bool {
	if p == "" {
		return v == ""
	}
	switch p[0] {
	case '*':
		for i := 0; i <= len(v); i++ {
			if wildcard(p[1:], v[i:]) {
				return true
			}
		}
		return false
	case '?':
		return v != "" && wildcard(p[1:], v[1:])
	}
	return v != "" && p[0] == v[0] && wildcard(p[1:], v[1:])
}

func filterOK(filters map[string][]string, name, v string) bool {
	vals, ok := filters[name]
	return !ok || matchAny(vals, v)
}

// page applies MaxResults/NextToken paging to n items, returning the range and the next token.
func page(form url.Values, n, defaultMax int) (lo, hi int, next string, err error) {
	max := defaultMax
	if v := form.Get("MaxResults"); v != "" {
		if max, err = strconv.Atoi(v); err != nil || max < 1 {
			return 0, 0, "", invalidParameter("MaxResults", v)
		}
	}
	if t := form.Get("NextToken"); t != "" {
		if lo, err = strconv.Atoi(t); err != nil || lo < 0 || lo > n {
			return 0, 0, "", &APIError{Code: "InvalidPaginationToken", Message: "The pagination token is invalid."}
		}
	}
	hi = min(n, lo+max)
	if hi < n {
		next = strconv.Itoa(hi)
	}
	return lo, hi, next, nil
}

type describeInstanceTypesResponse struct {
	InstanceTypeSet xmlItems[xmlInstanceType] `xml:"instanceTypeSet"`
	NextToken       string                    `xml:"nextToken,omitempty"`
}

func (s *Server) describeInstanceTypes(r *Request) (any, error) {
	s.seedCompute()
	f := queryFilters(r.Form)
	names := listParam(r.Form, "InstanceType")
	var match []*InstanceTypeData
	for i := range s.compute.types {
		d := &s.compute.types[i]
		arch := "x86_64"
		if d.Labels["kubernetes.io/arch"] == "arm64" {
			arch = "arm64"
		}
		if (len(names) > 0 && !slices.Contains(names, d.Name)) || !filterOK(f, "processor-info.supported-architecture", arch) ||
			!filterOK(f, "supported-virtualization-type", "hvm") || !filterOK(f, "instance-type", d.Name) {
			continue
		}
		match = append(match, d)
	}
	lo, hi, next, err := page(r.Form, len(match), 100)
	if err != nil {
		return nil, err
	}
	resp := &describeInstanceTypesResponse{NextToken: next}
	for _, d := range match[lo:hi] {
		resp.InstanceTypeSet.Items = append(resp.InstanceTypeSet.Items, d.wire())
	}
	return resp, nil
}

type xmlOffering struct {
	InstanceType string `xml:"instanceType"`
	LocationType string `xml:"locationType"`
	Location     string `xml:"location"`
}

type describeInstanceTypeOfferingsResponse struct {
	Set       xmlItems[xmlOffering] `xml:"instanceTypeOfferingSet"`
	NextToken string                `xml:"nextToken,omitempty"`
}

func (s *Server) describeInstanceTypeOfferings(r *Request) (any, error) {
	s.seedCompute()
	if lt := r.Form.Get("LocationType"); lt != "" && lt != "availability-zone" {
		return nil, invalidParameter("LocationType", lt)
	}
	f := queryFilters(r.Form)
	zones := s.zonesOf(DefaultRegion)
	var all []xmlOffering
	for _, d := range s.compute.types {
		zs, ok := s.compute.typeZones[d.Name]
		if !ok {
			zs = zones
		}
		for _, z := range zs {
			if filterOK(f, "instance-type", d.Name) && filterOK(f, "location", z) {
				all = append(all, xmlOffering{d.Name, "availability-zone", z})
			}
		}
	}
	lo, hi, next, err := page(r.Form, len(all), 1000)
	if err != nil {
		return nil, err
	}
	return &describeInstanceTypeOfferingsResponse{Set: xmlItems[xmlOffering]{all[lo:hi]}, NextToken: next}, nil
}

type xmlSubnet struct {
	SubnetID                string           `xml:"subnetId"`
	State                   string           `xml:"state"`
	VpcID                   string           `xml:"vpcId"`
	AvailabilityZone        string           `xml:"availabilityZone"`
	AvailabilityZoneID      string           `xml:"availabilityZoneId"`
	AvailableIPAddressCount int32            `xml:"availableIpAddressCount"`
	TagSet                  xmlItems[xmlTag] `xml:"tagSet"`
}

type describeSubnetsResponse struct {
	SubnetSet xmlItems[xmlSubnet] `xml:"subnetSet"`
}

func (s *Server) describeSubnets(r *Request) (any, error) {
	s.seedCompute()
	f := queryFilters(r.Form)
	ids := listParam(r.Form, "SubnetId")
	resp := &describeSubnetsResponse{}
	for _, sn := range s.compute.subnets {
		if (len(ids) > 0 && !slices.Contains(ids, sn.ID)) || !filterOK(f, "subnet-id", sn.ID) || !tagsMatch(f, sn.Tags) {
			continue
		}
		resp.SubnetSet.Items = append(resp.SubnetSet.Items, xmlSubnet{sn.ID, "available", "vpc-0ec2test", sn.Zone, ZoneID(sn.Zone), sn.FreeIPs, xmlTags(sn.Tags)})
	}
	return resp, nil
}

type xmlSecurityGroup struct {
	GroupID   string           `xml:"groupId"`
	GroupName string           `xml:"groupName"`
	VpcID     string           `xml:"vpcId"`
	TagSet    xmlItems[xmlTag] `xml:"tagSet"`
}

type describeSecurityGroupsResponse struct {
	Info xmlItems[xmlSecurityGroup] `xml:"securityGroupInfo"`
}

func (s *Server) describeSecurityGroups(r *Request) (any, error) {
	s.seedCompute()
	f := queryFilters(r.Form)
	ids := listParam(r.Form, "GroupId")
	resp := &describeSecurityGroupsResponse{}
	for _, g := range s.compute.groups {
		if (len(ids) > 0 && !slices.Contains(ids, g.ID)) || !filterOK(f, "group-id", g.ID) || !filterOK(f, "group-name", g.Name) || !tagsMatch(f, g.Tags) {
			continue
		}
		resp.Info.Items = append(resp.Info.Items, xmlSecurityGroup{g.ID, g.Name, "vpc-0ec2test", xmlTags(g.Tags)})
	}
	return resp, nil
}

type xmlImage struct {
	ImageID      string           `xml:"imageId"`
	Name         string           `xml:"name"`
	Architecture string           `xml:"architecture"`
	CreationDate string           `xml:"creationDate"`
	ImageState   string           `xml:"imageState"`
	OwnerID      string           `xml:"imageOwnerId"`
	TagSet       xmlItems[xmlTag] `xml:"tagSet"`
}

type describeImagesResponse struct {
	ImagesSet xmlItems[xmlImage] `xml:"imagesSet"`
}

func (s *Server) describeImages(r *Request) (any, error) {
	s.seedCompute()
	f := queryFilters(r.Form)
	ids := listParam(r.Form, "ImageId")
	owners := listParam(r.Form, "Owner")
	for _, id := range ids {
		if !slices.ContainsFunc(s.compute.images, func(i *Image) bool { return i.ID == id }) {
			return nil, &APIError{Code: "InvalidAMIID.NotFound", Message: fmt.Sprintf("The image id '[%s]' does not exist", id)}
		}
	}
	resp := &describeImagesResponse{}
	for _, img := range s.compute.images {
		if (len(ids) > 0 && !slices.Contains(ids, img.ID)) || (len(owners) > 0 && !slices.Contains(owners, img.Owner)) ||
			!filterOK(f, "name", img.Name) || !filterOK(f, "image-id", img.ID) || !filterOK(f, "architecture", img.Arch) || !tagsMatch(f, img.Tags) {
			continue
		}
		resp.ImagesSet.Items = append(resp.ImagesSet.Items, xmlImage{img.ID, img.Name, img.Arch, img.Created, "available", img.Owner, xmlTags(img.Tags)})
	}
	return resp, nil
}

type xmlLaunchTemplate struct {
	LaunchTemplateID     string `xml:"launchTemplateId"`
	LaunchTemplateName   string `xml:"launchTemplateName"`
	DefaultVersionNumber int64  `xml:"defaultVersionNumber"`
	LatestVersionNumber  int64  `xml:"latestVersionNumber"`
}

func ltNotFound(name string) *APIError {
	return &APIError{Code: "InvalidLaunchTemplateName.NotFoundException", Message: fmt.Sprintf("At least one of the launch templates specified in the request does not exist. (%s)", name)}
}

func (s *Server) createLaunchTemplate(r *Request) (any, error) {
	s.seedCompute()
	name := r.Form.Get("LaunchTemplateName")
	if name == "" {
		return nil, &APIError{Code: "MissingParameter", Message: "The request must contain the parameter LaunchTemplateName"}
	}
	if _, ok := s.compute.templates[name]; ok {
		return nil, &APIError{Code: "InvalidLaunchTemplateName.AlreadyExistsException", Message: fmt.Sprintf("Launch template name already in use: %s", name)}
	}
	data := url.Values{}
	for k, v := range r.Form {
		if rest, ok := strings.CutPrefix(k, "LaunchTemplateData."); ok {
			data[rest] = v
		}
	}
	s.compute.seq++
	lt := &LaunchTemplate{ID: fmt.Sprintf("lt-%017x", s.compute.seq), Name: name, Data: data}
	s.compute.templates[name] = lt
	return &struct {
		LaunchTemplate xmlLaunchTemplate `xml:"launchTemplate"`
	}{xmlLaunchTemplate{lt.ID, lt.Name, 1, 1}}, nil
}

func (s *Server) describeLaunchTemplates(r *Request) (any, error) {
	s.seedCompute()
	names := listParam(r.Form, "LaunchTemplateName")
	resp := &struct {
		LaunchTemplates xmlItems[xmlLaunchTemplate] `xml:"launchTemplates"`
	}{}
	for _, n := range names {
		if _, ok := s.compute.templates[n]; !ok {
			return nil, ltNotFound(n)
		}
	}
	for _, n := range sortedKeys(s.compute.templates) {
		if len(names) == 0 || slices.Contains(names, n) {
			lt := s.compute.templates[n]
			resp.LaunchTemplates.Items = append(resp.LaunchTemplates.Items, xmlLaunchTemplate{lt.ID, lt.Name, 1, 1})
		}
	}
	return resp, nil
}

func (s *Server) deleteLaunchTemplate(r *Request) (any, error) {
	s.seedCompute()
	name := r.Form.Get("LaunchTemplateName")
	lt, ok := s.compute.templates[name]
	if !ok {
		return nil, ltNotFound(name)
	}
	delete(s.compute.templates, name)
	return &struct {
		LaunchTemplate xmlLaunchTemplate `xml:"launchTemplate"`
	}{xmlLaunchTemplate{lt.ID, lt.Name, 1, 1}}, nil
}

type xmlFleetOverrides struct {
	InstanceType     string `xml:"instanceType"`
	SubnetID         string `xml:"subnetId"`
	AvailabilityZone string `xml:"availabilityZone"`
	ImageID          string `xml:"imageId,omitempty"`
}

type xmlLaunchTemplateAndOverrides struct {
	Spec struct {
		LaunchTemplateName string `xml:"launchTemplateName"`
		Version            string `xml:"version"`
	} `xml:"launchTemplateSpecification"`
	Overrides xmlFleetOverrides `xml:"overrides"`
}

type xmlFleetError struct {
	LTO          xmlLaunchTemplateAndOverrides `xml:"launchTemplateAndOverrides"`
	Lifecycle    string                        `xml:"lifecycle"`
	ErrorCode    string                        `xml:"errorCode"`
	ErrorMessage string                        `xml:"errorMessage"`
}

type xmlFleetInstance struct {
	LTO          xmlLaunchTemplateAndOverrides `xml:"launchTemplateAndOverrides"`
	Lifecycle    string                        `xml:"lifecycle"`
	InstanceIDs  xmlItems[string]              `xml:"instanceIds"`
	InstanceType string                        `xml:"instanceType"`
}

type createFleetResponse struct {
	FleetID   string                     `xml:"fleetId"`
	ErrorSet  xmlItems[xmlFleetError]    `xml:"errorSet"`
	Instances xmlItems[xmlFleetInstance] `xml:"fleetInstanceSet"`
}

type fleetOverride struct {
	template string
	xmlFleetOverrides
	price float64
	order int
}

// createFleet launches instant fleets: it tries the overrides cheapest first (the order EC2's
// lowest-price and price-capacity-optimized strategies mostly give), reports an error for every
// override whose offering has a capacity error, and launches into the first that has none.
func (s *Server) createFleet(r *Request) (any, error) {
	s.seedCompute()
	c := &s.compute
	form := r.Form
	if t := form.Get("Type"); t != "instant" {
		return nil, invalidParameter("Type", t)
	}
	token := form.Get("ClientToken")
	if token != "" {
		if prev, ok := c.fleets[token]; ok {
			if len(c.afterLaunch) > 0 {
				err := c.afterLaunch[0]
				c.afterLaunch = c.afterLaunch[1:]
				return nil, err
			}
			if prev.err != nil {
				return nil, prev.err
			}
			return prev.resp, nil
		}
	}
	ct := form.Get("TargetCapacitySpecification.DefaultTargetCapacityType")
	if ct != "spot" && ct != "on-demand" {
		return nil, invalidParameter("TargetCapacitySpecification.DefaultTargetCapacityType", ct)
	}
	total, _ := strconv.Atoi(form.Get("TargetCapacitySpecification.TotalTargetCapacity"))
	if total < 1 {
		total = 1
	}
	tags := map[string]map[string]string{}
	for i := 1; ; i++ {
		p := "TagSpecification." + strconv.Itoa(i) + "."
		rt := form.Get(p + "ResourceType")
		if rt == "" {
			break
		}
		tags[rt] = map[string]string{}
		for j := 1; ; j++ {
			k, ok := form[p+"Tag."+strconv.Itoa(j)+".Key"]
			if !ok {
				break
			}
			tags[rt][k[0]] = form.Get(p + "Tag." + strconv.Itoa(j) + ".Value")
		}
	}
	od := s.onDemandPrices(DefaultRegion)
	resp := &createFleetResponse{FleetID: fmt.Sprintf("fleet-%08x-0000-4000-8000-%012x", c.seq+1, c.seq+1)}
	var overrides []fleetOverride
	for i := 1; ; i++ {
		p := "LaunchTemplateConfigs." + strconv.Itoa(i) + "."
		name := form.Get(p + "LaunchTemplateSpecification.LaunchTemplateName")
		if name == "" {
			break
		}
		for j := 1; ; j++ {
			q := p + "Overrides." + strconv.Itoa(j) + "."
			it := form.Get(q + "InstanceType")
			if it == "" {
				break
			}
			o := fleetOverride{template: name, order: len(overrides), xmlFleetOverrides: xmlFleetOverrides{
				InstanceType: it, SubnetID: form.Get(q + "SubnetId"), AvailabilityZone: form.Get(q + "AvailabilityZone"), ImageID: form.Get(q + "ImageId")}}
			if o.AvailabilityZone == "" {
				for _, sn := range c.subnets {
					if sn.ID == o.SubnetID {
						o.AvailabilityZone = sn.Zone
					}
				}
			}
			o.price = od[it]
			if ct == "spot" && o.price > 0 {
				o.price = SeededSpotPrice(it, o.AvailabilityZone, o.price)
			}
			overrides = append(overrides, o)
		}
	}
	if len(overrides) == 0 {
		return nil, &APIError{Code: "InvalidFleetConfiguration", Message: "The fleet request has no launch template overrides."}
	}
	slices.SortStableFunc(overrides, func(a, b fleetOverride) int { return cmp.Compare(a.price, b.price) })
	lto := func(o fleetOverride) xmlLaunchTemplateAndOverrides {
		var x xmlLaunchTemplateAndOverrides
		x.Spec.LaunchTemplateName, x.Spec.Version, x.Overrides = o.template, "$Latest", o.xmlFleetOverrides
		return x
	}
	launched := 0
	if c.extra > 0 {
		total++ // given back below if nothing is launched
	}
	for _, o := range overrides {
		if launched >= total {
			break
		}
		lt, ok := c.templates[o.template]
		if !ok {
			resp.ErrorSet.Items = append(resp.ErrorSet.Items, xmlFleetError{lto(o), ct, "InvalidLaunchTemplateName.NotFoundException", ltNotFound(o.template).Message})
			continue
		}
		if code, bad := c.capErrs[ct+":"+o.InstanceType+":"+o.AvailabilityZone]; bad {
			resp.ErrorSet.Items = append(resp.ErrorSet.Items, xmlFleetError{lto(o), ct, code,
				fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s).", o.InstanceType, o.AvailabilityZone)})
			continue
		}
		if !slices.ContainsFunc(c.types, func(d InstanceTypeData) bool { return d.Name == o.InstanceType }) {
			resp.ErrorSet.Items = append(resp.ErrorSet.Items, xmlFleetError{lto(o), ct, "InvalidParameterValue", "Unknown instance type " + o.InstanceType})
			continue
		}
		var subnet *Subnet
		for _, sn := range c.subnets {
			if sn.ID == o.SubnetID {
				subnet = sn
			}
		}
		if subnet == nil {
			resp.ErrorSet.Items = append(resp.ErrorSet.Items, xmlFleetError{lto(o), ct, "InvalidSubnetID.NotFound", "The subnet ID '" + o.SubnetID + "' does not exist"})
			continue
		}
		if subnet.FreeIPs < 1 {
			resp.ErrorSet.Items = append(resp.ErrorSet.Items, xmlFleetError{lto(o), ct, "InsufficientFreeAddressesInSubnet", "There are not enough free addresses in subnet '" + subnet.ID + "'."})
			continue
		}
		subnet.FreeIPs--
		image := o.ImageID
		if image == "" {
			image = lt.Data.Get("ImageId")
		}
		id := s.addInstance(Instance{Type: o.InstanceType, Zone: o.AvailabilityZone, SubnetID: subnet.ID, ImageID: image, Lifecycle: ct,
			SecurityGroups: listParam(lt.Data, "SecurityGroupId"), Tags: tags["instance"], LaunchTemplate: o.template, State: "pending"})
		resp.Instances.Items = append(resp.Instances.Items, xmlFleetInstance{lto(o), ct, xmlItems[string]{[]string{id}}, o.InstanceType})
		launched++
	}
	if c.extra > 0 && launched > 0 {
		c.extra--
	}
	if token != "" {
		c.fleets[token] = fleetResult{resp: resp}
	}
	if len(c.afterLaunch) > 0 {
		err := c.afterLaunch[0]
		c.afterLaunch = c.afterLaunch[1:]
		return nil, err
	}
	return resp, nil
}

type xmlState struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

var stateCodes = map[string]int{"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48, "stopping": 64, "stopped": 80}

type xmlGroup struct {
	GroupID string `xml:"groupId"`
}

type xmlInstance struct {
	InstanceID   string   `xml:"instanceId"`
	ImageID      string   `xml:"imageId"`
	State        xmlState `xml:"instanceState"`
	InstanceType string   `xml:"instanceType"`
	LaunchTime   string   `xml:"launchTime"`
	Placement    struct {
		Zone   string `xml:"availabilityZone"`
		ZoneID string `xml:"availabilityZoneId"`
	} `xml:"placement"`
	SubnetID          string             `xml:"subnetId"`
	Architecture      string             `xml:"architecture"`
	InstanceLifecycle string             `xml:"instanceLifecycle,omitempty"`
	SpotRequestID     string             `xml:"spotInstanceRequestId,omitempty"`
	GroupSet          xmlItems[xmlGroup] `xml:"groupSet"`
	TagSet            xmlItems[xmlTag]   `xml:"tagSet"`
}

type xmlReservation struct {
	ReservationID string                `xml:"reservationId"`
	OwnerID       string                `xml:"ownerId"`
	Instances     xmlItems[xmlInstance] `xml:"instancesSet"`
}

func (s *Server) wireInstance(i *Instance) xmlInstance {
	x := xmlInstance{InstanceID: i.ID, ImageID: i.ImageID, State: xmlState{stateCodes[i.State], i.State}, InstanceType: i.Type,
		LaunchTime: i.LaunchTime.UTC().Format(time.RFC3339), SubnetID: i.SubnetID, Architecture: "x86_64", TagSet: xmlTags(i.Tags)}
	x.Placement.Zone = i.Zone
	x.Placement.ZoneID = ZoneID(i.Zone)
	for _, d := range s.compute.types {
		if d.Name == i.Type && d.Labels["kubernetes.io/arch"] == "arm64" {
			x.Architecture = "arm64"
		}
	}
	if i.Lifecycle == "spot" {
		x.InstanceLifecycle = "spot"
		x.SpotRequestID = "sir-" + strings.TrimPrefix(i.ID, "i-")
	}
	for _, g := range i.SecurityGroups {
		x.GroupSet.Items = append(x.GroupSet.Items, xmlGroup{g})
	}
	return x
}

// advance moves instances along their lifecycle one step per describe: pending → running,
// shutting-down → terminated.
func (s *Server) advance(i *Instance) {
	switch i.State {
	case "pending":
		i.State = "running"
	case "shutting-down":
		i.State = "terminated"
	}
}

func (s *Server) describeInstances(r *Request) (any, error) {
	s.seedCompute()
	c := &s.compute
	f := queryFilters(r.Form)
	ids := listParam(r.Form, "InstanceId")
	if err := c.checkInstanceIDs(ids); err != nil {
		return nil, err
	}
	var match []*Instance
	for _, id := range c.order {
		i := c.instances[id]
		if (len(ids) > 0 && !slices.Contains(ids, id)) || !filterOK(f, "instance-id", id) || !filterOK(f, "instance-state-name", i.State) || !tagsMatch(f, i.Tags) {
			continue
		}
		match = append(match, i)
	}
	lo, hi, next, err := page(r.Form, len(match), 1000)
	if err != nil {
		return nil, err
	}
	resp := &struct {
		Reservations xmlItems[xmlReservation] `xml:"reservationSet"`
		NextToken    string                   `xml:"nextToken,omitempty"`
	}{NextToken: next}
	for _, i := range match[lo:hi] {
		resp.Reservations.Items = append(resp.Reservations.Items, xmlReservation{"r-" + strings.TrimPrefix(i.ID, "i-"), "123456789012",
			xmlItems[xmlInstance]{[]xmlInstance{s.wireInstance(i)}}})
	}
	for _, i := range match {
		s.advance(i)
	}
	return resp, nil
}

type xmlStateChange struct {
	InstanceID    string   `xml:"instanceId"`
	CurrentState  xmlState `xml:"currentState"`
	PreviousState xmlState `xml:"previousState"`
}

func (s *Server) terminateInstances(r *Request) (any, error) {
	s.seedCompute()
	c := &s.compute
	ids := listParam(r.Form, "InstanceId")
	if err := c.checkInstanceIDs(ids); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if c.denied[id] {
			return nil, &APIError{Code: "UnauthorizedOperation", Message: "You are not authorized to perform this operation. Encoded authorization failure message: ec2test-denied-" + id}
		}
	}
	resp := &struct {
		Set xmlItems[xmlStateChange] `xml:"instancesSet"`
	}{}
	for _, id := range ids {
		i := c.instances[id]
		prev := i.State
		if prev != "terminated" {
			i.State = "shutting-down"
		}
		resp.Set.Items = append(resp.Set.Items, xmlStateChange{id, xmlState{stateCodes[i.State], i.State}, xmlState{stateCodes[prev], prev}})
	}
	return resp, nil
}

func (s *Server) createTags(r *Request) (any, error) {
	s.seedCompute()
	ids := listParam(r.Form, "ResourceId")
	for _, id := range ids {
		i, ok := s.compute.instances[id]
		if !ok {
			continue
		}
		for j := 1; ; j++ {
			k, ok := r.Form["Tag."+strconv.Itoa(j)+".Key"]
			if !ok {
				break
			}
			i.Tags[k[0]] = r.Form.Get("Tag." + strconv.Itoa(j) + ".Value")
		}
	}
	return &struct {
		Return bool `xml:"return"`
	}{true}, nil
}

// regionCodes abbreviate regions in zone IDs as EC2 does (us-east-1a is in use1).
var regionCodes = map[string]string{
	"us-east-1": "use1", "us-east-2": "use2", "us-west-1": "usw1", "us-west-2": "usw2",
	"eu-west-1": "euw1", "eu-west-2": "euw2", "eu-central-1": "euc1", "ap-southeast-1": "apse1",
	"ap-southeast-2": "apse2", "ap-northeast-1": "apne1", "ap-northeast-2": "apne2", "ap-south-1": "aps1",
}

// ZoneID is the server's zone ID of a zone name: <region code>-az<n>, the zone's letter's
// position (us-east-1c is use1-az3). Real accounts map names to IDs differently; one fixed
// mapping is enough for a fake.
func ZoneID(zone string) string {
	if len(zone) < 2 {
		return ""
	}
	region, letter := zone[:len(zone)-1], zone[len(zone)-1]
	code, ok := regionCodes[region]
	if !ok {
		code = strings.ReplaceAll(region, "-", "")
	}
	return fmt.Sprintf("%s-az%d", code, int(letter-'a')+1)
}
