package cloudprovider

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nodeplan/nodeplan"
)

// OfferingKey names one offering: an instance type in a zone, bought one way.
type OfferingKey struct {
	InstanceType string
	Zone         string
	CapacityType nodeplan.CapacityType
}

func (k OfferingKey) String() string {
	return string(k.CapacityType) + ":" + k.InstanceType + ":" + k.Zone
}

// InsufficientCapacityError reports that a launch failed because the cloud could not supply any
// of the allowed offerings. A controller should drop the claim and solve again: the provider
// marks the named offerings unavailable for a while, so the next solve avoids them.
type InsufficientCapacityError struct {
	// Offerings are the offerings that failed, sorted; empty when none was even allowed (every
	// option's offerings were already unavailable or excluded by the requirements).
	Offerings []OfferingKey
	// Err is the cloud's error, if there is a single one.
	Err error
}

func (e *InsufficientCapacityError) Error() string {
	var b strings.Builder
	b.WriteString("cloudprovider: insufficient capacity")
	if len(e.Offerings) == 0 {
		b.WriteString(": no available offering is allowed")
	} else {
		b.WriteString(" for ")
		for i, o := range e.Offerings {
			if i > 0 {
				b.WriteString(", ")
			}
			if i == 8 {
				fmt.Fprintf(&b, "and %d more", len(e.Offerings)-i)
				break
			}
			b.WriteString(o.String())
		}
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *InsufficientCapacityError) Unwrap() error { return e.Err }

// NotFoundError reports that no node has the provider ID: it was never launched, or it is gone.
type NotFoundError struct {
	ProviderID string
	Err        error
}

func (e *NotFoundError) Error() string {
	s := fmt.Sprintf("cloudprovider: node %q not found", e.ProviderID)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *NotFoundError) Unwrap() error { return e.Err }

// NodeClassNotReadyError reports that a node class cannot be used yet: it does not exist, or its
// subnets, security groups, images or instance profile cannot be resolved. A controller should
// drop the claim and wait for the class.
type NodeClassNotReadyError struct {
	// NodeClass names the class.
	NodeClass string
	// Reason says what is missing, for people.
	Reason string
	Err    error
}

func (e *NodeClassNotReadyError) Error() string {
	s := fmt.Sprintf("cloudprovider: node class %q is not ready", e.NodeClass)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *NodeClassNotReadyError) Unwrap() error { return e.Err }

// LaunchError reports a launch that failed for a reason other than capacity. Reason is a stable
// CamelCase code (one of the Reason constants, or a provider's own); Message is for people.
type LaunchError struct {
	Reason  string
	Message string
	Err     error
}

// Launch failure reasons shared by providers.
const (
	ReasonLaunchFailed         = "LaunchFailed"
	ReasonUnauthorized         = "Unauthorized"
	ReasonImageNotFound        = "AMINotFound"
	ReasonQuotaExceeded        = "QuotaExceeded"
	ReasonInvalidConfiguration = "InvalidConfiguration"
	ReasonUserDataTooLarge     = "UserDataSizeLimitExceeded"
	ReasonNetworkMismatch      = "SecurityGroupSubnetVPCMismatch"
	ReasonNoInstanceTypeOption = "NoInstanceTypeOption"
)

func (e *LaunchError) Error() string {
	reason := e.Reason
	if reason == "" {
		reason = ReasonLaunchFailed
	}
	s := "cloudprovider: launch failed (" + reason + ")"
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *LaunchError) Unwrap() error { return e.Err }

// IsInsufficientCapacity reports whether err is or wraps an [*InsufficientCapacityError].
func IsInsufficientCapacity(err error) bool {
	var e *InsufficientCapacityError
	return errors.As(err, &e)
}

// IsNotFound reports whether err is or wraps a [*NotFoundError].
func IsNotFound(err error) bool {
	var e *NotFoundError
	return errors.As(err, &e)
}

// IsNodeClassNotReady reports whether err is or wraps a [*NodeClassNotReadyError].
func IsNodeClassNotReady(err error) bool {
	var e *NodeClassNotReadyError
	return errors.As(err, &e)
}

// LaunchReason returns the reason of the [*LaunchError] err is or wraps, or "" if none.
func LaunchReason(err error) string {
	var e *LaunchError
	if errors.As(err, &e) {
		if e.Reason == "" {
			return ReasonLaunchFailed
		}
		return e.Reason
	}
	return ""
}
