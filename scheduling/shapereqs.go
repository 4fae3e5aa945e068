package scheduling

import "github.com/nodeplan/nodeplan"

// shapeReqs describes a node of a shape completely: what its pool and offerings allow (where:
// the pool's requirements with the offerings' zones and capacity types, pool.where) and what its
// instance type is (its labels, and its name as the instance-type label when they lack one).
// The node's requirements are where.IntersectLabels(labels) (with the name), but that list is
// never built: a catalog has hundreds of types, most of which a solve only asks a question or
// two of, and building ~20 requirements per type was most of a small solve's cost. Each method
// answers as the built list would, exactly (TestShapeReqsIsIntersection).
//
// The zero value describes a node with no labels at all.
type shapeReqs struct {
	where  nodeplan.Requirements // shared with the pool's other shapes: never modified
	labels map[string]string
	// name is the instance-type label when labels lack one (named: newShape always sets it).
	name  string
	named bool
}

// label returns the node's own label on key: the type's, or its name as the instance type.
func (n *shapeReqs) label(key string) (string, bool) {
	v, ok := n.labels[key]
	if !ok && n.named && key == nodeplan.LabelInstanceType {
		return n.name, true
	}
	return v, ok
}

// compatible is Requirements.Compatible(pod) == nil on the node's requirements.
func (n *shapeReqs) compatible(pod nodeplan.Requirements) bool {
	return n.compatibleIgnoring(pod, "")
}

// compatibleIgnoring is compatible with pod's requirement on skip left out ("": none).
func (n *shapeReqs) compatibleIgnoring(pod nodeplan.Requirements, skip string) bool {
	for _, p := range pod.All() {
		if p.Key == skip && skip != "" {
			continue
		}
		if !n.admits(p) {
			return false
		}
	}
	return true
}

// admits reports whether the node's requirement on p.Key intersects p. A labelled key's
// requirement is "In [label]" when where accepts the label and empty otherwise; an unlabelled
// key's is where's; a key neither mentions is a label the node will not have.
func (n *shapeReqs) admits(p nodeplan.Requirement) bool {
	w, hasW := n.where.Get(p.Key)
	if v, ok := n.label(p.Key); ok {
		return (!hasW || w.Accepts(v, true)) && p.Accepts(v, true)
	}
	if hasW {
		return w.Intersects(p)
	}
	return p.Accepts("", false)
}

// get is Requirements.Get(key) on the node's requirements.
func (n *shapeReqs) get(key string) (nodeplan.Requirement, bool) {
	w, hasW := n.where.Get(key)
	v, ok := n.label(key)
	return withValue(w, hasW, key, v, ok)
}

// narrowKeys returns the keys other than zone and capacity type on which the node's
// requirements allow other than exactly one value, in key order. Only where can: a label pins
// its key (or, where rejects it, leaves no value).
func (n *shapeReqs) narrowKeys() []string {
	var out []string
	for _, r := range n.where.All() {
		if r.Key == nodeplan.LabelZone || r.Key == nodeplan.LabelCapacityType {
			continue
		}
		if v, ok := n.label(r.Key); ok {
			if !r.Accepts(v, true) {
				out = append(out, r.Key)
			}
			continue
		}
		if _, single := r.Single(); !single {
			out = append(out, r.Key)
		}
	}
	return out
}
