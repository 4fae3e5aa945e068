// Package ec2test provides a local endpoint for EC2 and the AWS services around it, for tests:
// what net/http/httptest is to HTTP handlers, ec2test is to code that calls EC2 through
// aws-sdk-go-v2.
//
// A Server speaks the real wire protocols — the EC2 Query protocol (form-encoded POSTs answered
// with XML in the 2016-11-15 namespace) and the JSON 1.1 protocol of the AWS Price List Query
// API — so the code under test runs the real SDK client, with its serializers, retryer and
// paginators, against it. It answers from state it seeds deterministically: on-demand prices
// from the static tables of package pricing, spot prices from a fixed model of them.
//
// Faults are injected per operation: throttling, 5xx answers, latency, any service error or a
// malformed body, for the next n calls.
//
// It does not check signatures or permissions, keeps everything in memory, and implements
// only the operations listed in the files of this package.
//
// # Usage
//
//	srv := ec2test.NewServer()
//	defer srv.Close()
//	cfg := srv.Config("us-east-1") // an aws.Config whose clients all talk to srv
//	client := ec2.NewFromConfig(cfg)
//
//	srv.Throttle("DescribeSpotPriceHistory", 2) // the next two calls are throttled
//	out, err := client.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{…})
//
// # Adding an operation
//
// Each service area has a file (spotprice.go, pricing.go, …) holding its handlers and the state
// they keep, a field of Server. A handler is a method func(*Server, *Request) (any, error); list
// it in the operations table in server.go under its Action (EC2 Query) or X-Amz-Target (JSON).
package ec2test
