package ec2test

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SpotPrice is one entry of the spot price history: from Timestamp on, the type costs Price in
// the zone, until a later entry for the same type, zone and product replaces it.
type SpotPrice struct {
	InstanceType string
	Zone         string
	// ProductDescription is the platform; "" means Linux/UNIX.
	ProductDescription string
	// Price is in the region's currency per hour, sent with six decimals as EC2 does
	// ("0.031200") unless RawPrice is set.
	Price float64
	// RawPrice, when set, is sent verbatim in place of Price: use it for malformed prices.
	RawPrice string
	// Timestamp is when the price took effect; zero means an hour before the server's now.
	Timestamp time.Time
}

// spotState holds the spot price history, per region.
type spotState struct {
	zones    map[string][]string    // region → zones, when set by WithZones
	history  map[string][]SpotPrice // region → entries
	prepared map[string]bool        // region → history seeded (or cleared)
}

// WithZones sets the zones of a region, in which the server seeds its spot prices. The default
// is the region's name followed by a, b and c.
func WithZones(region string, zones ...string) Option {
	return func(s *Server) {
		if s.spot.zones == nil {
			s.spot.zones = map[string][]string{}
		}
		s.spot.zones[region] = slices.Clone(zones)
	}
}

// Zones returns the zones of region.
func (s *Server) Zones(region string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.zonesOf(region))
}

func (s *Server) zonesOf(region string) []string {
	if z, ok := s.spot.zones[region]; ok {
		return z
	}
	return []string{region + "a", region + "b", region + "c"}
}

// SetSpotPrices adds entries to the spot price history of region. The first call for a region
// replaces the seeded history; later calls add to it.
func (s *Server) SetSpotPrices(region string, prices ...SpotPrice) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spot.history == nil {
		s.spot.history = map[string][]SpotPrice{}
		s.spot.prepared = map[string]bool{}
	}
	if !s.spot.prepared[region] {
		s.spot.prepared[region] = true
		s.spot.history[region] = nil
	}
	now := s.now()
	for _, p := range prices {
		if p.ProductDescription == "" {
			p.ProductDescription = "Linux/UNIX"
		}
		if p.Timestamp.IsZero() {
			p.Timestamp = now.Add(-time.Hour)
		}
		s.spot.history[region] = append(s.spot.history[region], p)
	}
}

// ClearSpotPrices empties the spot price history of region: DescribeSpotPriceHistory answers
// with no prices until SetSpotPrices adds some.
func (s *Server) ClearSpotPrices(region string) {
	s.SetSpotPrices(region)
}

// SeededSpotPrice returns the spot price the server seeds for the type in the zone, given its
// on-demand price: 28% to 42% of it, fixed per type and zone. It is the model of the synthetic
// spot prices in the repository's catalog data (FNV-1a of "shared-data-2026-08-2/<type>/<zone>"),
// so the two agree.
func SeededSpotPrice(instanceType, zone string, onDemand float64) float64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "shared-data-2026-08-2/%s/%s", instanceType, zone)
	u := float64(h.Sum64()%1000000) / 1000000
	p := math.Round(onDemand*0.35*(0.8+0.4*u)*10000) / 10000
	return max(p, 0.0001)
}

// spotHistory returns the history of region, seeding it on first use. s.mu must be held.
func (s *Server) spotHistory(region string) []SpotPrice {
	if s.spot.prepared[region] {
		return s.spot.history[region]
	}
	if s.spot.history == nil {
		s.spot.history = map[string][]SpotPrice{}
		s.spot.prepared = map[string]bool{}
	}
	s.spot.prepared[region] = true
	od := s.onDemandPrices(region)
	types := make([]string, 0, len(od))
	for t := range od {
		types = append(types, t)
	}
	slices.Sort(types)
	ts := s.now().Add(-time.Hour).Truncate(time.Second)
	zones := s.zonesOf(region)
	hist := make([]SpotPrice, 0, len(types)*len(zones))
	for _, t := range types {
		for _, z := range zones {
			hist = append(hist, SpotPrice{InstanceType: t, Zone: z, ProductDescription: "Linux/UNIX",
				Price: SeededSpotPrice(t, z, od[t]), Timestamp: ts})
		}
	}
	s.spot.history[region] = hist
	return hist
}

