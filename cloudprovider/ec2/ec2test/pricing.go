package ec2test

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/nodeplan/nodeplan/pricing"
)

// pricingEndpointRegions are the regions the AWS Price List Query API has an endpoint in. A
// Pricing call signed for any other region fails, as it would for want of an endpoint.
var pricingEndpointRegions = []string{"us-east-1", "eu-central-1", "ap-south-1", "cn-northwest-1"}

// pricingState holds the on-demand prices the Pricing API serves, per region.
type pricingState struct {
	prices map[string]regionPrices // region → prices set by SetOnDemandPrices
	extra  map[string][]string     // region → raw documents added by AddPriceDocuments
	docs   map[string][]product    // region → documents built, cached until prices change

	// The answer to the last query, so paging through it does not filter the list again.
	lastQuery string
	lastList  []string
}

type regionPrices struct {
	currency string
	prices   map[string]float64
}

// product is one document of the price list, with what filters match on.
type product struct {
	fields map[string]string // lower-cased attribute names (and productfamily, servicecode) → values
	doc    string
}

// SetOnDemandPrices sets the on-demand prices, in currency per hour (USD if empty), that the
// Pricing API serves for region, replacing the built-in ones (the static tables of package
// pricing). The spot prices the server seeds for the region follow them, unless spot prices
// were already seeded or set.
func (s *Server) SetOnDemandPrices(region, currency string, prices map[string]float64) {
	if currency == "" {
		currency = "USD"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pricing.prices == nil {
		s.pricing.prices = map[string]regionPrices{}
	}
	s.pricing.prices[region] = regionPrices{currency, maps.Clone(prices)}
	delete(s.pricing.docs, region)
	s.pricing.lastQuery = ""
}

// AddPriceDocuments adds raw documents to the price list of region, served after the built ones
// and matched by no filter but regionCode: use them for malformed or unusual products.
func (s *Server) AddPriceDocuments(region string, docs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pricing.extra == nil {
		s.pricing.extra = map[string][]string{}
	}
	s.pricing.extra[region] = append(s.pricing.extra[region], docs...)
	s.pricing.lastQuery = ""
}

// onDemandPrices returns the prices of region and their currency. s.mu must be held.
func (s *Server) onDemandPrices(region string) map[string]float64 {
	p, _ := s.regionPrices(region)
	return p.prices
}

func (s *Server) regionPrices(region string) (regionPrices, bool) {
	if p, ok := s.pricing.prices[region]; ok {
		return p, true
	}
	if cur, prices, ok := builtinOnDemand(region); ok {
		return regionPrices{cur, prices}, true
	}
	return regionPrices{}, false
}

// priceRegions returns every region the server has prices for. s.mu must be held.
func (s *Server) priceRegions() []string {
	set := map[string]bool{}
	for r := range s.pricing.prices {
		set[r] = true
	}
	for _, r := range builtinRegions() {
		set[r] = true
	}
	for r := range s.pricing.extra {
		set[r] = true
	}
	return slices.Sorted(maps.Keys(set))
}

type getProductsRequest struct {
	ServiceCode   string
	FormatVersion string
	MaxResults    *int
	NextToken     string
	Filters       []struct {
		Field string
		Type  string
		Value string
	}
}

type getProductsResponse struct {
	FormatVersion string   `json:"FormatVersion"`
	NextToken     *string  `json:"NextToken,omitempty"`
	PriceList     []string `json:"PriceList"`
}

// getProducts answers the Price List Query API's GetProducts for ServiceCode AmazonEC2: the
// documents matching every filter (TERM_MATCH and EQUALS compare case-insensitively, CONTAINS,
// ANY_OF and NONE_OF as AWS documents them), at most MaxResults (100, the default) a page.
func (s *Server) getProducts(r *Request) (any, error) {
	if !slices.Contains(pricingEndpointRegions, r.Region) {
		return nil, &APIError{Code: "UnknownEndpoint", Status: http.StatusNotFound,
			Message: fmt.Sprintf("the AWS Price List Query API has no endpoint in %s", r.Region)}
	}
	var in getProductsRequest
	if err := json.Unmarshal(r.Body, &in); err != nil {
		return nil, &APIError{Code: "InvalidParameterException", Message: "malformed request: " + err.Error()}
	}
	if in.ServiceCode == "" {
		return nil, &APIError{Code: "InvalidParameterException", Message: "ServiceCode is required"}
	}
	max := 100
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > 100 {
			return nil, &APIError{Code: "InvalidParameterException", Message: "MaxResults must be between 1 and 100"}
		}
		max = *in.MaxResults
	}
	offset := 0
	if in.NextToken != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(in.NextToken, "products-"))
		if err != nil || n < 0 || !strings.HasPrefix(in.NextToken, "products-") {
			return nil, &APIError{Code: "InvalidNextTokenException", Message: "The next token is invalid."}
		}
		offset = n
	}
	for _, f := range in.Filters {
		switch f.Type {
		case "TERM_MATCH", "EQUALS", "CONTAINS", "ANY_OF", "NONE_OF":
		default:
			return nil, &APIError{Code: "InvalidParameterException", Message: "unknown filter type " + f.Type}
		}
	}

	query, _ := json.Marshal([]any{in.ServiceCode, in.Filters})
	var list []string
	if s.pricing.lastQuery == string(query) && offset > 0 {
		list = s.pricing.lastList
	} else if in.ServiceCode == "AmazonEC2" {
		regions := s.priceRegions()
		for _, f := range in.Filters {
			if strings.EqualFold(f.Field, "regionCode") && (f.Type == "TERM_MATCH" || f.Type == "EQUALS") {
				regions = []string{f.Value}
			}
		}
		fields := make([]string, len(in.Filters))
		for i, f := range in.Filters {
			fields[i] = strings.ToLower(f.Field)
		}
		for _, region := range regions {
		docs:
			for _, p := range s.productsOf(region) {
				for i, f := range in.Filters {
					if !filterMatches(f.Type, f.Value, p.fields[fields[i]]) {
						continue docs
					}
				}
				list = append(list, p.doc)
			}
			list = append(list, s.pricing.extra[region]...)
		}
		s.pricing.lastQuery, s.pricing.lastList = string(query), list
	}
	out := getProductsResponse{FormatVersion: "aws_v1", PriceList: []string{}}
	if offset < len(list) {
		stop := min(offset+max, len(list))
		out.PriceList = list[offset:stop]
		if stop < len(list) {
			tok := "products-" + strconv.Itoa(stop)
			out.NextToken = &tok
		}
	}
	return out, nil
}

