package controller_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

// hidingCloud leaves chosen instances out of every listing, as a listing with a stale filter or
// a lost page would; a lookup by id still finds them.
type hidingCloud struct {
	*cloudprovider.Memory
	mu     sync.Mutex
	hidden map[string]bool
}

func (p *hidingCloud) hide(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hidden == nil {
		p.hidden = map[string]bool{}
	}
	p.hidden[id] = true
}

func (p *hidingCloud) List(ctx context.Context) ([]*nodeplan.NodeClaim, error) {
	insts, err := p.Memory.List(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.DeleteFunc(insts, func(i *nodeplan.NodeClaim) bool { return p.hidden[i.Status.ProviderID] }), err
}

// A listing that keeps missing a running instance, far longer than MissedListings over
// Timeouts.Collect, gives nothing up: the instance is looked up by its id before its claim
// goes, and it is there. (The soak found a claim given up this way, its Node left with its pods
// and its instance running unowned once the listings showed it again.)
func TestListingThatKeepsMissingAnInstanceGivesUpNothing(t *testing.T) {
	h := newHarness(t)
	cloud := &hidingCloud{Memory: h.w.Cloud}
	h.start("a", func(c *controller.Controller) { c.Provider = cloud })
	h.deploy("inflate", 1, 0)
	h.until(2*time.Minute, "the pod running", func() bool { return h.running() == 1 })
	id := h.instances()[0].Status.ProviderID
	cloud.hide(id)
	if err := h.w.Advance(context.Background(), 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := h.logs.count("listings missed the instance of a nodeclaim, but it is there; keeping the nodeclaim"); n == 0 {
		t.Errorf("the claim was never judged and kept; logs:\n%s", h.logs.String())
	}
	if n := h.logs.count("instance is gone; deleting nodeclaim") + h.logs.count("instance is gone but its node is still Ready; deleting the nodeclaim and leaving the node"); n > 0 {
		t.Errorf("the claim of a running instance was given up; logs:\n%s", h.logs.String())
	}
	if h.nodes() != 1 || h.running() != 1 || len(h.instances()) != 1 {
		t.Errorf("nodes %d, running pods %d, instances %d; want 1, 1, 1", h.nodes(), h.running(), len(h.instances()))
	}
	if claims := h.claimObjects(); len(claims) != 1 {
		t.Errorf("%d NodeClaim objects, want 1", len(claims))
	}
}

// A Node that never registered (karpenter.sh/unregistered still on it) whose instance is gone
// is deleted — an orphan's Node whose deletion a restart interrupted, say; the never-registered
// Node of a live instance (another installation's) is left alone.
func TestUnregisteredNodeOfAGoneInstanceIsDeleted(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	gone, err := h.w.Cloud.Create(ctx, &nodeplan.NodeClaim{Name: "default-gone1", NodePool: "default", InstanceTypeOptions: []string{"c6a.large"}})
	if err != nil {
		t.Fatal(err)
	}
	live, err := h.w.Cloud.Create(ctx, &nodeplan.NodeClaim{Name: "default-live1", NodePool: "default", InstanceTypeOptions: []string{"c6a.large"},
		Annotations: map[string]string{controller.AnnotationInstallation: "staging"}})
	if err != nil {
		t.Fatal(err)
	}
	h.until(time.Minute, "both Nodes registered", func() bool { return h.nodes() == 2 })
	if err := h.w.Cloud.Delete(ctx, gone.Status.ProviderID); err != nil {
		t.Fatal(err)
	}
	h.start("a", nil)
	h.until(5*time.Minute, "the gone instance's Node deleted", func() bool { return h.nodes() == 1 })
	if n := h.w.Kubelet.NodeName(live.Status.ProviderID); h.node(n) == nil {
		t.Errorf("the live instance's Node %s was deleted", n)
	}
}
