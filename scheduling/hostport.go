package scheduling

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

// hostPort is one (IP, port, protocol) a pod binds on its node.
type hostPort struct {
	ip    string
	port  int32
	proto corev1.Protocol
}

// podHostPorts returns the host ports a pod uses, sorted, by nodeplan.PodHostPorts (defaults
// and hostNetwork as the API server applies them).
func podHostPorts(p *corev1.Pod) []hostPort {
	ports := nodeplan.PodHostPorts(p)
	if len(ports) == 0 {
		return nil
	}
	out := make([]hostPort, len(ports))
	for i, hp := range ports {
		out[i] = hostPort{ip: hp.IP, port: hp.Port, proto: hp.Protocol}
	}
	return out
}

// conflicts reports whether two host-port bindings collide: same port and protocol, and the
// same IP or either one the wildcard 0.0.0.0.
func (a hostPort) conflicts(b hostPort) bool {
	return a.port == b.port && a.proto == b.proto && (a.ip == b.ip || a.ip == "0.0.0.0" || b.ip == "0.0.0.0")
}

func portsConflict(a, b []hostPort) (hostPort, bool) {
	for _, x := range a {
		for _, y := range b {
			if x.conflicts(y) {
				return x, true
			}
		}
	}
	return hostPort{}, false
}
