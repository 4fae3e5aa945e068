package ec2test_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"

	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
)

var epoch = time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)

func describeAll(t *testing.T, c *ec2.Client, in *ec2.DescribeSpotPriceHistoryInput) []ec2types.SpotPrice {
	t.Helper()
	var all []ec2types.SpotPrice
	p := ec2.NewDescribeSpotPriceHistoryPaginator(c, in)
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("DescribeSpotPriceHistory() error = %v", err)
		}
		all = append(all, out.SpotPriceHistory...)
	}
	return all
}

// TestSeededSpotPricesMatchCatalog checks the seed model against the repository's catalog data,
// whose synthetic spot prices come from the same model.
func TestSeededSpotPricesMatchCatalog(t *testing.T) {
	raw, err := os.ReadFile("../../../../shared/data/catalog.json")
	if err != nil {
		t.Skipf("shared catalog data not available: %v", err)
	}
	var cat struct {
		InstanceTypes []struct {
			Name      string
			Offerings []struct {
				Zone, CapacityType string
				Price              float64
			}
		}
	}
	if err := json.Unmarshal(raw, &cat); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, it := range cat.InstanceTypes {
		od := 0.0
		for _, o := range it.Offerings {
			if o.CapacityType == "on-demand" {
				od = o.Price
			}
		}
		for _, o := range it.Offerings {
			if o.CapacityType != "spot" {
				continue
			}
			n++
			if got := ec2test.SeededSpotPrice(it.Name, o.Zone, od); got != o.Price {
				t.Errorf("SeededSpotPrice(%s, %s, %v) = %v, want the catalog's %v", it.Name, o.Zone, od, got, o.Price)
			}
		}
	}
	if n < 400 {
		t.Errorf("checked %d catalog spot prices, want them all", n)
	}
}

func TestDescribeSpotPriceHistorySeeded(t *testing.T) {
	srv := ec2test.NewServer(ec2test.WithZones("us-west-2", "us-west-2a", "us-west-2b"))
	defer srv.Close()
	srv.SetOnDemandPrices("us-west-2", "", map[string]float64{"m5.large": 0.096, "c5.large": 0.085})
	c := ec2.NewFromConfig(srv.Config("us-west-2"))
	got := describeAll(t, c, &ec2.DescribeSpotPriceHistoryInput{MaxResults: aws.Int32(3), StartTime: aws.Time(epoch)})
	if len(got) != 4 {
		t.Fatalf("DescribeSpotPriceHistory() = %d entries, want 2 types × 2 zones", len(got))
	}
	for _, e := range got {
		if e.ProductDescription != "Linux/UNIX" || !e.Timestamp.Equal(epoch.Add(-time.Hour)) {
			t.Errorf("entry %+v, want Linux/UNIX stamped an hour before now", e)
		}
	}
	if diff := cmp.Diff([]string{"us-west-2a", "us-west-2b"}, srv.Zones("us-west-2")); diff != "" {
		t.Errorf("Zones() (-want +got):\n%s", diff)
	}
	if got := len(srv.Zones("eu-west-1")); got != 3 {
		t.Errorf("Zones(eu-west-1) = %d zones, want the default 3", got)
	}
}

func TestDescribeSpotPriceHistoryFilters(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	at := func(h int) time.Time { return epoch.Add(time.Duration(h) * time.Hour) }
	srv.SetSpotPrices("us-east-1",
		ec2test.SpotPrice{InstanceType: "m5.large", Zone: "us-east-1a", Price: 0.05, Timestamp: at(-5)},
		ec2test.SpotPrice{InstanceType: "m5.large", Zone: "us-east-1a", Price: 0.04, Timestamp: at(-3)},
		ec2test.SpotPrice{InstanceType: "m5.large", Zone: "us-east-1a", Price: 0.03, Timestamp: at(-1)},
		ec2test.SpotPrice{InstanceType: "m5.large", Zone: "us-east-1b", Price: 0.045, Timestamp: at(-4)},
		ec2test.SpotPrice{InstanceType: "c5.large", Zone: "us-east-1a", Price: 0.02, Timestamp: at(-4)},
		ec2test.SpotPrice{InstanceType: "c5.large", Zone: "us-east-1a", ProductDescription: "Windows", Price: 0.09, Timestamp: at(-4)},
	)
	c := ec2.NewFromConfig(srv.Config(""))
	type entry struct {
		Type, Zone, Price string
	}
	tests := []struct {
		name string
		in   ec2.DescribeSpotPriceHistoryInput
		want []entry
	}{
		{"now: the price in effect", ec2.DescribeSpotPriceHistoryInput{StartTime: aws.Time(epoch), ProductDescriptions: []string{"Linux/UNIX"}},
			[]entry{{"m5.large", "us-east-1a", "0.030000"}, {"c5.large", "us-east-1a", "0.020000"}, {"m5.large", "us-east-1b", "0.045000"}}},
		{"from 4h ago: in effect then, and later", ec2.DescribeSpotPriceHistoryInput{StartTime: aws.Time(at(-4)), InstanceTypes: []ec2types.InstanceType{"m5.large"}, AvailabilityZone: aws.String("us-east-1a")},
			[]entry{{"m5.large", "us-east-1a", "0.030000"}, {"m5.large", "us-east-1a", "0.040000"}, {"m5.large", "us-east-1a", "0.050000"}}},
		{"until 4h30m ago", ec2.DescribeSpotPriceHistoryInput{StartTime: aws.Time(at(-6)), EndTime: aws.Time(epoch.Add(-270 * time.Minute)),
			Filters: []ec2types.Filter{{Name: aws.String("instance-type"), Values: []string{"m5.large"}}}},
			[]entry{{"m5.large", "us-east-1a", "0.050000"}}},
		{"product filter", ec2.DescribeSpotPriceHistoryInput{Filters: []ec2types.Filter{{Name: aws.String("product-description"), Values: []string{"Windows"}}}},
			[]entry{{"c5.large", "us-east-1a", "0.090000"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []entry
			for _, e := range describeAll(t, c, &tt.in) {
				got = append(got, entry{string(e.InstanceType), aws.ToString(e.AvailabilityZone), aws.ToString(e.SpotPrice)})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DescribeSpotPriceHistory() (-want +got):\n%s", diff)
			}
		})
	}

	_, err := c.DescribeSpotPriceHistory(context.Background(), &ec2.DescribeSpotPriceHistoryInput{
		Filters: []ec2types.Filter{{Name: aws.String("timestamp"), Values: []string{"*"}}}})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidParameterValue" {
		t.Errorf("DescribeSpotPriceHistory(unsupported filter) error = %v, want InvalidParameterValue", err)
	}
}

func TestClearSpotPrices(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	srv.ClearSpotPrices("us-east-1")
	out, err := ec2.NewFromConfig(srv.Config("")).DescribeSpotPriceHistory(context.Background(), &ec2.DescribeSpotPriceHistoryInput{})
	if err != nil || len(out.SpotPriceHistory) != 0 || aws.ToString(out.NextToken) != "" {
		t.Errorf("DescribeSpotPriceHistory() after ClearSpotPrices = %v, %v, want nothing", out, err)
	}
}
