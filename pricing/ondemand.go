package pricing

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/pricing/types"
)

// onDemandQueries are the product sets whose prices RefreshOnDemand reads: virtualised types
// under shared tenancy, and bare-metal types, which the price list files under dedicated
// tenancy in a product family of their own.
var onDemandQueries = []struct{ tenancy, family string }{
	{"Shared", "Compute Instance"},
	{"Dedicated", "Compute Instance (bare metal)"},
}

func (l *Live) fetchOnDemand(ctx context.Context, rep *Report) (map[string]float64, error) {
	if l.Region == "" {
		return nil, errNoRegion
	}
	if l.Pricing == nil {
		return nil, errNoPricingClient
	}
	currency := l.Currency()
	prices := map[string]float64{}
	for _, q := range onDemandQueries {
		in := &awspricing.GetProductsInput{
			ServiceCode:   aws.String("AmazonEC2"),
			FormatVersion: aws.String("aws_v1"),
			MaxResults:    aws.Int32(100),
			Filters: []types.Filter{
				termMatch("regionCode", l.Region),
				termMatch("serviceCode", "AmazonEC2"),
				termMatch("operatingSystem", "Linux"),
				termMatch("preInstalledSw", "NA"),
				termMatch("capacitystatus", "Used"),
				termMatch("marketoption", "OnDemand"),
				termMatch("tenancy", q.tenancy),
				termMatch("productFamily", q.family),
			},
		}
		pages := awspricing.NewGetProductsPaginator(l.Pricing, in)
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("GetProducts (%s tenancy, %s): %w", q.tenancy, q.family, err)
			}
			for _, doc := range out.PriceList {
				t, p, reason := parseProduct(doc, l.Region, currency)
				if reason == "" {
					if old, dup := prices[t]; dup && old != p {
						reason = fmt.Sprintf("a second price, %g, after %g", p, old)
					}
				}
				if reason != "" {
					rep.Skipped = append(rep.Skipped, Skipped{InstanceType: t, Reason: reason})
					continue
				}
				prices[t] = p
			}
		}
	}
	return prices, nil
}

func termMatch(field, value string) types.Filter {
	return types.Filter{Type: types.FilterTypeTermMatch, Field: aws.String(field), Value: aws.String(value)}
}

// productDocument is the part of a price list document (format aws_v1) the price is read from:
// product.attributes.instanceType and
// terms.OnDemand.<sku.offerTerm>.priceDimensions.<sku.offerTerm.rate>.pricePerUnit.<currency>.
type productDocument struct {
	Product struct {
		Attributes struct {
			InstanceType string `json:"instanceType"`
			RegionCode   string `json:"regionCode"`
		} `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// parseProduct reads the instance type and hourly price from one document. reason says why the
// document cannot be used, or is "".
func parseProduct(doc, region, currency string) (instanceType string, price float64, reason string) {
	var d productDocument
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		return "", 0, "malformed price document: " + err.Error()
	}
	instanceType = d.Product.Attributes.InstanceType
	if !strings.Contains(instanceType, ".") {
		return instanceType, 0, fmt.Sprintf("%q is not an instance type", instanceType)
	}
	if r := d.Product.Attributes.RegionCode; r != "" && r != region {
		return instanceType, 0, fmt.Sprintf("priced for region %s, not %s", r, region)
	}
	var amounts []string
	for _, term := range d.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			if dim.Unit != "" && dim.Unit != "Hrs" {
				continue
			}
			if a, ok := dim.PricePerUnit[currency]; ok {
				amounts = append(amounts, a)
			}
		}
	}
	switch len(amounts) {
	case 0:
		return instanceType, 0, "no hourly on-demand price in " + currency
	case 1:
	default:
		return instanceType, 0, fmt.Sprintf("%d hourly on-demand prices, want one", len(amounts))
	}
	price, err := strconv.ParseFloat(amounts[0], 64)
	if reason := checkPrice(amounts[0], price, err); reason != "" {
		return instanceType, 0, reason
	}
	return instanceType, price, ""
}

// checkPrice says why a price read from an answer is unusable, or returns "".
func checkPrice(raw string, price float64, err error) string {
	switch {
	case err != nil:
		return fmt.Sprintf("price %q is not a number", raw)
	case price == 0:
		return fmt.Sprintf("price %q is zero", raw)
	case !(price > 0) || price > 1e6: // negative, NaN or absurd
		return fmt.Sprintf("price %q is out of range", raw)
	}
	return ""
}
