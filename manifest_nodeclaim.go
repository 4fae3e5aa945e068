package nodeplan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// KindNodeClaim is Karpenter's record of one launch (karpenter.sh/v1, as [NodePoolAPIVersion]).
const KindNodeClaim = "NodeClaim"

// nodeClaimObject is the wire shape of the parts of a karpenter.sh/v1 NodeClaim a plan reads.
type nodeClaimObject struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       struct {
		Taints        []corev1.Taint `json:"taints"`
		StartupTaints []corev1.Taint `json:"startupTaints"`
		Requirements  []struct {
			Key       string                      `json:"key"`
			Operator  corev1.NodeSelectorOperator `json:"operator"`
			Values    []string                    `json:"values"`
			MinValues *int                        `json:"minValues"`
		} `json:"requirements"`
		Resources struct {
			Requests corev1.ResourceList `json:"requests"`
		} `json:"resources"`
		NodeClassRef struct {
			Group string `json:"group"`
			Kind  string `json:"kind"`
			Name  string `json:"name"`
		} `json:"nodeClassRef"`
		ExpireAfter            string           `json:"expireAfter"`
		TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod"`
	} `json:"spec"`
	Status struct {
		ProviderID  string              `json:"providerID"`
		ImageID     string              `json:"imageID"`
		NodeName    string              `json:"nodeName"`
		Capacity    corev1.ResourceList `json:"capacity"`
		Allocatable corev1.ResourceList `json:"allocatable"`
		Conditions  []metav1.Condition  `json:"conditions"`
	} `json:"status"`
}

