package kwok

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/cloudprovider"
)

// SetCapacityError makes launches of the offering fail with insufficient capacity (on) or
// succeed again (!on). The offering is reported unavailable only once a launch has tried it,
// as with a real cloud.
func (p *Provider) SetCapacityError(k cloudprovider.OfferingKey, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.initLocked()
	if on {
		p.capErrs[k] = true
	} else {
		delete(p.capErrs, k)
	}
}

// SetImageID changes the image new nodes boot; nodes launched before are then drifted.
func (p *Provider) SetImageID(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.imageID = id
}

// Interrupt queues an interruption of the node for the next Interruptions call, as a cloud's
// event queue would deliver it. A spot interruption also makes the node's offering
// unavailable for UnavailableFor. The Node stays until deleted. It returns
// [*cloudprovider.NotFoundError] for a node that is not this provider's.
func (p *Provider) Interrupt(ctx context.Context, providerID string, kind cloudprovider.InterruptionKind, deadline time.Time) error {
	c, err := p.Get(ctx, providerID)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queueLocked(c.Status.ProviderID, c.Status.InstanceType, c.Status.Zone, c.Status.CapacityType, kind, deadline)
	return nil
}

// queueLocked records an interruption; p.mu must be held.
func (p *Provider) queueLocked(providerID, instanceType, zone string, ct nodeplan.CapacityType, kind cloudprovider.InterruptionKind, deadline time.Time) {
	p.initLocked()
	now := p.now()
	ev := cloudprovider.Interruption{
		ProviderID: providerID,
		InstanceID: nodeName(providerID),
		Kind:       kind,
		Time:       now,
		Deadline:   deadline,
		ID:         fmt.Sprintf("kwok-event-%d", len(p.events)+1),
	}
	if kind == cloudprovider.InterruptionStateChange {
		ev.State = "shutting-down"
	}
	p.events = append(p.events, ev)
	if kind == cloudprovider.InterruptionSpot {
		k := cloudprovider.OfferingKey{InstanceType: instanceType, Zone: zone, CapacityType: ct}
		p.unavailable[k] = now.Add(p.unavailableFor())
	}
	p.log().Info("kwok: interruption", "provider-id", providerID, "kind", kind)
}

// Interruptions implements [cloudprovider.InterruptionSource]: it returns and forgets the
// queued interruptions (Interrupt's, and those of Nodes annotated nodeplan.io/kwok-interrupt
// that Run has seen). It never blocks.
func (p *Provider) Interruptions(ctx context.Context) ([]cloudprovider.Interruption, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.events
	p.events = nil
	return out, nil
}

// RepairPolicies implements [cloudprovider.Repairer]: a Node whose Ready condition has been
// False or Unknown for 10 minutes should be replaced (annotate a Node nodeplan.io/kwok-ready=
// False to make it so, for a controller that repairs nodes).
func (p *Provider) RepairPolicies() []cloudprovider.RepairPolicy {
	return []cloudprovider.RepairPolicy{
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionFalse, TolerationDuration: 10 * time.Minute},
		{ConditionType: corev1.NodeReady, ConditionStatus: corev1.ConditionUnknown, TolerationDuration: 10 * time.Minute},
	}
}
