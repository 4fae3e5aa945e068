package disruption

import (
	"testing"

	"github.com/nodeplan/nodeplan"
)

// TestRegisteredMethods: each registered method has its own single bit, inside AllMethods,
// and its own name and reason; Methods.String lists them in pass order. A method added with
// a bit or name another has, or left out of AllMethods, fails here.
func TestRegisteredMethods(t *testing.T) {
	var seen Methods
	names := map[string]bool{}
	reasons := map[nodeplan.DisruptionReason]bool{}
	for _, m := range registered() {
		k := m.kind()
		if k == 0 || k&(k-1) != 0 {
			t.Errorf("method %s: kind %b is not a single bit", m.name(), k)
		}
		if seen&k != 0 {
			t.Errorf("method %s: kind %b is another method's", m.name(), k)
		}
		if AllMethods&k != k {
			t.Errorf("method %s: kind %b is outside AllMethods", m.name(), k)
		}
		seen |= k
		if names[m.name()] || reasons[m.reason()] {
			t.Errorf("method %s: name or reason %s is another method's", m.name(), m.reason())
		}
		names[m.name()], reasons[m.reason()] = true, true
	}
	if got, want := Methods(0).String(), "interruption+expiration+emptiness+drift+consolidation"; got != want {
		t.Errorf("Methods(0).String() = %q, want %q", got, want)
	}
}
