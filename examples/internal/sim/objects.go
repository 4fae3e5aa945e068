package sim

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	sigsyaml "sigs.k8s.io/yaml"
)

// Apply creates the objects of a YAML stream ("---"-separated documents) through a dynamic
// client, as `kubectl apply -f` would create them: each document's apiVersion and kind name its
// resource (the plural of the lowercased kind). Empty documents are skipped.
func Apply(ctx context.Context, d dynamic.Interface, data []byte) error {
	for i, doc := range bytes.Split(data, []byte("\n---")) {
		var m map[string]any
		if err := sigsyaml.Unmarshal(doc, &m); err != nil {
			return fmt.Errorf("sim: document %d: %w", i+1, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
		if err != nil {
			return fmt.Errorf("sim: document %d: %w", i+1, err)
		}
		plural := strings.ToLower(u.GetKind()) + "s"
		if strings.HasSuffix(plural, "ss") {
			plural = plural[:len(plural)-1] + "es" // ec2nodeclasses
		}
		gvr := gv.WithResource(plural)
		if _, err := d.Resource(gvr).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("sim: creating %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}
