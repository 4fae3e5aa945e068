package ec2test_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
)

// TestGetQueueUrl: the SDK's GetQueueUrl finds a queue by name, whether made by CreateQueue
// or used at a URL, and an unknown name is SQS's QueueDoesNotExist.
func TestGetQueueUrl(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	client := sqs.NewFromConfig(srv.Config("us-east-1"))
	ctx := context.Background()
	made := srv.CreateQueue("prod")
	if made != "https://sqs.us-east-1.amazonaws.com/123456789012/prod" {
		t.Errorf("CreateQueue(prod) = %q", made)
	}
	used := "https://sqs.us-east-1.amazonaws.com/123456789012/other"
	srv.SendMessage(used, "{}")
	for name, want := range map[string]string{"prod": made, "other": used} {
		out, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if err != nil || aws.ToString(out.QueueUrl) != want {
			t.Errorf("GetQueueUrl(%s) = %v, %v; want %s", name, out, err, want)
		}
	}
	_, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("missing")})
	if _, ok := errors.AsType[*types.QueueDoesNotExist](err); !ok {
		t.Errorf("GetQueueUrl(missing) error = %v, want QueueDoesNotExist", err)
	}
	if n := srv.QueueLength(made); n != 0 {
		t.Errorf("QueueLength(prod) = %d, want an empty queue", n)
	}
}
