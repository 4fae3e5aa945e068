package pricing

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// spotProductDescriptions are the Linux spot products: EC2 lists prices under the first, and
// under the second for accounts that still have EC2-Classic-era descriptions.
var spotProductDescriptions = []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"}

func (l *Live) fetchSpot(ctx context.Context, now time.Time, rep *Report) (map[spotKey]float64, error) {
	if l.Region == "" {
		return nil, errNoRegion
	}
	if l.EC2 == nil {
		return nil, errNoEC2Client
	}
	type latest struct {
		price float64
		at    time.Time
	}
	seen := map[spotKey]latest{}
	// With StartTime now, EC2 answers with the price in effect now for each type, zone and
	// product, and any later change; the newest entry wins.
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(l.EC2, &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: spotProductDescriptions,
		StartTime:           aws.Time(now),
		MaxResults:          aws.Int32(1000),
	})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("DescribeSpotPriceHistory: %w", err)
		}
		for _, e := range out.SpotPriceHistory {
			k := spotKey{string(e.InstanceType), aws.ToString(e.AvailabilityZone)}
			raw := aws.ToString(e.SpotPrice)
			price, err := strconv.ParseFloat(raw, 64)
			reason := checkPrice(raw, price, err)
			switch {
			case k.instanceType == "":
				reason = "no instance type"
			case k.zone == "":
				reason = "no availability zone"
			case e.SpotPrice == nil:
				reason = "no price"
			}
			if reason != "" {
				rep.Skipped = append(rep.Skipped, Skipped{InstanceType: k.instanceType, Zone: k.zone, Reason: reason})
				continue
			}
			at := aws.ToTime(e.Timestamp)
			if old, ok := seen[k]; ok && !at.After(old.at) {
				continue
			}
			seen[k] = latest{price, at}
		}
	}
	prices := make(map[spotKey]float64, len(seen))
	for k, v := range seen {
		prices[k] = v.price
	}
	return prices, nil
}
