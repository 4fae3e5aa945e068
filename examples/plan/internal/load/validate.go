package load

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeplan/nodeplan"
)

// The checks here are those whose failure would make a plan silently wrong: a misspelt operator
// or effect that the solver would otherwise have to guess at. They are not the API server's full
// validation.

func validatePodSpec(spec *corev1.PodSpec, path string) []error {
	var errs []error
	add := func(p, format string, args ...any) {
		errs = append(errs, &fieldError{path: path + "." + p, msg: fmt.Sprintf(format, args...)})
	}
	checkResources := func(p string, rr corev1.ResourceRequirements) {
		for _, part := range []struct {
			name string
			rl   corev1.ResourceList
		}{{"requests", rr.Requests}, {"limits", rr.Limits}} {
			for name, q := range part.rl {
				if q.Sign() < 0 {
					add(fmt.Sprintf("%s.resources.%s.%s", p, part.name, name), "%s is negative", q.String())
				}
			}
		}
	}
	for i := range spec.InitContainers {
		checkResources(fmt.Sprintf("initContainers[%d]", i), spec.InitContainers[i].Resources)
	}
	for i := range spec.Containers {
		checkResources(fmt.Sprintf("containers[%d]", i), spec.Containers[i].Resources)
	}
	for name, q := range spec.Overhead {
		if q.Sign() < 0 {
			add("overhead."+string(name), "%s is negative", q.String())
		}
	}
	if a := spec.Affinity; a != nil {
		if na := a.NodeAffinity; na != nil {
			if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
				for i, t := range r.NodeSelectorTerms {
					p := fmt.Sprintf("affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[%d]", i)
					errs = append(errs, nodeSelectorTerm(path+"."+p, t)...)
				}
			}
			for i, t := range na.PreferredDuringSchedulingIgnoredDuringExecution {
				p := fmt.Sprintf("affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[%d]", i)
				errs = append(errs, nodeSelectorTerm(path+"."+p+".preference", t.Preference)...)
				if t.Weight < 1 || t.Weight > 100 {
					add(p+".weight", "%d is not between 1 and 100", t.Weight)
				}
			}
		}
		for _, pa := range []struct {
			name     string
			required []corev1.PodAffinityTerm
			weighted []corev1.WeightedPodAffinityTerm
		}{
			{"podAffinity", podAffinityRequired(a.PodAffinity), podAffinityPreferred(a.PodAffinity)},
			{"podAntiAffinity", antiAffinityRequired(a.PodAntiAffinity), antiAffinityPreferred(a.PodAntiAffinity)},
		} {
			for i, t := range pa.required {
				p := fmt.Sprintf("%s.affinity.%s.requiredDuringSchedulingIgnoredDuringExecution[%d]", path, pa.name, i)
				errs = append(errs, podAffinityTerm(p, t)...)
			}
			for i, t := range pa.weighted {
				p := fmt.Sprintf("%s.affinity.%s.preferredDuringSchedulingIgnoredDuringExecution[%d]", path, pa.name, i)
				errs = append(errs, podAffinityTerm(p+".podAffinityTerm", t.PodAffinityTerm)...)
				if t.Weight < 1 || t.Weight > 100 {
					errs = append(errs, &fieldError{path: p + ".weight", msg: fmt.Sprintf("%d is not between 1 and 100", t.Weight)})
				}
			}
		}
	}
	for i, c := range spec.TopologySpreadConstraints {
		p := fmt.Sprintf("topologySpreadConstraints[%d]", i)
		if c.MaxSkew < 1 {
			add(p+".maxSkew", "%d is not at least 1", c.MaxSkew)
		}
		if c.TopologyKey == "" {
			add(p+".topologyKey", "required")
		}
		switch c.WhenUnsatisfiable {
		case corev1.DoNotSchedule, corev1.ScheduleAnyway:
		default:
			add(p+".whenUnsatisfiable", "%q is not DoNotSchedule or ScheduleAnyway", c.WhenUnsatisfiable)
		}
		for _, pol := range []struct {
			name string
			v    *corev1.NodeInclusionPolicy
		}{{"nodeAffinityPolicy", c.NodeAffinityPolicy}, {"nodeTaintsPolicy", c.NodeTaintsPolicy}} {
			if pol.v != nil && *pol.v != corev1.NodeInclusionPolicyHonor && *pol.v != corev1.NodeInclusionPolicyIgnore {
				add(p+"."+pol.name, "%q is not Honor or Ignore", *pol.v)
			}
		}
		if err := labelSelector(c.LabelSelector); err != nil {
			add(p+".labelSelector", "%v", err)
		}
	}
	for i, t := range spec.Tolerations {
		p := fmt.Sprintf("tolerations[%d]", i)
		switch t.Operator {
		case "", corev1.TolerationOpEqual:
		case corev1.TolerationOpExists:
			if t.Value != "" {
				add(p+".value", "must be empty with operator Exists, got %q", t.Value)
			}
		default:
			add(p+".operator", "unknown operator %q (want Equal or Exists)", t.Operator)
		}
		if t.Effect != "" {
			if err := taintEffect(t.Effect); err != nil {
				add(p+".effect", "%v", err)
			}
		}
	}
	return errs
}

