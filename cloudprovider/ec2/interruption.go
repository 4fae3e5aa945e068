package ec2

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/nodeplan/nodeplan/cloudprovider"
)

// event is the part of an EventBridge event the provider reads.
type event struct {
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Time       time.Time       `json:"time"`
	Detail     json.RawMessage `json:"detail"`
}

type ec2Detail struct {
	InstanceID     string `json:"instance-id"`
	InstanceAction string `json:"instance-action"`
	State          string `json:"state"`
}

type healthDetail struct {
	Service           string `json:"service"`
	EventTypeCategory string `json:"eventTypeCategory"`
	StartTime         string `json:"startTime"`
	AffectedEntities  []struct {
		EntityValue string `json:"entityValue"`
	} `json:"affectedEntities"`
}

// ParseEvent reads one EventBridge event (the body of an SQS message) into interruptions, one
// per instance it names, with no provider IDs yet (zones are unknown). It returns no
// interruptions and no error for events that do not concern nodes (other detail types, a
// running instance's state change), and an error for a body that is not an event.
func ParseEvent(body []byte) ([]cloudprovider.Interruption, error) {
	var ev event
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil, fmt.Errorf("ec2: not an EventBridge event: %w", err)
	}
	base := cloudprovider.Interruption{Time: ev.Time, ID: ev.ID}
	one := func(kind cloudprovider.InterruptionKind, d ec2Detail, deadline time.Time) ([]cloudprovider.Interruption, error) {
		if d.InstanceID == "" {
			return nil, fmt.Errorf("ec2: %s event %s names no instance", ev.DetailType, ev.ID)
		}
		i := base
		i.InstanceID, i.Kind, i.Deadline, i.State = d.InstanceID, kind, deadline, d.State
		return []cloudprovider.Interruption{i}, nil
	}
	switch {
	case ev.Source == "aws.ec2" && ev.DetailType == "EC2 Spot Instance Interruption Warning":
		var d ec2Detail
		if err := json.Unmarshal(ev.Detail, &d); err != nil {
			return nil, fmt.Errorf("ec2: spot interruption detail: %w", err)
		}
		return one(cloudprovider.InterruptionSpot, d, ev.Time.Add(2*time.Minute))
	case ev.Source == "aws.ec2" && ev.DetailType == "EC2 Instance Rebalance Recommendation":
		var d ec2Detail
		if err := json.Unmarshal(ev.Detail, &d); err != nil {
			return nil, fmt.Errorf("ec2: rebalance detail: %w", err)
		}
		return one(cloudprovider.InterruptionRebalance, d, time.Time{})
	case ev.Source == "aws.ec2" && ev.DetailType == "EC2 Instance State-change Notification":
		var d ec2Detail
		if err := json.Unmarshal(ev.Detail, &d); err != nil {
			return nil, fmt.Errorf("ec2: state-change detail: %w", err)
		}
		if !slices.Contains([]string{"stopping", "stopped", "shutting-down", "terminated"}, d.State) {
			return nil, nil
		}
		return one(cloudprovider.InterruptionStateChange, d, time.Time{})
	case ev.Source == "aws.health" && ev.DetailType == "AWS Health Event":
		var d healthDetail
		if err := json.Unmarshal(ev.Detail, &d); err != nil {
			return nil, fmt.Errorf("ec2: health detail: %w", err)
		}
		if d.Service != "EC2" || d.EventTypeCategory != "scheduledChange" {
			return nil, nil
		}
		deadline, _ := time.Parse(time.RFC1123, d.StartTime)
		var out []cloudprovider.Interruption
		for _, e := range d.AffectedEntities {
			if e.EntityValue == "" {
				continue
			}
			i := base
			i.InstanceID, i.Kind, i.Deadline = e.EntityValue, cloudprovider.InterruptionScheduledChange, deadline
			out = append(out, i)
		}
		return out, nil
	}
	return nil, nil
}

// Interruptions implements [cloudprovider.InterruptionSource]: one SQS long poll (up to 10
// messages, QueueWait), each parsed and then deleted, so a message is handled at most once and a
// malformed one does not come back. Events about instances that are not this cluster's live
// instances are logged and dropped. A spot interruption marks its offering unavailable. It
// returns nil, nil when Options.SQS is nil.
func (p *Provider) Interruptions(ctx context.Context) ([]cloudprovider.Interruption, error) {
	if p.opts.SQS == nil {
		return nil, nil
	}
	wait := p.opts.QueueWait
	if wait == 0 {
		wait = 20 * time.Second
	}
	out, err := p.opts.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(p.opts.QueueURL),
		MaxNumberOfMessages: 10,
		WaitTimeSeconds:     int32(wait / time.Second),
		VisibilityTimeout:   20,
	})
	if err != nil {
		return nil, fmt.Errorf("ec2: receiving interruption messages: %w", err)
	}
	var events []cloudprovider.Interruption
	var handled []*string
	for _, m := range out.Messages {
		evs, err := ParseEvent([]byte(aws.ToString(m.Body)))
		if err != nil {
			p.log.Warn("ec2: dropping unreadable interruption message", "messageId", aws.ToString(m.MessageId), "err", err)
		}
		events = append(events, evs...)
		handled = append(handled, m.ReceiptHandle)
	}
	ids := make([]string, 0, len(events))
	for _, e := range events {
		ids = append(ids, e.InstanceID)
	}
	var known map[string]instanceResult
	if len(ids) > 0 {
		if known, err = p.describeBatch(ctx, dedupe(ids)); err != nil {
			// Leave the messages to come back after their visibility timeout.
			return nil, fmt.Errorf("ec2: looking up interrupted instances: %w", err)
		}
	}
	var res []cloudprovider.Interruption
	for _, e := range events {
		r, ok := known[e.InstanceID]
		if ok && !p.ownedByCluster(&r) {
			ok = false
		}
		if !ok {
			p.log.Info("ec2: ignoring interruption of an instance that is not this cluster's", "instance", e.InstanceID, "kind", e.Kind, "event", e.ID)
			continue
		}
		claim := p.instanceClaim(ctx, &r.inst)
		e.ProviderID = claim.Status.ProviderID
		if e.Kind == cloudprovider.InterruptionSpot {
			p.markUnavailable(cloudprovider.OfferingKey{InstanceType: claim.Status.InstanceType, Zone: claim.Status.Zone, CapacityType: claim.Status.CapacityType}, "spot interruption")
		}
		res = append(res, e)
	}
	var errs []error
	for _, h := range handled {
		if _, err := p.opts.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(p.opts.QueueURL), ReceiptHandle: h}); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		p.log.Warn("ec2: deleting interruption messages failed; they may be delivered again", "err", errors.Join(errs...))
	}
	return res, nil
}

func (p *Provider) ownedByCluster(r *instanceResult) bool {
	key := clusterTag(p.opts.Cluster.Name)
	for _, t := range r.inst.Tags {
		if aws.ToString(t.Key) == key {
			return true
		}
	}
	return false
}
