package ec2

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// InstanceTypesAPI is the part of the EC2 client that describes instance types; *ec2.Client
// implements it.
type InstanceTypesAPI interface {
	ec2.DescribeInstanceTypesAPIClient
	ec2.DescribeInstanceTypeOfferingsAPIClient
}

// DescribeInstanceTypes lists the instance types of the client's region that can run nodes —
// HVM, x86_64 or arm64 — sorted by name, and the zones each is offered in, sorted. It is the
// first half of every catalog the provider builds; the what-if tool calls it to build the same
// catalog without a provider.
func DescribeInstanceTypes(ctx context.Context, client InstanceTypesAPI) ([]ec2types.InstanceTypeInfo, map[string][]string, error) {
	var types []ec2types.InstanceTypeInfo
	pages := ec2.NewDescribeInstanceTypesPaginator(client, &ec2.DescribeInstanceTypesInput{
		Filters: []ec2types.Filter{
			{Name: aws.String("supported-virtualization-type"), Values: []string{"hvm"}},
			{Name: aws.String("processor-info.supported-architecture"), Values: []string{"x86_64", "arm64"}},
		},
		MaxResults: aws.Int32(100),
	})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("ec2: describing instance types: %w", err)
		}
		types = append(types, out.InstanceTypes...)
	}
	slices.SortFunc(types, func(a, b ec2types.InstanceTypeInfo) int {
		return strings.Compare(string(a.InstanceType), string(b.InstanceType))
	})
	zones := map[string][]string{}
	offers := ec2.NewDescribeInstanceTypeOfferingsPaginator(client, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
		MaxResults:   aws.Int32(1000),
	})
	for offers.HasMorePages() {
		out, err := offers.NextPage(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("ec2: describing instance type offerings: %w", err)
		}
		for _, o := range out.InstanceTypeOfferings {
			zones[string(o.InstanceType)] = append(zones[string(o.InstanceType)], aws.ToString(o.Location))
		}
	}
	for k, zs := range zones {
		slices.Sort(zs)
		zones[k] = slices.Compact(zs)
	}
	return types, zones, nil
}
