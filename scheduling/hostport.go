package scheduling

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// hostPort is one (IP, port, protocol) a pod binds on its node.
type hostPort struct {
	ip    string
	port  int32
	proto corev1.Protocol
}

// podHostPorts returns the host ports a pod uses, sorted. An empty IP means 0.0.0.0 and the
// protocol defaults to TCP, as the API server defaults them.
func podHostPorts(p *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(cs []corev1.Container) {
		for i := range cs {
			for _, cp := range cs[i].Ports {
				if cp.HostPort == 0 {
					continue
				}
				hp := hostPort{ip: cp.HostIP, port: cp.HostPort, proto: cp.Protocol}
				if hp.ip == "" {
					hp.ip = "0.0.0.0"
				}
				if hp.proto == "" {
					hp.proto = corev1.ProtocolTCP
				}
				out = append(out, hp)
			}
		}
	}
	add(p.Spec.InitContainers)
	add(p.Spec.Containers)
	slices.SortFunc(out, func(a, b hostPort) int {
		return cmp.Or(cmp.Compare(a.port, b.port), cmp.Compare(a.proto, b.proto), cmp.Compare(a.ip, b.ip))
	})
	return slices.Compact(out)
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