func filterMatches(typ, want, got string) bool {
	switch typ {
	case "CONTAINS":
		return strings.Contains(strings.ToLower(got), strings.ToLower(want))
	case "ANY_OF", "NONE_OF":
		any := false
		for v := range strings.SplitSeq(want, ",") {
			if strings.EqualFold(strings.TrimSpace(v), got) {
				any = true
			}
		}
		return any == (typ == "ANY_OF")
	default:
		return strings.EqualFold(want, got)
	}
}

// productsOf builds (once) the price list of region: for each type, the Linux on-demand product
// the price comes from, and the look-alikes a query must filter out (Windows, a capacity
// reservation's unused capacity, dedicated tenancy), priced differently so a wrong query shows.
// s.mu must be held.
func (s *Server) productsOf(region string) []product {
	if docs, ok := s.pricing.docs[region]; ok {
		return docs
	}
	rp, ok := s.regionPrices(region)
	if !ok {
		return nil
	}
	var docs []product
	for _, t := range slices.Sorted(maps.Keys(rp.prices)) {
		price := rp.prices[t]
		metal := strings.Contains(t, ".metal")
		main := variant{os: "Linux", tenancy: "Shared", status: "Used", family: "Compute Instance", price: price}
		if metal {
			main.tenancy, main.family = "Dedicated", "Compute Instance (bare metal)"
		}
		vs := []variant{
			main,
			{os: "Windows", tenancy: main.tenancy, status: "Used", family: main.family, price: price*1.5 + 0.046},
			{os: "Linux", tenancy: main.tenancy, status: "UnusedCapacityReservation", family: main.family, price: price},
		}
		if !metal {
			vs = append(vs, variant{os: "Linux", tenancy: "Dedicated", status: "Used", family: main.family, price: price * 1.1})
		}
		for _, v := range vs {
			docs = append(docs, buildProduct(region, rp.currency, t, v))
		}
	}
	if s.pricing.docs == nil {
		s.pricing.docs = map[string][]product{}
	}
	s.pricing.docs[region] = docs
	return docs
}