func podAffinityRequired(a *corev1.PodAffinity) []corev1.PodAffinityTerm {
	if a == nil {
		return nil
	}
	return a.RequiredDuringSchedulingIgnoredDuringExecution
}

func podAffinityPreferred(a *corev1.PodAffinity) []corev1.WeightedPodAffinityTerm {
	if a == nil {
		return nil
	}
	return a.PreferredDuringSchedulingIgnoredDuringExecution
}

func antiAffinityRequired(a *corev1.PodAntiAffinity) []corev1.PodAffinityTerm {
	if a == nil {
		return nil
	}
	return a.RequiredDuringSchedulingIgnoredDuringExecution
}

func antiAffinityPreferred(a *corev1.PodAntiAffinity) []corev1.WeightedPodAffinityTerm {
	if a == nil {
		return nil
	}
	return a.PreferredDuringSchedulingIgnoredDuringExecution
}

func nodeSelectorTerm(path string, t corev1.NodeSelectorTerm) []error {
	var errs []error
	for _, part := range []struct {
		name  string
		exprs []corev1.NodeSelectorRequirement
	}{{"matchExpressions", t.MatchExpressions}, {"matchFields", t.MatchFields}} {
		for j, e := range part.exprs {
			if _, err := nodeplan.NewRequirement(e.Key, e.Operator, e.Values...); err != nil {
				errs = append(errs, &fieldError{path: fmt.Sprintf("%s.%s[%d]", path, part.name, j), msg: trimPrefix(err).Error()})
			}
		}
	}
	return errs
}

func podAffinityTerm(path string, t corev1.PodAffinityTerm) []error {
	var errs []error
	if t.TopologyKey == "" {
		errs = append(errs, &fieldError{path: path + ".topologyKey", msg: "required"})
	}
	if err := labelSelector(t.LabelSelector); err != nil {
		errs = append(errs, &fieldError{path: path + ".labelSelector", msg: err.Error()})
	}
	if err := labelSelector(t.NamespaceSelector); err != nil {
		errs = append(errs, &fieldError{path: path + ".namespaceSelector", msg: err.Error()})
	}
	return errs
}

// labelSelector checks operators and values the way the API server would when matching.
func labelSelector(s *metav1.LabelSelector) error {
	if s == nil {
		return nil
	}
	_, err := metav1.LabelSelectorAsSelector(s)
	return err
}

func taintEffect(e corev1.TaintEffect) error {
	switch e {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	}
	return fmt.Errorf("unknown effect %q (want NoSchedule, PreferNoSchedule or NoExecute)", e)
}

func validateNode(n *corev1.Node) []error {
	var errs []error
	for i, t := range n.Spec.Taints {
		if t.Key == "" {
			errs = append(errs, &fieldError{path: fmt.Sprintf("spec.taints[%d].key", i), msg: "required"})
		}
		if err := taintEffect(t.Effect); err != nil {
			errs = append(errs, &fieldError{path: fmt.Sprintf("spec.taints[%d].effect", i), msg: err.Error()})
		}
	}
	for _, part := range []struct {
		name string
		rl   corev1.ResourceList
	}{{"capacity", n.Status.Capacity}, {"allocatable", n.Status.Allocatable}} {
		for name, q := range part.rl {
			if q.Sign() < 0 {
				errs = append(errs, &fieldError{path: "status." + part.name + "." + string(name), msg: q.String() + " is negative"})
			}
		}
	}
	return errs
}

func intOrPercent(path string, v *intstr.IntOrString) error {
	if v == nil {
		return nil
	}
	if _, err := intstr.GetScaledValueFromIntOrPercent(v, 100, true); err != nil {
		return &fieldError{path: path, msg: fmt.Sprintf("%q is not an integer or a percentage", v.String())}
	}
	if v.Type == intstr.Int && v.IntVal < 0 {
		return &fieldError{path: path, msg: fmt.Sprintf("%d is negative", v.IntVal)}
	}
	return nil
}

var errNoName = errors.New("metadata.name: required")
