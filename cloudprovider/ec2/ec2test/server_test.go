package ec2test_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"

	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
)

func TestThrottleIsRetriedBySDK(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	srv.SetSpotPrices("us-east-1", ec2test.SpotPrice{InstanceType: "m5.large", Zone: "us-east-1a", Price: 0.04})
	srv.Throttle("DescribeSpotPriceHistory", 2)

	out, err := ec2.NewFromConfig(srv.Config("us-east-1")).DescribeSpotPriceHistory(context.Background(), &ec2.DescribeSpotPriceHistoryInput{})
	if err != nil {
		t.Fatalf("DescribeSpotPriceHistory() error = %v, want success after retries", err)
	}
	if got := len(out.SpotPriceHistory); got != 1 {
		t.Errorf("len(SpotPriceHistory) = %d, want 1", got)
	}
	if got := srv.Calls("DescribeSpotPriceHistory"); got != 3 {
		t.Errorf("Calls() = %d, want 3 (two throttled, one answered)", got)
	}
}

func TestQueryErrorsReachTheSDK(t *testing.T) {
	tests := []struct {
		name     string
		inject   func(*ec2test.Server)
		wantCode string
	}{
		{"throttled past the retry budget", func(s *ec2test.Server) { s.Throttle("DescribeSpotPriceHistory", -1) }, "RequestLimitExceeded"},
		{"unavailable past the retry budget", func(s *ec2test.Server) { s.Unavailable("DescribeSpotPriceHistory", -1) }, "Unavailable"},
		{"custom error", func(s *ec2test.Server) {
			s.Inject("DescribeSpotPriceHistory", 1, ec2test.Fault{Err: &ec2test.APIError{Code: "UnauthorizedOperation", Message: "no", Status: http.StatusForbidden}})
		}, "UnauthorizedOperation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := ec2test.NewServer()
			defer srv.Close()
			tt.inject(srv)
			_, err := ec2.NewFromConfig(srv.Config("")).DescribeSpotPriceHistory(context.Background(), &ec2.DescribeSpotPriceHistoryInput{})
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != tt.wantCode {
				t.Fatalf("DescribeSpotPriceHistory() error = %v, want API error %s", err, tt.wantCode)
			}
		})
	}
}

func TestUnknownAction(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	_, err := ec2.NewFromConfig(srv.Config("")).DescribeVpcEndpointServices(context.Background(), &ec2.DescribeVpcEndpointServicesInput{})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidAction" {
		t.Fatalf("unimplemented action: error = %v, want InvalidAction", err)
	}
}

func TestDelayHonoursContext(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	srv.Inject("DescribeSpotPriceHistory", -1, ec2test.Fault{Delay: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := ec2.NewFromConfig(srv.Config("")).DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{})
	if err == nil || time.Since(start) > 10*time.Second {
		t.Fatalf("delayed call: error = %v after %v, want a prompt context error", err, time.Since(start))
	}
}

func TestMalformedBody(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	srv.Inject("DescribeSpotPriceHistory", 1, ec2test.Fault{Body: "<DescribeSpotPriceHistoryResponse><spotPriceHistorySet><item>"})
	_, err := ec2.NewFromConfig(srv.Config("")).DescribeSpotPriceHistory(context.Background(), &ec2.DescribeSpotPriceHistoryInput{})
	if err == nil {
		t.Fatal("malformed body: error = nil, want a deserialization error")
	}
}

func TestRequestsRecordRegionAndForm(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	_, err := ec2.NewFromConfig(srv.Config("eu-west-1")).DescribeSpotPriceHistory(context.Background(), &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"}, MaxResults: aws.Int32(5)})
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests("DescribeSpotPriceHistory")
	if len(reqs) != 1 {
		t.Fatalf("Requests() = %d, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Region != "eu-west-1" || r.Form.Get("ProductDescription.2") != "Linux/UNIX (Amazon VPC)" || !strings.HasPrefix(r.Form.Get("Version"), "2016") {
		t.Errorf("Requests()[0] = region %q form %v, want eu-west-1 with both product descriptions", r.Region, r.Form)
	}
}