type variant struct {
	os, tenancy, status, family string
	price                       float64
}

// priceDocument is the shape of one PriceList entry for an EC2 instance, as the AWS Price List
// Query API writes it (format aws_v1), trimmed of attributes no query here looks at.
type priceDocument struct {
	Product struct {
		ProductFamily string            `json:"productFamily"`
		Attributes    map[string]string `json:"attributes"`
		SKU           string            `json:"sku"`
	} `json:"product"`
	ServiceCode     string                               `json:"serviceCode"`
	Terms           map[string]map[string]priceOfferTerm `json:"terms"`
	Version         string                               `json:"version"`
	PublicationDate string                               `json:"publicationDate"`
}

type priceOfferTerm struct {
	PriceDimensions map[string]priceDimension `json:"priceDimensions"`
	SKU             string                    `json:"sku"`
	EffectiveDate   string                    `json:"effectiveDate"`
	OfferTermCode   string                    `json:"offerTermCode"`
	TermAttributes  map[string]string         `json:"termAttributes"`
}

type priceDimension struct {
	Unit         string            `json:"unit"`
	EndRange     string            `json:"endRange"`
	Description  string            `json:"description"`
	AppliesTo    []string          `json:"appliesTo"`
	RateCode     string            `json:"rateCode"`
	BeginRange   string            `json:"beginRange"`
	PricePerUnit map[string]string `json:"pricePerUnit"`
}

// The codes AWS uses for the on-demand offer term and its hourly rate.
const (
	onDemandOfferTerm = "JRTCKXETXF"
	hourlyRateCode    = "6YS6EN2CT7"
)

func buildProduct(region, currency, instanceType string, v variant) product {
	usage := "BoxUsage:"
	if v.tenancy == "Dedicated" {
		usage = "DedicatedUsage:"
	}
	operation := "RunInstances"
	if v.os == "Windows" {
		operation = "RunInstances:0002"
	}
	attrs := map[string]string{
		"instanceType":          instanceType,
		"instanceFamily":        instanceFamily(instanceType),
		"regionCode":            region,
		"location":              regionName(region),
		"locationType":          "AWS Region",
		"operatingSystem":       v.os,
		"preInstalledSw":        "NA",
		"tenancy":               v.tenancy,
		"capacitystatus":        v.status,
		"marketoption":          "OnDemand",
		"licenseModel":          "No License required",
		"usagetype":             usagePrefix(region) + usage + instanceType,
		"operation":             operation,
		"servicecode":           "AmazonEC2",
		"servicename":           "Amazon Elastic Compute Cloud",
		"currentGeneration":     "Yes",
		"processorArchitecture": "64-bit",
	}
	sku := skuOf(region, instanceType, v)
	term := sku + "." + onDemandOfferTerm
	rate := term + "." + hourlyRateCode
	var d priceDocument
	d.Product.ProductFamily = v.family
	d.Product.Attributes = attrs
	d.Product.SKU = sku
	d.ServiceCode = "AmazonEC2"
	d.Version = "20260801000000"
	d.PublicationDate = "2026-08-01T00:00:00Z"
	d.Terms = map[string]map[string]priceOfferTerm{"OnDemand": {term: {
		PriceDimensions: map[string]priceDimension{rate: {
			Unit:         "Hrs",
			EndRange:     "Inf",
			Description:  fmt.Sprintf("%s %s per On Demand %s %s Instance Hour", currency, strconv.FormatFloat(v.price, 'f', -1, 64), v.os, instanceType),
			AppliesTo:    []string{},
			RateCode:     rate,
			BeginRange:   "0",
			PricePerUnit: map[string]string{currency: strconv.FormatFloat(v.price, 'f', 10, 64)},
		}},
		SKU:            sku,
		EffectiveDate:  "2026-08-01T00:00:00Z",
		OfferTermCode:  onDemandOfferTerm,
		TermAttributes: map[string]string{},
	}}}
	b, err := json.Marshal(d)
	if err != nil {
		panic(err) // maps of strings always encode
	}
	fields := map[string]string{"productfamily": v.family}
	for k, v := range attrs {
		fields[strings.ToLower(k)] = v
	}
	return product{fields: fields, doc: string(b)}
}

