package ec2

import (
	"sync"
	"time"

	"github.com/nodeplan/nodeplan/cloudprovider"
)

// unavailableCache remembers offerings that recently failed with a capacity error. An offering
// that fails again soon after its last failure is avoided twice as long, up to a cap, so a
// persistently short offering does not make the controller relaunch into it every few minutes.
type unavailableCache struct {
	mu      sync.Mutex
	entries map[cloudprovider.OfferingKey]unavailableEntry
}

type unavailableEntry struct {
	until    time.Time
	failures int
}

func (p *Provider) markUnavailable(k cloudprovider.OfferingKey, reason string) {
	base := p.opts.UnavailableFor
	if base <= 0 {
		base = 3 * time.Minute
	}
	limit := p.opts.MaxUnavailableFor
	if limit <= 0 {
		limit = 30 * time.Minute
	}
	now := p.now()
	c := &p.unavailable
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[cloudprovider.OfferingKey]unavailableEntry{}
	}
	e := c.entries[k]
	// A failure within one base period of the last avoidance ending counts as a repeat.
	if e.failures > 0 && now.Before(e.until.Add(base)) {
		e.failures++
	} else {
		e.failures = 1
	}
	d := base
	for i := 1; i < e.failures && d < limit; i++ {
		d *= 2
	}
	e.until = now.Add(min(d, limit))
	c.entries[k] = e
	p.log.Info("ec2: offering unavailable", "offering", k.String(), "reason", reason, "for", min(d, limit), "failures", e.failures)
}

// isUnavailable reports whether the offering is being avoided at now.
func (c *unavailableCache) isUnavailable(k cloudprovider.OfferingKey, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	return ok && now.Before(e.until)
}

// snapshot returns the offerings avoided at now, so a caller checking many can lock once.
func (c *unavailableCache) snapshot(now time.Time) map[cloudprovider.OfferingKey]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[cloudprovider.OfferingKey]bool{}
	for k, e := range c.entries {
		if now.Before(e.until) {
			out[k] = true
		} else if now.After(e.until.Add(time.Hour)) {
			delete(c.entries, k) // long forgotten: drop the failure history too
		}
	}
	return out
}
