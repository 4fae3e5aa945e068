package poolhash

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/mitchellh/hashstructure/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// AnnotationHash holds the template hash, a decimal uint64, on a NodePool and its
	// NodeClaims.
	AnnotationHash = "karpenter.sh/nodepool-hash"
	// AnnotationVersion holds the version of the hashing rules, [Version].
	AnnotationVersion = "karpenter.sh/nodepool-hash-version"
	// Version is Karpenter v1.14's NodePoolHashVersion. Hashes of different versions are not
	// compared.
	Version = "v3"
)

// The types below are named as Karpenter's (hashstructure hashes type and field names) and
// hold only what Karpenter hashes; their JSON tags read the NodePool object.

// NodeClaimTemplate is spec.template.
type NodeClaimTemplate struct {
	ObjectMeta ObjectMeta            `json:"metadata,omitempty"`
	Spec       NodeClaimTemplateSpec `json:"spec"`
}

// ObjectMeta is spec.template.metadata.
type ObjectMeta struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NodeClaimTemplateSpec is spec.template.spec without requirements.
type NodeClaimTemplateSpec struct {
	Taints                 []corev1.Taint      `json:"taints,omitempty"`
	StartupTaints          []corev1.Taint      `json:"startupTaints,omitempty"`
	NodeClassRef           *NodeClassReference `json:"nodeClassRef"`
	TerminationGracePeriod *metav1.Duration    `json:"terminationGracePeriod,omitempty"`
	ExpireAfter            NillableDuration    `json:"expireAfter,omitempty"`
}

// NodeClassReference is spec.template.spec.nodeClassRef.
type NodeClassReference struct {
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	Group string `json:"group"`
}

// NillableDuration is a duration or "Never" (nil).
type NillableDuration struct {
	*time.Duration
}

// UnmarshalJSON reads "Never" as nil and anything else as a Go duration.
func (d *NillableDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("expireAfter: want a duration or \"Never\": %w", err)
	}
	if s == "Never" {
		d.Duration = nil
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("expireAfter: %w", err)
	}
	d.Duration = &v
	return nil
}

// Template returns the hash of a NodePool object's spec.template (obj is the whole object as
// unstructured data, e.g. unstructured.Unstructured.Object), as Karpenter v1.14 computes it.
func Template(obj map[string]any) (string, error) {
	t, err := Decode(obj)
	if err != nil {
		return "", err
	}
	return Hash(t)
}

// Decode reads the hashed part of a NodePool object's spec.template.
func Decode(obj map[string]any) (NodeClaimTemplate, error) {
	var t NodeClaimTemplate
	spec, _ := obj["spec"].(map[string]any)
	raw, ok := spec["template"]
	if !ok {
		return t, fmt.Errorf("poolhash: NodePool has no spec.template")
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return t, fmt.Errorf("poolhash: spec.template: %w", err)
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return t, fmt.Errorf("poolhash: spec.template: %w", err)
	}
	return t, nil
}

// Hash hashes a decoded template.
func Hash(t NodeClaimTemplate) (string, error) {
	h, err := hashstructure.Hash(t, hashstructure.FormatV2, &hashstructure.HashOptions{
		SlicesAsSets: true, IgnoreZeroValue: true, ZeroNil: true,
	})
	if err != nil {
		return "", fmt.Errorf("poolhash: %w", err)
	}
	return strconv.FormatUint(h, 10), nil
}
