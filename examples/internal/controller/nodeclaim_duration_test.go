package controller

import (
	"regexp"
	"testing"
	"time"

	"github.com/nodeplan/nodeplan"
)

// Karpenter's NodeClaim CRD refuses durations with fractions or without units; the real API
// server found a NodeClaim with expireAfter "2562047h47m16.854775807s" (nodeplan.Never).
func TestClaimSpecDurationsPassTheCRD(t *testing.T) {
	crd := regexp.MustCompile(`^(([0-9]+(s|m|h))+|Never)$`)
	for _, tt := range []struct {
		in   time.Duration
		want string
	}{
		{0, "Never"},
		{nodeplan.Never, "Never"},
		{720 * time.Hour, "720h0m0s"},
		{1500 * time.Millisecond, "1s"},
		{300 * time.Millisecond, "1s"},
	} {
		s := claimSpec(&Claim{NodeClaim: nodeplan.NodeClaim{ExpireAfter: tt.in, TerminationGracePeriod: tt.in}})
		if s.ExpireAfter != tt.want || !crd.MatchString(s.ExpireAfter) {
			t.Errorf("claimSpec(expireAfter %v).ExpireAfter = %q, want %q (and the CRD's pattern)", tt.in, s.ExpireAfter, tt.want)
		}
		if tgp := s.TerminationGracePeriod; tgp != nil && !crd.MatchString(tgp.Duration.String()) {
			t.Errorf("claimSpec(terminationGracePeriod %v) = %v, which the CRD refuses", tt.in, tgp.Duration)
		}
	}
}
