package pricing

import (
	"errors"
	"fmt"
	"time"
)

// ErrNoPrices is wrapped by the error of a refresh whose answer held no usable price: an empty
// answer, or one where every entry was skipped. It is never taken to mean "everything is free".
var ErrNoPrices = errors.New("pricing: the answer held no usable price")

// Kind names a kind of price.
type Kind string

const (
	KindOnDemand Kind = "on-demand"
	KindSpot     Kind = "spot"
)

// StaleError reports a refresh that failed: the prices already held were kept, and are this
// old.
type StaleError struct {
	// Kind is the kind of prices the refresh was for.
	Kind Kind
	// Updated is when the prices kept were last refreshed; zero when there are none.
	Updated time.Time
	// Age is how old the prices kept were when the refresh failed; 0 when there are none.
	Age time.Duration
	// Err is why the refresh failed.
	Err error
}

func (e *StaleError) Error() string {
	if e.Updated.IsZero() {
		return fmt.Sprintf("pricing: refreshing %s prices: %v; no %s prices known", e.Kind, e.Err, e.Kind)
	}
	return fmt.Sprintf("pricing: refreshing %s prices: %v; keeping prices from %s (%s old)",
		e.Kind, e.Err, e.Updated.UTC().Format(time.RFC3339), e.Age.Round(time.Second))
}

func (e *StaleError) Unwrap() error { return e.Err }

// Report says what a successful refresh did.
type Report struct {
	// Kind is the kind of prices refreshed.
	Kind Kind
	// Updated is the time the new prices are stamped with.
	Updated time.Time
	// Prices is how many prices the answer gave (one per type, or per type and zone for spot).
	Prices int
	// Skipped lists the entries of the answer that were not used, and why.
	Skipped []Skipped
}

// Skipped is one entry of an answer that was not used.
type Skipped struct {
	// InstanceType and Zone say which price the entry was for, when it says.
	InstanceType, Zone string
	// Reason says what was wrong with it.
	Reason string
}

func (s Skipped) String() string {
	who := s.InstanceType
	if who == "" {
		who = "(no instance type)"
	}
	if s.Zone != "" {
		who += " in " + s.Zone
	}
	return who + ": " + s.Reason
}