// DecodeNodeClaims reads karpenter.sh/v1 NodeClaims from YAML or JSON — single objects,
// "---"-separated documents, or "kind: List" documents as `kubectl get nodeclaims -o yaml`
// prints them — and leaves every other kind alone. Each becomes a [NodeClaim] as Karpenter
// wrote it: the pool from the karpenter.sh/nodepool label, the labels, taints, startup taints,
// requirements (with minValues; an In on node.kubernetes.io/instance-type also gives
// InstanceTypeOptions, in order), resources, node class, expireAfter and
// terminationGracePeriod; and, once launched, the status: provider ID, node name, capacity,
// allocatable, image, the instance type, zone and capacity type from the claim's labels, and
// the launch time from the Launched condition. metadata.deletionTimestamp gives
// [NodeClaim.DeletionTimestamp].
//
// Every problem is reported at once, naming the claim and the field: a wrong apiVersion, an
// invalid name, names that repeat, a requirement Karpenter's CRD would refuse, a duration that
// does not parse.
func DecodeNodeClaims(data []byte) ([]NodeClaim, error) {
	var out []NodeClaim
	var errs []error
	seen := map[string]bool{}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				errs = append(errs, fmt.Errorf("nodeplan: document %d: %w", doc, err))
			}
			break
		}
		var head struct {
			Kind  string            `json:"kind"`
			Items []json.RawMessage `json:"items"`
		}
		if err := sigsyaml.Unmarshal(raw, &head); err != nil {
			errs = append(errs, fmt.Errorf("nodeplan: document %d: %w", doc, err))
			continue
		}
		objects := [][]byte{raw}
		if head.Kind == "List" || head.Kind == "NodeClaimList" {
			objects = nil
			for _, it := range head.Items {
				objects = append(objects, it)
			}
		}
		for _, obj := range objects {
			c, ok, err := decodeNodeClaim(obj)
			if err != nil {
				errs = append(errs, err)
			}
			if !ok {
				continue
			}
			if seen[c.Name] {
				errs = append(errs, &FieldError{Object: objectName(KindNodeClaim, c.Name, ""), Field: "metadata.name", Value: c.Name, Expected: "a name no other NodeClaim has"})
				continue
			}
			seen[c.Name] = true
			out = append(out, c)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// decodeNodeClaim reads one object; ok is false for an object of another kind, or one too
// broken to use (err says why).
func decodeNodeClaim(raw []byte) (NodeClaim, bool, error) {
	var kind struct {
		Kind string `json:"kind"`
	}
	if err := sigsyaml.Unmarshal(raw, &kind); err != nil || kind.Kind != KindNodeClaim {
		return NodeClaim{}, false, nil
	}
	var w nodeClaimObject
	if err := sigsyaml.Unmarshal(raw, &w); err != nil {
		return NodeClaim{}, false, fmt.Errorf("nodeplan: NodeClaim: %w", err)
	}
	obj := objectName(KindNodeClaim, w.Metadata.Name, "")
	var errs []error
	fe := func(field, value, expected string) {
		errs = append(errs, &FieldError{Object: obj, Field: field, Value: value, Expected: expected})
	}
	if w.APIVersion != NodePoolAPIVersion {
		fe("apiVersion", w.APIVersion, NodePoolAPIVersion)
	}
	if msgs := validation.IsDNS1123Subdomain(w.Metadata.Name); len(msgs) > 0 {
		fe("metadata.name", w.Metadata.Name, "a valid object name")
	}
	labels := w.Metadata.Labels
	c := NodeClaim{
		Name:          w.Metadata.Name,
		NodePool:      labels[LabelNodePool],
		NodeClassRef:  NodeClassRef{Group: w.Spec.NodeClassRef.Group, Kind: w.Spec.NodeClassRef.Kind, Name: w.Spec.NodeClassRef.Name},
		Labels:        w.Metadata.Labels,
		Annotations:   w.Metadata.Annotations,
		Taints:        w.Spec.Taints,
		StartupTaints: w.Spec.StartupTaints,
		Resources:     w.Spec.Resources.Requests,
	}
	if w.Metadata.DeletionTimestamp != nil {
		t := w.Metadata.DeletionTimestamp.Time
		c.DeletionTimestamp = &t
	}
	for i, r := range w.Spec.Requirements {
		req, err := NewRequirement(r.Key, r.Operator, r.Values...)
		if err != nil {
			fe(fmt.Sprintf("spec.requirements[%d]", i), r.Key, strings.TrimPrefix(err.Error(), "nodeplan: "))
			continue
		}
		if r.MinValues != nil {
			if *r.MinValues < 1 || *r.MinValues > 50 || (r.Operator == corev1.NodeSelectorOpIn && *r.MinValues > len(r.Values)) {
				fe(fmt.Sprintf("spec.requirements[%d].minValues", i), fmt.Sprint(*r.MinValues), "1-50, and with In at most the number of values")
			}
			req.MinValues = *r.MinValues
		}
		c.Requirements = c.Requirements.Add(req)
		if r.Key == LabelInstanceType && r.Operator == corev1.NodeSelectorOpIn {
			c.InstanceTypeOptions = slices.Clone(r.Values)
		}
	}
	switch e := w.Spec.ExpireAfter; e {
	case "":
	case "Never":
		c.ExpireAfter = Never
	default:
		d, err := time.ParseDuration(e)
		if err != nil || d < 0 {
			fe("spec.expireAfter", e, `a duration such as "720h", or "Never"`)
		}
		c.ExpireAfter = d
	}
	if w.Spec.TerminationGracePeriod != nil {
		c.TerminationGracePeriod = w.Spec.TerminationGracePeriod.Duration
	}
	st := w.Status
	c.Status = NodeClaimStatus{
		ProviderID:  st.ProviderID,
		ImageID:     st.ImageID,
		NodeName:    st.NodeName,
		Capacity:    st.Capacity,
		Allocatable: st.Allocatable,
	}
	if st.ProviderID != "" {
		// Karpenter labels a claim with what it launched as once the cloud answers.
		c.Status.InstanceType = labels[LabelInstanceType]
		c.Status.Zone = labels[LabelZone]
		c.Status.CapacityType = CapacityType(labels[LabelCapacityType])
	}
	for _, cond := range st.Conditions {
		if cond.Type == "Launched" && cond.Status == metav1.ConditionTrue {
			c.Status.LaunchTime = cond.LastTransitionTime.Time
		}
	}
	if len(errs) > 0 {
		return NodeClaim{}, false, errors.Join(errs...)
	}
	return c, true, nil
}
