package controller

import (
	"sync/atomic"

	"github.com/nodeplan/nodeplan/cloudprovider/ec2"
)

// NodeClasses holds the EC2NodeClasses by name for the parts that look them up on every call
// (the EC2 provider's Options.NodeClass, [Controller.NodeClass]); whoever reads the classes
// ([ClusterNodePools.OnClasses], a file or ConfigMap decoder) replaces them whole with Set. The
// zero value holds none. Safe for concurrent use.
type NodeClasses struct {
	m atomic.Pointer[map[string]*ec2.NodeClass]
}

// Set replaces the classes; the map must not be modified afterwards.
func (n *NodeClasses) Set(byName map[string]*ec2.NodeClass) { n.m.Store(&byName) }

// Get returns the named class, if it is held.
func (n *NodeClasses) Get(name string) (*ec2.NodeClass, bool) {
	m := n.m.Load()
	if m == nil {
		return nil, false
	}
	c, ok := (*m)[name]
	return c, ok
}
