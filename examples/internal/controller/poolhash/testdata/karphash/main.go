// Command karphash prints Karpenter v1.14.1's own NodePool.Hash() for each NodePool document on
// stdin ("---"-separated YAML), one "name hash" line each. It is a separate module (Karpenter's API
// package needs a controller-runtime that does not build against the examples module's
// client-go). Regenerate the goldens from this directory with:
//
//	GOWORK=off go mod tidy && GOWORK=off go run . < ../nodepools.yaml > ../karphash.txt
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/yaml"
)

func main() {
	in, _ := io.ReadAll(os.Stdin)
	for _, doc := range bytes.Split(in, []byte("\n---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var np karpv1.NodePool
		if err := yaml.UnmarshalStrict(doc, &np); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%s %s\n", np.Name, np.Hash())
	}
}