type spotPriceItem struct {
	InstanceType       string `xml:"instanceType"`
	ProductDescription string `xml:"productDescription"`
	SpotPrice          string `xml:"spotPrice"`
	Timestamp          string `xml:"timestamp"`
	AvailabilityZone   string `xml:"availabilityZone"`
}

type describeSpotPriceHistoryResponse struct {
	SpotPriceHistorySet []spotPriceItem `xml:"spotPriceHistorySet>item"`
	NextToken           string          `xml:"nextToken"`
}

// describeSpotPriceHistory answers with the entries in effect at some time in [StartTime,
// EndTime] — with no StartTime, every entry — newest first, paginated by MaxResults (at most
// 1000, the default).
func (s *Server) describeSpotPriceHistory(r *Request) (any, error) {
	f := r.Form
	now := s.now()
	start, end := time.Time{}, now
	if v := f.Get("StartTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, invalidParameter("StartTime", v)
		}
		start = t
	}
	if v := f.Get("EndTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, invalidParameter("EndTime", v)
		}
		end = t
	}
	max := 1000
	if v := f.Get("MaxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, invalidParameter("MaxResults", v)
		}
		max = min(n, 1000)
	}
	offset := 0
	if v := f.Get("NextToken"); v != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(v, "spot-"))
		if err != nil || n < 0 || !strings.HasPrefix(v, "spot-") {
			return nil, &APIError{Code: "InvalidNextToken", Message: "The specified token is invalid."}
		}
		offset = n
	}

	types := listParam(f, "InstanceType")
	products := listParam(f, "ProductDescription")
	zone := f.Get("AvailabilityZone")
	filters := queryFilters(f)
	for name := range filters {
		switch name {
		case "availability-zone", "instance-type", "product-description", "spot-price":
		default:
			return nil, invalidParameter("Filter", name)
		}
	}
	match := func(p SpotPrice) bool {
		if len(types) > 0 && !slices.Contains(types, p.InstanceType) ||
			len(products) > 0 && !slices.Contains(products, p.ProductDescription) ||
			zone != "" && p.Zone != zone {
			return false
		}
		for name, values := range filters {
			var v string
			switch name {
			case "availability-zone":
				v = p.Zone
			case "instance-type":
				v = p.InstanceType
			case "product-description":
				v = p.ProductDescription
			default: // spot-price
				v = formatSpotPrice(p)
			}
			if !slices.Contains(values, v) {
				return false
			}
		}
		return true
	}

	// An entry is in effect from its timestamp until the next one for the same type, zone and
	// product; it is returned when that span meets [start, end].
	hist := slices.Clone(s.spotHistory(r.Region))
	slices.SortStableFunc(hist, func(a, b SpotPrice) int {
		if c := b.Timestamp.Compare(a.Timestamp); c != 0 {
			return c
		}
		return strings.Compare(a.InstanceType+"/"+a.Zone, b.InstanceType+"/"+b.Zone)
	})
	type key struct{ t, z, p string }
	laterStart := map[key]time.Time{} // the timestamp of the next newer entry seen
	var out []spotPriceItem
	for _, p := range hist {
		k := key{p.InstanceType, p.Zone, p.ProductDescription}
		until, superseded := laterStart[k]
		laterStart[k] = p.Timestamp
		if p.Timestamp.After(end) || superseded && !until.After(start) || !match(p) {
			continue
		}
		out = append(out, spotPriceItem{
			InstanceType:       p.InstanceType,
			ProductDescription: p.ProductDescription,
			SpotPrice:          formatSpotPrice(p),
			Timestamp:          p.Timestamp.UTC().Format("2006-01-02T15:04:05.000Z"),
			AvailabilityZone:   p.Zone,
		})
	}
	resp := describeSpotPriceHistoryResponse{}
	if offset < len(out) {
		stop := min(offset+max, len(out))
		resp.SpotPriceHistorySet = out[offset:stop]
		if stop < len(out) {
			resp.NextToken = "spot-" + strconv.Itoa(stop)
		}
	}
	return resp, nil
}

func formatSpotPrice(p SpotPrice) string {
	if p.RawPrice != "" {
		return p.RawPrice
	}
	return strconv.FormatFloat(p.Price, 'f', 6, 64)
}
