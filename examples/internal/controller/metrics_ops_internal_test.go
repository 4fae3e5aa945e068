package controller

import (
	"testing"

	"github.com/nodeplan/nodeplan/cloudprovider"
)

// TestInterruptionReason checks Karpenter's label value for each interruption kind (the AWS
// provider's message kinds): the reason of karpenter_nodeclaims_disrupted_total and the
// message_type of karpenter_interruption_received_messages_total.
func TestInterruptionReason(t *testing.T) {
	for _, c := range []struct {
		ev   cloudprovider.Interruption
		want string
	}{
		{cloudprovider.Interruption{Kind: cloudprovider.InterruptionSpot}, "spot_interrupted"},
		{cloudprovider.Interruption{Kind: cloudprovider.InterruptionRebalance}, "rebalance_recommendation"},
		{cloudprovider.Interruption{Kind: cloudprovider.InterruptionScheduledChange}, "scheduled_change"},
		{cloudprovider.Interruption{Kind: cloudprovider.InterruptionStateChange, State: "stopping"}, "instance_stopped"},
		{cloudprovider.Interruption{Kind: cloudprovider.InterruptionStateChange, State: "stopped"}, "instance_stopped"},
		{cloudprovider.Interruption{Kind: cloudprovider.InterruptionStateChange, State: "shutting-down"}, "instance_terminated"},
		{cloudprovider.Interruption{Kind: cloudprovider.InterruptionStateChange, State: "terminated"}, "instance_terminated"},
	} {
		if got := interruptionReason(c.ev); got != c.want {
			t.Errorf("interruptionReason(%s %s) = %q, want %q", c.ev.Kind, c.ev.State, got, c.want)
		}
	}
}
