package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"sigs.k8s.io/yaml"

	"github.com/nodeplan/nodeplan"
)

// The -o json and -o yaml documents say what they are, so a program reading them can refuse a
// shape it does not know. Within one apiVersion fields are only ever added, never renamed,
// removed or given another meaning; a change that would break a reader gets a new apiVersion.
const (
	planAPIVersion     = "plan.nodeplan.io/v1alpha1"
	kindProvisionPlan  = "ProvisionPlan"
	kindDisruptionPlan = "DisruptionPlan"
)

// typeMeta is the apiVersion and kind at the top of every document plan prints.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

func planType(kind string) typeMeta { return typeMeta{APIVersion: planAPIVersion, Kind: kind} }

// requirementReport is one of a NodeClaim's requirements in Karpenter's NodeClaim form
// (spec.requirements): a node-selector expression with minValues.
type requirementReport struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values"`
	// MinValues, when positive, is how many distinct values of key the instance type options
	// must span.
	MinValues int `json:"minValues,omitempty"`
}

// requirementsReport lists rs as node-selector expressions, by key; a requirement that needs
// several expressions (Gt and Lt) carries its minValues on each.
func requirementsReport(rs nodeplan.Requirements) []requirementReport {
	out := []requirementReport{}
	for _, r := range rs.All() {
		for _, e := range r.NodeSelectorRequirements() {
			out = append(out, requirementReport{
				Key:       e.Key,
				Operator:  string(e.Operator),
				Values:    nonNil(slices.Clone(e.Values)),
				MinValues: r.MinValues,
			})
		}
	}
	return out
}

// nonNilMap returns m, or an empty map for nil, so a document never holds null for a map.
func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// writeDocument prints v, a report, as JSON or YAML: the same document either way (the YAML is
// the JSON converted, so its keys are sorted).
func writeDocument(w io.Writer, format outputFormat, v any) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		data, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encoding the plan as YAML: %w", err)
		}
		_, err = w.Write(data)
		return err
	}
	return fmt.Errorf("output format %q is not a document format", format)
}
