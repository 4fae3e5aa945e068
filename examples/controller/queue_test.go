package main

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
)

// TestInterruptionQueueNameOrURL: INTERRUPTION_QUEUE is a queue name in Karpenter's chart and
// a URL in nodeplan's first deployments; both work. A name is resolved with SQS GetQueueUrl
// (against ec2test's SQS), a URL is used as given without a call, and a name with no queue
// fails at start-up, naming the setting and the queue.
func TestInterruptionQueueNameOrURL(t *testing.T) {
	srv := ec2test.NewServer()
	defer srv.Close()
	client := sqs.NewFromConfig(srv.Config("us-east-1"))
	ctx := context.Background()
	want := srv.CreateQueue("prod-karpenter")

	got, err := interruptionQueueURL(ctx, client, "prod-karpenter", "us-east-1")
	if err != nil || got != want {
		t.Errorf("interruptionQueueURL(name) = %q, %v; want %q", got, err, want)
	}
	if n := srv.Calls("GetQueueUrl"); n != 1 {
		t.Errorf("GetQueueUrl called %d times for a name, want 1", n)
	}
	got, err = interruptionQueueURL(ctx, client, want, "us-east-1")
	if err != nil || got != want || srv.Calls("GetQueueUrl") != 1 {
		t.Errorf("interruptionQueueURL(URL) = %q, %v (GetQueueUrl calls %d); want the URL, no call", got, err, srv.Calls("GetQueueUrl"))
	}
	for _, bad := range []string{"missing", "arn:aws:sqs:us-east-1:123456789012:prod"} {
		_, err = interruptionQueueURL(ctx, client, bad, "us-east-1")
		if err == nil || !strings.Contains(err.Error(), "INTERRUPTION_QUEUE") || !strings.Contains(err.Error(), bad) {
			t.Errorf("interruptionQueueURL(%q) = %v, want an error naming the setting and the queue", bad, err)
		}
	}

	// A message sent to the queue by name is received at the URL resolved.
	srv.SendSpotInterruption(want, "i-0123456789abcdef0")
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &got, MaxNumberOfMessages: 10})
	if err != nil || len(out.Messages) != 1 {
		t.Errorf("ReceiveMessage(resolved URL) = %v, %v; want the interruption", out, err)
	}
}
