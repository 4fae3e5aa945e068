package schedulingtest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/nodeplan/nodeplan/scheduling/check"
)

// allAntiOK reports whether the current assignment keeps every anti-affinity rule, checking
// each placed pod as if it came last.
func (s *topoSearch) allAntiOK() bool {
	for i, t := range s.where {
		if t < 0 {
			continue
		}
		s.set[t] &^= 1 << i
		ok := s.antiOK(i, t)
		s.set[t] |= 1 << i
		if !ok {
			return false
		}
	}
	return true
}

// randomAssignment puts every pod somewhere its resources and node selectors allow, or
// nowhere, at random.
func (s *topoSearch) randomAssignment(r *rand.Rand) {
	s.set = s.set[:s.nb]
	clear(s.set)
	s.class = s.class[:0]
	for _, i := range r.Perm(s.n) {
		bit := uint(1) << i
		var options []int // targets; len(s.set) means a new node
		for b := range s.nb {
			if s.binFits[b][s.set[b]|bit] {
				options = append(options, b)
			}
		}
		for k := range s.class {
			if !math.IsInf(s.nodeCost(k, s.set[s.nb+k]|bit), 1) {
				options = append(options, s.nb+k)
			}
		}
		if len(s.opening[i]) > 0 {
			options = append(options, len(s.set), len(s.set))
		}
		if len(options) == 0 || r.IntN(8) == 0 {
			s.where[i] = unplacedTarget
			continue
		}
		t := options[r.IntN(len(options))]
		if t == len(s.set) {
			s.set = append(s.set, 0)
			s.class = append(s.class, s.opening[i][r.IntN(len(s.opening[i]))])
		}
		s.set[t] |= bit
		s.where[i] = t
	}
}

// TestTopologyRulesMatchCheck compares the oracle's reading of the rules with package check's
// on random plans of random inputs: they must accept and reject the same plans.
func TestTopologyRulesMatchCheck(t *testing.T) {
	inputs, plans := 200, 30
	if testing.Short() {
		inputs = 50
	}
	gen := TopologyInputs()
	r := rand.New(rand.NewPCG(1, 2))
	accepted, rejected := 0, map[check.Rule]int{}
	for seed := range inputs {
		in := gen.Example(seed)
		if !topologyInScope(&in) {
			t.Fatalf("seed %d: TopologyInputs made an input OptimalTopology does not take:\n%s", seed, Describe(in))
		}
		s := newTopoSearch(&in, TopologyRules{})
		for range plans {
			s.randomAssignment(r)
			mine := map[check.Rule]bool{
				check.RulePodAntiAffinity: !s.allAntiOK(),
				check.RuleTopologySpread:  !s.spreadOK(),
				check.RulePodAffinity:     !s.affinityOK(),
			}
			res := s.plan(s.where, s.class)
			err := check.Result(in, res)
			theirs := map[check.Rule]bool{}
			for _, v := range check.Violations(err) {
				if _, ok := mine[v.Rule]; !ok {
					t.Fatalf("seed %d: the oracle's plan breaks a rule it does not decide: %v\n%s", seed, v, Describe(in))
				}
				theirs[v.Rule] = true
			}
			for rule, broken := range mine {
				if broken != theirs[rule] {
					t.Fatalf("seed %d: the oracle finds %s broken = %v, check.Result = %v\nplan: %+v\n%s", seed, rule, broken, err, res, Describe(in))
				}
				if broken {
					rejected[rule]++
				}
			}
			if err == nil {
				accepted++
			}
		}
	}
	t.Logf("random plans: %d accepted by both; rejected by both, by rule: %v", accepted, rejected)
	for _, rule := range []check.Rule{check.RulePodAntiAffinity, check.RuleTopologySpread, check.RulePodAffinity} {
		if rejected[rule] < inputs {
			t.Errorf("only %d random plans break %s: the comparison says little", rejected[rule], rule)
		}
	}
}
