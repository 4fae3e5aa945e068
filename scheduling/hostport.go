package scheduling

import "github.com/nodeplan/nodeplan"

// portsConflict returns the first of a's host ports that collides with one of b's
// (nodeplan.HostPort.Conflicts, as kube-scheduler's NodePorts filter decides).
func portsConflict(a, b []nodeplan.HostPort) (nodeplan.HostPort, bool) {
	for _, x := range a {
		for _, y := range b {
			if x.Conflicts(y) {
				return x, true
			}
		}
	}
	return nodeplan.HostPort{}, false
}
