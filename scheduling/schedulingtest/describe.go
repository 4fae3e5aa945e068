package schedulingtest

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/scheduling"
)

// Describe formats an input compactly, one object a line, for failure messages and bug reports:
// what a person needs to rebuild the case by hand.
func Describe(in scheduling.Input) string {
	var b strings.Builder
	for _, np := range in.NodePools {
		fmt.Fprintf(&b, "pool %s weight=%d reqs=[%s]", np.Name, np.Weight, np.Template.Requirements)
		if len(np.Template.Labels) > 0 {
			fmt.Fprintf(&b, " labels=%s", labelString(np.Template.Labels))
		}
		if len(np.Template.Taints) > 0 {
			fmt.Fprintf(&b, " taints=%s", taintsString(np.Template.Taints))
		}
		if len(np.Limits) > 0 {
			fmt.Fprintf(&b, " limits=%s", resString(np.Limits))
		}
		b.WriteString("\n")
	}
	describeTypes(&b, "", in.InstanceTypes)
	for _, name := range slices.Sorted(maps.Keys(in.PoolInstanceTypes)) {
		describeTypes(&b, "pool "+name+" ", in.PoolInstanceTypes[name])
	}
	for _, ds := range in.DaemonSets {
		p := &corev1.Pod{Spec: ds.Spec.Template.Spec}
		fmt.Fprintf(&b, "daemonset %s/%s %s\n", ds.Namespace, ds.Name, podString(p))
	}
	for _, n := range in.Nodes {
		fmt.Fprintf(&b, "node %s alloc=%s labels=%s", n.Node.Name, resString(n.Node.Status.Allocatable), labelString(n.Node.Labels))
		if len(n.Node.Spec.Taints) > 0 {
			fmt.Fprintf(&b, " taints=%s", taintsString(n.Node.Spec.Taints))
		}
		if n.AttachLimit > 0 {
			fmt.Fprintf(&b, " volumes=%d/%d", n.VolumeCount, n.AttachLimit)
		}
		b.WriteString("\n")
		for _, p := range n.Pods {
			fmt.Fprintf(&b, "  bound %s %s\n", nodeplan.PodKey(p), podString(p))
		}
	}
	for _, nc := range in.NodeClaims {
		fmt.Fprintf(&b, "in-flight %s pool=%s type=%s zone=%s %s alloc=%s resources=%s\n", nc.Name, nc.NodePool,
			nc.Status.InstanceType, nc.Status.Zone, nc.Status.CapacityType, resString(nc.Status.Allocatable), resString(nc.Resources))
	}
	for _, p := range in.Pods {
		fmt.Fprintf(&b, "pod %s %s", nodeplan.PodKey(p), podString(p))
		if z := in.VolumeZones[nodeplan.PodKey(p)]; len(z) > 0 {
			fmt.Fprintf(&b, " volumeZones=%v", z)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// describeTypes writes a line per instance type: capacity, allocatable, arch and offerings.
func describeTypes(b *strings.Builder, prefix string, its []nodeplan.InstanceType) {
	for _, it := range its {
		fmt.Fprintf(b, "%stype %s %s alloc=%s arch=%s", prefix, it.Name, resString(it.Capacity), resString(it.Allocatable()), it.Labels[nodeplan.LabelArch])
		for _, o := range it.Offerings {
			avail := ""
			if !o.Available {
				avail = "(unavailable)"
			}
			fmt.Fprintf(b, " %s/%s=$%g%s", o.Zone, o.CapacityType, o.Price, avail)
		}
		b.WriteString("\n")
	}
}

func resString(rl corev1.ResourceList) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(rl)) {
		q := rl[k]
		parts = append(parts, fmt.Sprintf("%s=%s", k, q.String()))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func labelString(l map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func taintsString(ts []corev1.Taint) string {
	var parts []string
	for _, t := range ts {
		parts = append(parts, nodeplan.TaintString(t))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func podString(p *corev1.Pod) string {
	var b strings.Builder
	b.WriteString(resString(nodeplan.PodRequests(p)))
	if len(p.Labels) > 0 {
		fmt.Fprintf(&b, " labels=%s", labelString(p.Labels))
	}
	if len(p.Spec.NodeSelector) > 0 {
		fmt.Fprintf(&b, " nodeSelector=%s", labelString(p.Spec.NodeSelector))
	}
	for _, t := range p.Spec.Tolerations {
		fmt.Fprintf(&b, " tolerates=%s:%s=%s:%s", t.Key, t.Operator, t.Value, t.Effect)
	}
	if a := p.Spec.Affinity; a != nil {
		if a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			var terms []string
			for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
				var exprs []string
				for _, e := range t.MatchExpressions {
					exprs = append(exprs, fmt.Sprintf("%s %s %v", e.Key, e.Operator, e.Values))
				}
				terms = append(terms, strings.Join(exprs, " and "))
			}
			fmt.Fprintf(&b, " nodeAffinity=(%s)", strings.Join(terms, ") or ("))
		}
		if a.PodAffinity != nil {
			for _, t := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				fmt.Fprintf(&b, " podAffinity=%s@%s", metav1.FormatLabelSelector(t.LabelSelector), t.TopologyKey)
			}
		}
		if a.PodAntiAffinity != nil {
			for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				fmt.Fprintf(&b, " podAntiAffinity=%s@%s", metav1.FormatLabelSelector(t.LabelSelector), t.TopologyKey)
			}
		}
	}
	for _, c := range p.Spec.TopologySpreadConstraints {
		fmt.Fprintf(&b, " spread=%s@%s/maxSkew=%d/%s", metav1.FormatLabelSelector(c.LabelSelector), c.TopologyKey, c.MaxSkew, c.WhenUnsatisfiable)
	}
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.HostPort > 0 {
				fmt.Fprintf(&b, " hostPort=%d", port.HostPort)
			}
		}
	}
	for _, o := range p.OwnerReferences {
		fmt.Fprintf(&b, " owner=%s/%s", o.Kind, o.Name)
	}
	return b.String()
}