// skuOf makes a stable 16-character SKU, like AWS's, from what identifies the product.
func skuOf(region, instanceType string, v variant) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ23456789"
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%s/%s/%s/%s", region, instanceType, v.os, v.tenancy, v.status)
	n := h.Sum64()
	var b [16]byte
	for i := range b {
		b[i] = alphabet[n%uint64(len(alphabet))]
		n = n/uint64(len(alphabet)) + uint64(i)*2654435761
	}
	return string(b[:])
}

func instanceFamily(instanceType string) string {
	switch instanceType[0] {
	case 'c':
		return "Compute optimized"
	case 'r', 'x', 'u', 'z':
		return "Memory optimized"
	case 'i', 'd', 'h':
		return "Storage optimized"
	case 'g', 'p':
		return "GPU instance"
	case 'f', 'v':
		return "FPGA Instances"
	case 't', 'm', 'a':
		return "General purpose"
	}
	return "Machine Learning ASIC Instances"
}

var regionNames = map[string]string{
	"us-east-1":      "US East (N. Virginia)",
	"us-east-2":      "US East (Ohio)",
	"us-west-1":      "US West (N. California)",
	"us-west-2":      "US West (Oregon)",
	"us-gov-east-1":  "AWS GovCloud (US-East)",
	"us-gov-west-1":  "AWS GovCloud (US-West)",
	"eu-central-1":   "EU (Frankfurt)",
	"eu-west-1":      "EU (Ireland)",
	"ap-south-1":     "Asia Pacific (Mumbai)",
	"ap-southeast-2": "Asia Pacific (Sydney)",
	"cn-north-1":     "China (Beijing)",
	"cn-northwest-1": "China (Ningxia)",
}

func regionName(region string) string {
	if n, ok := regionNames[region]; ok {
		return n
	}
	return region
}

// usagePrefix is the region code AWS puts before usage types; us-east-1 has none.
func usagePrefix(region string) string {
	codes := map[string]string{"us-east-1": "", "us-east-2": "USE2-", "us-west-1": "USW1-", "us-west-2": "USW2-",
		"us-gov-east-1": "UGE1-", "us-gov-west-1": "UGW1-", "eu-central-1": "EUC1-", "eu-west-1": "EU-",
		"ap-south-1": "APS3-", "ap-southeast-2": "APS2-", "cn-north-1": "CNN1-", "cn-northwest-1": "CNW1-"}
	if c, ok := codes[region]; ok {
		return c
	}
	return strings.ToUpper(region) + "-"
}

// builtinOnDemand returns the on-demand prices of region from the static tables of package
// pricing.
func builtinOnDemand(region string) (currency string, prices map[string]float64, ok bool) {
	t, err := pricing.Static(region)
	if err != nil {
		return "", nil, false
	}
	return t.Currency(), t.Prices(), true
}

// builtinRegions returns the regions with built-in prices.
func builtinRegions() []string { return pricing.StaticRegions() }
