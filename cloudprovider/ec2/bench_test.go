package ec2_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
)

// BenchmarkInstanceTypes builds a region's instance-type list — every built-in type (about
// 1,360) in six zones, on-demand and spot — from cached EC2 descriptions, as each solve does.
func BenchmarkInstanceTypes(b *testing.B) {
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1e", "us-east-1f"}
	f := newFixture(b, []ec2test.Option{ec2test.WithZones("us-east-1", zones...)}, nil)
	ctx := context.Background()
	its, err := f.p.InstanceTypes(ctx, pool()) // fills the caches
	if err != nil {
		b.Fatal(err)
	}
	offerings := 0
	for _, it := range its {
		offerings += len(it.Offerings)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.p.InstanceTypes(ctx, pool()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(its)), "types")
	b.ReportMetric(float64(offerings), "offerings")
}

// BenchmarkCreate launches one node against ec2test over HTTP: option filtering, launch
// template lookup (cached), one CreateFleet through the SDK.
func BenchmarkCreate(b *testing.B) {
	f := newFixture(b, nil, nil)
	ctx := context.Background()
	types := []string{"m5.large", "m5a.large", "c5.large", "c5a.large", "m5.xlarge", "c5.xlarge"}
	if _, err := f.p.Create(ctx, claim("warm", types)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := f.p.Create(ctx, claim(fmt.Sprintf("c-%d", i), types)); err != nil {
			b.Fatal(err)
		}
	}
}
