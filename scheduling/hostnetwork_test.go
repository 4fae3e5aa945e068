package scheduling

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

// A hostNetwork pod binds its container ports on the node (the API server writes them as host
// ports): two such pods on the same port cannot share a node, even as hand-built pods.
func TestHostNetworkContainerPortsAreHostPorts(t *testing.T) {
	ps := pods("agent", 2, "100m", "128Mi")
	for _, p := range ps {
		p.Spec.HostNetwork = true
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
	}
	in := Input{Pods: ps, NodePools: []nodeplan.NodePool{{Name: "default"}}, InstanceTypes: []nodeplan.InstanceType{cType(4, 0.2)}}
	res, err := Solve(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NodeClaims) != 2 {
		t.Errorf("Solve(two hostNetwork pods on container port 8080) = %d nodes, want 2", len(res.NodeClaims))
	}
}
