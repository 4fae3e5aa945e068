package nodeplan

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DoNotDisrupt reports whether a pod's karpenter.sh/do-not-disrupt annotation protects it at now.
// The value "true" protects it for as long as it carries the annotation; a duration (e.g. "1h")
// protects it until that long after the pod started (its StartTime, or its creation time before
// it has one). Any other value does not protect it; [DoNotDisruptError] says why.
func DoNotDisrupt(pod *corev1.Pod, now time.Time) bool {
	protected, _ := doNotDisrupt(pod.Annotations, PodStart(pod), now)
	return protected
}

// DoNotDisruptError returns an error when a pod's do-not-disrupt annotation is neither "true" nor
// a duration, so a controller can surface the typo instead of silently disrupting the pod.
func DoNotDisruptError(pod *corev1.Pod) error {
	_, err := doNotDisrupt(pod.Annotations, PodStart(pod), time.Time{})
	return err
}

func doNotDisrupt(annotations map[string]string, start, now time.Time) (bool, error) {
	v, ok := annotations[AnnotationDoNotDisrupt]
	if !ok {
		return false, nil
	}
	v = strings.TrimSpace(v)
	if v == "true" {
		return true, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return false, &FieldError{Field: "metadata.annotations[" + AnnotationDoNotDisrupt + "]", Value: v,
			Expected: `"true" or a non-negative duration such as "30m"`}
	}
	return now.Before(start.Add(d)), nil
}

// NodeDoNotDisrupt reports whether a node carries karpenter.sh/do-not-disrupt: "true".
func NodeDoNotDisrupt(annotations map[string]string) bool {
	return strings.TrimSpace(annotations[AnnotationDoNotDisrupt]) == "true"
}

// PodKey returns "namespace/name", the stable name results use for a pod.
func PodKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// PodKeys returns [PodKey] of each pod, the keys cut from one string: a caller that keeps the key
// of every pod (a solver's result names thousands) makes one allocation instead of one a pod.
func PodKeys(pods []*corev1.Pod) []string {
	n := 0
	for _, p := range pods {
		n += len(p.Namespace) + 1 + len(p.Name)
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, p := range pods {
		sb.WriteString(p.Namespace)
		sb.WriteByte('/')
		sb.WriteString(p.Name)
	}
	all := sb.String()
	keys := make([]string, len(pods))
	for i, p := range pods {
		l := len(p.Namespace) + 1 + len(p.Name)
		keys[i], all = all[:l], all[l:]
	}
	return keys
}
