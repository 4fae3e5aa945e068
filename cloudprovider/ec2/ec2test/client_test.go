package ec2test

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// stallConn forces the interleaving that lost connections under load: once a request's body is
// sent, the writer goroutine stalls until the response has begun to arrive and the caller has
// had time to take it (and the SDK to close the request's body); the response is read slowly,
// so it is still being read when the writer goes on.
type stallConn struct {
	net.Conn
	once     sync.Once
	answered chan struct{}
}

func (c *stallConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err == nil && !bytes.HasPrefix(p, []byte("POST ")) { // the body, after the flushed headers
		select {
		case <-c.answered:
			time.Sleep(50 * time.Millisecond)
		case <-time.After(5 * time.Second):
		}
	}
	return n, err
}

func (c *stallConn) Read(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	n, err := c.Conn.Read(p[:min(len(p), 512)])
	if n > 0 {
		c.once.Do(func() { close(c.answered) })
	}
	return n, err
}

// A large answer read while net/http's writer goroutine is still finishing the request: with
// the SDK's default HTTP client the writer closed the connection under it ("use of closed
// network connection", on every attempt); Config's client keeps it up.
func TestConfigKeepsTheConnectionWhileTheAnswerIsRead(t *testing.T) {
	srv := NewServer()
	defer srv.Close()
	var d net.Dialer
	cfg := srv.Config("")
	cfg.HTTPClient = newHTTPClient(func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &stallConn{Conn: c, answered: make(chan struct{})}, nil
	})
	cfg.RetryMaxAttempts = 1
	out, err := ec2.NewFromConfig(cfg).DescribeInstanceTypeOfferings(context.Background(), &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone, MaxResults: aws.Int32(1000),
	})
	if err != nil {
		t.Fatalf("DescribeInstanceTypeOfferings() error = %v, want the answer", err)
	}
	if n := len(out.InstanceTypeOfferings); n < 500 {
		t.Errorf("got %d offerings, want a page of 1000 (an answer large enough to be read while the writer goes on)", n)
	}
}
