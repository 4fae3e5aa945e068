package disruption

import (
	"context"
	"fmt"
	"time"

	"github.com/nodeplan/nodeplan"
)

// A method is one way of disrupting nodes, as in Karpenter: interruption, expiration,
// emptiness, drift, consolidation, each in its own file. Adding one is a file with its type
// and a line in [registered]. A pass gives every managed node to at most one method, then runs
// the methods in their registered order, each seeing what the ones before it took.
type method interface {
	// name is how Methods.String and messages call the method.
	name() string
	// kind is the method's bit in Options.Methods, declared beside the method.
	kind() Methods
	// reason is what its commands say they disrupt for.
	reason() nodeplan.DisruptionReason
	// stage is how far a node must get through the shared eligibility checks before the
	// method may take it.
	stage() stage
	// take reports whether the node is the method's, or why it stays (a blocker only this
	// method applies). The methods of a stage are asked in registered order; the first to take
	// a node has it.
	take(p *planner, s *nstate) (mine bool, blocked *Blocked)
	// mode is how a command of the method disrupting the node is carried out.
	mode(s *nstate) Mode
	// plan makes the pass's commands for the method's nodes.
	plan(ctx context.Context, p *planner, nodes []*nstate) error
}

// registered returns the methods in the order a pass runs them.
func registered() []method {
	return []method{interruption{}, expiration{}, emptiness{}, drift{}, consolidation{}}
}

// stage is how far a node has got through the checks every method shares (see eligible).
type stage int

const (
	// stageManaged: a node of a known NodePool that is not already being disrupted. The
	// forceful methods take nodes here: an interrupted or expired node goes whatever else holds.
	stageManaged stage = iota
	// stageDisruptable: also initialized, not nominated for a pending pod, and without the
	// node's karpenter.sh/do-not-disrupt annotation.
	stageDisruptable
	// stageSettled: also past its pool's consolidateAfter, which is not Never.
	stageSettled
	stages
)

// classify gives every managed node its method, by kind, or its blocker.
func (p *planner) classify(ms []method) map[Methods][]*nstate {
	out := map[Methods][]*nstate{}
	for _, s := range p.nodes {
		if s.in.NodePool == "" {
			continue
		}
		m, bl := p.methodFor(ms, s)
		switch {
		case bl != nil:
			s.blocked = bl
		case m != nil:
			out[m.kind()] = append(out[m.kind()], s)
		}
	}
	return out
}

// methodFor returns the method that takes the node, or why none may.
func (p *planner) methodFor(ms []method, s *nstate) (method, *Blocked) {
	for st := stageManaged; st < stages; st++ {
		if bl := p.eligible(s, st); bl != nil {
			return nil, bl
		}
		for _, m := range ms {
			if m.stage() != st {
				continue
			}
			if mine, bl := m.take(p, s); bl != nil {
				return nil, bl
			} else if mine {
				return m, nil
			}
		}
	}
	return nil, nil
}

// eligible returns why the node does not pass the checks that lead to stage st, or nil.
func (p *planner) eligible(s *nstate, st stage) *Blocked {
	n := s.in
	switch st {
	case stageManaged:
		if s.pool == nil {
			return &Blocked{Code: CodeNoNodePool, Object: n.NodePool, Message: fmt.Sprintf(
				"NodePool %s is not in the input, so its disruption settings are unknown", n.NodePool)}
		}
		if n.Disrupting {
			return &Blocked{Code: CodeDisrupting, Message: "the node is already being disrupted; it counts against its pool's budgets until it is gone"}
		}
	case stageDisruptable:
		if n.Initialized.IsZero() {
			return &Blocked{Code: CodeNotInitialized, Message: "the node has not finished initializing; it is disrupted only once it has"}
		}
		if n.Nominated {
			return &Blocked{Code: CodeNominated, Message: "the node is nominated for a pending pod"}
		}
		if s.nominated != "" {
			return &Blocked{Code: CodeNominated, Object: s.nominated, Message: fmt.Sprintf(
				"pending pod %s would be scheduled onto the node's free room", s.nominated)}
		}
		if nodeplan.NodeDoNotDisrupt(n.Node.Annotations) {
			return &Blocked{Code: CodeDoNotDisruptNode, Message: fmt.Sprintf(
				"the node is annotated %s: \"true\"; remove the annotation to let it be disrupted", nodeplan.AnnotationDoNotDisrupt)}
		}
	case stageSettled:
		after := s.pool.Disruption.ConsolidateAfter
		if after == nodeplan.Never {
			return &Blocked{Code: CodeConsolidationDisabled, Object: s.pool.Name, Message: fmt.Sprintf(
				"NodePool %s has consolidateAfter: Never", s.pool.Name)}
		}
		since := n.Initialized
		if n.LastPodEvent.After(since) {
			since = n.LastPodEvent
		}
		if wait := since.Add(after).Sub(p.now); wait > 0 {
			return &Blocked{Code: CodeConsolidateAfter, Object: s.pool.Name, Message: fmt.Sprintf(
				"a pod was scheduled or removed %s ago; NodePool %s waits consolidateAfter %s, %s more",
				p.now.Sub(since).Round(time.Second), s.pool.Name, after, wait.Round(time.Second))}
		}
	}
	return nil
}
