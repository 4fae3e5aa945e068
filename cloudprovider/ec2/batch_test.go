package ec2_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
)

// One instance EC2 refuses to terminate fails its own Delete only: the others batched with
// it are terminated, unknown and malformed ids read as gone, and the batch is split, not
// sent id by id.
func TestRefusedIDDoesNotFailItsBatch(t *testing.T) {
	f := newFixture(t, nil, func(o *ec2.Options) { o.BatchWindow = 300 * time.Millisecond })
	tags := map[string]string{"kubernetes.io/cluster/test": "owned", nodeplan.LabelNodePool: "default"}
	var ids []string
	for range 20 {
		ids = append(ids, f.srv.LaunchInstance(ec2test.Instance{Type: "m5.large", Zone: "us-east-1a", Tags: tags}))
	}
	denied := ids[7]
	f.srv.DenyTerminate(denied)
	all := append(append([]string(nil), ids...), "i-0123456789abcdef0", "i-notanid")
	errs := make([]error, len(all))
	before := f.srv.Calls("TerminateInstances")
	var wg sync.WaitGroup
	for i, id := range all {
		wg.Go(func() { errs[i] = f.p.Delete(context.Background(), "aws:///us-east-1a/"+id) })
	}
	wg.Wait()
	for i, id := range all {
		var nf *cloudprovider.NotFoundError
		switch {
		case id == denied:
			if errs[i] == nil || errors.As(errs[i], &nf) || !strings.Contains(errs[i].Error(), "UnauthorizedOperation") {
				t.Errorf("Delete(%s, denied) = %v, want its UnauthorizedOperation", id, errs[i])
			}
		case i >= len(ids):
			if !errors.As(errs[i], &nf) {
				t.Errorf("Delete(%s, unknown) = %v, want NotFound", id, errs[i])
			}
		case errs[i] != nil:
			t.Errorf("Delete(%s) = %v, want nil: one refused id failed its batch", id, errs[i])
		}
	}
	for _, inst := range f.srv.Instances() {
		if want := map[bool]string{true: "running", false: "shutting-down"}[inst.ID == denied]; inst.State != want {
			t.Errorf("%s is %s, want %s", inst.ID, inst.State, want)
		}
	}
	if n := f.srv.Calls("TerminateInstances") - before; n >= len(all) {
		t.Errorf("%d TerminateInstances calls for %d ids: the batch was not split, it was sent id by id", n, len(all))
	}
}

// Checking 1,000 nodes for drift one after another costs one DescribeInstances, not 1,000.
func TestDriftChecksAreBatched(t *testing.T) {
	f := newFixture(t, nil, nil)
	ctx := context.Background()
	if _, err := f.p.Create(ctx, claim("first", []string{"m5.large"})); err != nil {
		t.Fatal(err)
	}
	proto := f.srv.Instances()[0]
	ids := []string{proto.ID}
	for range 999 {
		i := proto
		i.ID = ""
		ids = append(ids, f.srv.LaunchInstance(i))
	}
	before := f.srv.Calls("DescribeInstances")
	for _, id := range ids {
		c := &nodeplan.NodeClaim{Name: id, NodeClassRef: nodeplan.NodeClassRef{Name: "default"},
			Status: nodeplan.NodeClaimStatus{ProviderID: "aws:///" + proto.Zone + "/" + id}}
		r, err := f.p.IsDrifted(ctx, c)
		if err != nil || r != "" {
			t.Fatalf("IsDrifted(%s) = %q, %v; want not drifted", id, r, err)
		}
	}
	if n := f.srv.Calls("DescribeInstances") - before; n > 1 {
		t.Errorf("%d DescribeInstances calls to check 1,000 nodes for drift, want 1", n)
	}
	// A node launched after the bulk description is described on its own, not missed.
	late := proto
	late.ID = ""
	id := f.srv.LaunchInstance(late)
	if _, err := f.p.IsDrifted(ctx, &nodeplan.NodeClaim{NodeClassRef: nodeplan.NodeClassRef{Name: "default"},
		Status: nodeplan.NodeClaimStatus{ProviderID: "aws:///" + proto.Zone + "/" + id}}); err != nil {
		t.Errorf("IsDrifted(launched later) = %v", err)
	}
}

// A batched call stops when every caller of the batch has given up: shutdown is not held up
// by a slow EC2 for the batch's minute-long bound.
func TestBatchedCallHonoursCancellation(t *testing.T) {
	f := newFixture(t, nil, nil)
	id := f.srv.LaunchInstance(ec2test.Instance{Type: "m5.large", Zone: "us-east-1a", Tags: map[string]string{"kubernetes.io/cluster/test": "owned"}})
	f.srv.Inject("TerminateInstances", -1, ec2test.Fault{Delay: 50 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.p.Delete(ctx, "aws:///us-east-1a/"+id) }()
	time.Sleep(100 * time.Millisecond) // let it join a batch and send the call
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Delete() after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Delete() still waiting on EC2 20s after its context was cancelled")
	}
}
