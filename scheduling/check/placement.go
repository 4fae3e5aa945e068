package check

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
)

// placements checks every target that got pods: the pods fit, match, tolerate, do not clash on
// host ports, run in their volumes' zones, and stay within attach limits — on every variant.
func (c *checker) placements() {
	for _, t := range c.all {
		if len(t.pods) == 0 {
			continue
		}
		if len(t.variants) == 0 {
			c.fail(RuleResources, t.desc, "gets pods but its size is unknown (no instance type option in its pool's catalog)")
		}
		c.taints(t)
		c.resources(t)
		c.nodeAffinity(t)
		c.hostPorts(t)
		c.volumeZones(t)
		c.attachLimit(t)
	}
}

func (c *checker) taints(t *target) {
	for _, p := range t.pods {
		if taint, bad := untolerated(p.Spec.Tolerations, t.taints); bad {
			c.fail(RuleTaints, podDesc(nodeplan.PodKey(p)), "on %s does not tolerate taint %s", t.desc, nodeplan.TaintString(taint))
		}
	}
}

func (c *checker) resources(t *target) {
	pods := corev1.ResourceList{}
	for _, p := range t.pods {
		pods = nodeplan.AddResources(pods, podRequests(p))
	}
	bad := 0
	var first string
	for _, v := range t.variants {
		daemons := corev1.ResourceList{}
		for _, d := range v.daemons {
			daemons = nodeplan.AddResources(daemons, d.req)
		}
		// As in kube-scheduler, only resources the new pods request are checked: an
		// overcommitted resource does not block pods that do not ask for it.
		asked := nodeplan.AddResources(pods, daemons)
		need := nodeplan.AddResources(asked, v.used)
		for k := range need {
			if a, ok := asked[k]; !ok || a.Sign() <= 0 {
				delete(need, k)
			}
		}
		if what, ok := nodeplan.Fits(need, v.alloc); !ok {
			bad++
			if first == "" {
				n, a, pq, dq, uq := need[what], v.alloc[what], pods[what], daemons[what], v.used[what]
				first = fmt.Sprintf("%sneeds %s %s (pods %s + daemons %s + already used %s) but has %s allocatable",
					prefix(v.desc), what, n.String(), pq.String(), dq.String(), uq.String(), a.String())
			}
		}
	}
	if bad > 0 {
		more := ""
		if bad > 1 {
			more = fmt.Sprintf(" (and %d more of its %d variants)", bad-1, len(t.variants))
		}
		c.fail(RuleResources, t.desc, "%s%s", first, more)
	}
}

func (c *checker) nodeAffinity(t *target) {
	for _, p := range t.pods {
		for _, v := range t.variants {
			if ok, why := matchNode(p, t.name, v.labels); !ok {
				c.fail(RuleNodeAffinity, podDesc(nodeplan.PodKey(p)), "on %s%s: %s", t.desc, suffix(v.desc), why)
				break
			}
		}
	}
}

type portUser struct {
	who   string
	ports []hostPort
	mine  bool // a pending pod placed by the result
}

func (c *checker) hostPorts(t *target) {
	for _, v := range t.variants {
		var users []portUser
		for _, p := range t.bound {
			users = append(users, portUser{who: "bound pod " + nodeplan.PodKey(p), ports: hostPorts(p)})
		}
		for _, d := range v.daemons {
			users = append(users, portUser{who: "DaemonSet " + d.ds.Namespace + "/" + d.ds.Name, ports: d.ports})
		}
		for _, p := range t.pods {
			users = append(users, portUser{who: "pod " + nodeplan.PodKey(p), ports: hostPorts(p), mine: true})
		}
		found := false
		for i, a := range users {
			for j := i + 1; j < len(users); j++ {
				b := users[j]
				if !a.mine && !b.mine {
					continue
				}
				for _, pa := range a.ports {
					for _, pb := range b.ports {
						if pa.conflicts(pb) {
							c.fail(RuleHostPorts, t.desc, "%s%s host port %s conflicts with %s host port %s", prefix(v.desc), a.who, pa, b.who, pb)
							found = true
						}
					}
				}
			}
		}
		if found {
			return
		}
	}
}

// volumeZones checks Input.VolumeZones. A key with no zones restricts nothing.
func (c *checker) volumeZones(t *target) {
	for _, p := range t.pods {
		zones := c.in.VolumeZones[nodeplan.PodKey(p)]
		if len(zones) == 0 {
			continue
		}
		for _, v := range t.variants {
			if z, ok := v.labels[nodeplan.LabelZone]; !ok || !slices.Contains(zones, z) {
				c.fail(RuleVolumeZone, podDesc(nodeplan.PodKey(p)), "on %s%s is in zone %q, but its volumes allow only %v", t.desc, suffix(v.desc), z, zones)
				break
			}
		}
	}
}

// attachLimit checks an existing node's CSI attach limit. Volumes the node's bound pods already
// use are attached already and count once.
func (c *checker) attachLimit(t *target) {
	if t.kind != kindExisting || t.node.AttachLimit <= 0 {
		return
	}
	have := map[string]bool{}
	for _, p := range t.bound {
		for _, v := range volumes(p) {
			have[v] = true
		}
	}
	added := 0
	for _, p := range t.pods {
		for _, v := range volumes(p) {
			if !have[v] {
				have[v] = true
				added++
			}
		}
	}
	if n := t.node.VolumeCount + added; added > 0 && n > t.node.AttachLimit {
		c.fail(RuleAttachLimit, t.desc, "would have %d volumes attached (%d now + %d new), over its limit of %d", n, t.node.VolumeCount, added, t.node.AttachLimit)
	}
}

func prefix(desc string) string {
	if desc == "" {
		return ""
	}
	return desc + ": "
}

func suffix(desc string) string {
	if desc == "" {
		return ""
	}
	return " " + desc
}
