package ec2test_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/smithy-go"

	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
)

func termMatch(field, value string) types.Filter {
	return types.Filter{Type: types.FilterTypeTermMatch, Field: aws.String(field), Value: aws.String(value)}
}

func getAllProducts(t *testing.T, c *awspricing.Client, in *awspricing.GetProductsInput) []string {
	t.Helper()
	var all []string
	p := awspricing.NewGetProductsPaginator(c, in)
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("GetProducts() error = %v", err)
		}
		all = append(all, out.PriceList...)
	}
	return all
}

// document is the shape of a price list entry, as the AWS Price List Query API sends it.
type document struct {
	Product struct {
		ProductFamily string            `json:"productFamily"`
		SKU           string            `json:"sku"`
		Attributes    map[string]string `json:"attributes"`
	} `json:"product"`
	ServiceCode string `json:"serviceCode"`
	Terms       struct {
		OnDemand map[string]struct {
			SKU             string `json:"sku"`
			OfferTermCode   string `json:"offerTermCode"`
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				RateCode     string            `json:"rateCode"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

func TestGetProductsDocuments(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	c := awspricing.NewFromConfig(srv.Config("us-east-1"))
	docs := getAllProducts(t, c, &awspricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"),
		Filters: []types.Filter{termMatch("regionCode", "us-east-1"), termMatch("instanceType", "m5.large"),
			termMatch("operatingSystem", "linux"), termMatch("capacitystatus", "Used"), termMatch("tenancy", "Shared")},
	})
	if len(docs) != 1 {
		t.Fatalf("GetProducts(m5.large, Linux, Used, Shared) = %d documents, want 1", len(docs))
	}
	var d document
	if err := json.Unmarshal([]byte(docs[0]), &d); err != nil {
		t.Fatalf("document is not JSON: %v", err)
	}
	a := d.Product.Attributes
	if d.Product.ProductFamily != "Compute Instance" || d.ServiceCode != "AmazonEC2" || a["instanceType"] != "m5.large" ||
		a["regionCode"] != "us-east-1" || a["marketoption"] != "OnDemand" || a["preInstalledSw"] != "NA" || a["usagetype"] != "BoxUsage:m5.large" {
		t.Errorf("document product = %+v", d.Product)
	}
	if len(d.Terms.OnDemand) != 1 {
		t.Fatalf("document has %d on-demand terms, want 1", len(d.Terms.OnDemand))
	}
	for key, term := range d.Terms.OnDemand {
		if key != d.Product.SKU+".JRTCKXETXF" || term.SKU != d.Product.SKU || term.OfferTermCode != "JRTCKXETXF" {
			t.Errorf("on-demand term %q = %+v", key, term)
		}
		for key, dim := range term.PriceDimensions {
			if key != d.Product.SKU+".JRTCKXETXF.6YS6EN2CT7" || dim.RateCode != key || dim.Unit != "Hrs" ||
				dim.PricePerUnit["USD"] != "0.0960000000" {
				t.Errorf("price dimension %q = %+v, want USD 0.0960000000 per Hrs", key, dim)
			}
		}
	}
}

func TestGetProductsFiltersAndPages(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	srv.SetOnDemandPrices("us-west-2", "", map[string]float64{"m5.large": 0.096, "c5.large": 0.085, "m5.metal": 4.608})
	c := awspricing.NewFromConfig(srv.Config("us-east-1"))
	count := func(filters ...types.Filter) int {
		return len(getAllProducts(t, c, &awspricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(2),
			Filters: append([]types.Filter{termMatch("regionCode", "us-west-2")}, filters...)}))
	}
	tests := []struct {
		name    string
		filters []types.Filter
		want    int
	}{
		{"everything", nil, 11}, // 4 products for each virtualised type, 3 for the bare-metal one
		{"linux, used, shared", []types.Filter{termMatch("operatingSystem", "Linux"), termMatch("capacitystatus", "Used"), termMatch("tenancy", "Shared")}, 2},
		{"bare metal", []types.Filter{termMatch("productFamily", "Compute Instance (bare metal)"), termMatch("tenancy", "Dedicated"),
			termMatch("operatingSystem", "Linux"), termMatch("capacitystatus", "Used")}, 1},
		{"any of", []types.Filter{{Type: types.FilterTypeAnyOf, Field: aws.String("operatingSystem"), Value: aws.String("Linux, Windows")},
			termMatch("capacitystatus", "Used"), termMatch("tenancy", "Shared")}, 4},
		{"none of", []types.Filter{{Type: types.FilterTypeNoneOf, Field: aws.String("operatingSystem"), Value: aws.String("Linux")}}, 3},
		{"contains", []types.Filter{{Type: types.FilterTypeContains, Field: aws.String("usagetype"), Value: aws.String("boxusage")}}, 6},
		{"unknown field", []types.Filter{termMatch("flavour", "vanilla")}, 0},
	}
	for _, tt := range tests {
		if got := count(tt.filters...); got != tt.want {
			t.Errorf("GetProducts(%s) = %d documents, want %d", tt.name, got, tt.want)
		}
	}
	if got := srv.Calls("GetProducts"); got < 10 {
		t.Errorf("GetProducts calls = %d, want pages of 2", got)
	}
}

func TestGetProductsErrors(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	tests := []struct {
		name     string
		region   string
		in       *awspricing.GetProductsInput
		wantCode string
	}{
		{"no endpoint in region", "eu-west-1", &awspricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2")}, "UnknownEndpoint"},
		{"page too big", "us-east-1", &awspricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(101)}, "InvalidParameterException"},
		{"bad token", "us-east-1", &awspricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), NextToken: aws.String("nope")}, "InvalidNextTokenException"},
	}
	for _, tt := range tests {
		_, err := awspricing.NewFromConfig(srv.Config(tt.region)).GetProducts(context.Background(), tt.in)
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != tt.wantCode {
			t.Errorf("GetProducts(%s) error = %v, want %s", tt.name, err, tt.wantCode)
		}
	}
	out, err := awspricing.NewFromConfig(srv.Config("")).GetProducts(context.Background(), &awspricing.GetProductsInput{ServiceCode: aws.String("AmazonS3")})
	if err != nil || len(out.PriceList) != 0 {
		t.Errorf("GetProducts(AmazonS3) = %v, %v, want an empty list", out, err)
	}
}

func TestGetProductsChinaInCNY(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	docs := getAllProducts(t, awspricing.NewFromConfig(srv.Config("cn-northwest-1")), &awspricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"),
		Filters:     []types.Filter{termMatch("regionCode", "cn-north-1"), termMatch("instanceType", "c3.large"), termMatch("operatingSystem", "Linux"), termMatch("capacitystatus", "Used"), termMatch("tenancy", "Shared")},
	})
	if len(docs) != 1 || !strings.Contains(docs[0], `"CNY":"1.0540000000"`) || strings.Contains(docs[0], `"USD"`) {
		t.Errorf("GetProducts(cn-north-1 c3.large) = %v, want one document priced 1.054 CNY", docs)
	}
}

func TestAddPriceDocuments(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	srv.SetOnDemandPrices("us-east-1", "", nil)
	srv.AddPriceDocuments("us-east-1", "not json")
	docs := getAllProducts(t, awspricing.NewFromConfig(srv.Config("")), &awspricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"), Filters: []types.Filter{termMatch("regionCode", "us-east-1"), termMatch("tenancy", "Shared")}})
	if len(docs) != 1 || docs[0] != "not json" {
		t.Errorf("GetProducts() = %q, want the raw document alone", docs)
	}
}
