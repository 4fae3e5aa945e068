package sim

import (
	_ "embed"
	"fmt"

	"github.com/nodeplan/nodeplan"
)

// catalogJSON is a copy of the project's shared us-east-1 catalog (164 instance types, real
// on-demand prices, modelled spot prices), embedded so a simulation reads nothing from disk.
// Refresh it with:
//
//go:generate cp ../../../../shared/data/catalog.json catalog.json
//go:embed catalog.json
var catalogJSON []byte

// nodePoolsYAML is the lab's NodePool and EC2NodeClass, in Karpenter v1 YAML.
//
//go:embed nodepools.yaml
var nodePoolsYAML []byte

// scalePoolsYAML is the NodePool of a scale run (no limits) and the lab's EC2NodeClass.
//
//go:embed scalepools.yaml
var scalePoolsYAML []byte

// Catalog returns the embedded instance catalog.
func Catalog() []nodeplan.InstanceType {
	its, err := nodeplan.DecodeCatalog(catalogJSON)
	if err != nil {
		panic(fmt.Sprintf("sim: embedded catalog: %v", err)) // a build defect, caught by the tests
	}
	return its
}

// NodePoolsYAML returns the embedded Karpenter v1 manifests (a NodePool and an EC2NodeClass).
func NodePoolsYAML() []byte { return nodePoolsYAML }

// ScaleNodePoolsYAML returns the manifests of a scale run: the lab's pool without its limit.
func ScaleNodePoolsYAML() []byte { return scalePoolsYAML }
