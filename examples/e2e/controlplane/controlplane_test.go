package controlplane_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/nodeplan/nodeplan/examples/e2e/controlplane"
)

func TestMain(m *testing.M) { controlplane.Main(m) }

const widgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.nodeplan.dev
spec:
  group: example.nodeplan.dev
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 1}
---
`

func TestInstallCRDs(t *testing.T) {
	cfg := controlplane.Shared(t)
	ctx := context.Background()
	// Twice: the second install replaces the first.
	for range 2 {
		if err := controlplane.InstallCRDs(ctx, cfg, []byte(widgetCRD)); err != nil {
			t.Fatal(err)
		}
	}
	client := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: "example.nodeplan.dev", Version: "v1", Resource: "widgets"})
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.nodeplan.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w"}, "spec": map[string]any{"size": int64(3)},
	}}
	if _, err := client.Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a Widget: %v", err)
	}
	w.SetName("bad")
	w.Object["spec"] = map[string]any{"size": int64(0)}
	if _, err := client.Create(ctx, w, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "spec.size") {
		t.Errorf("creating a Widget with size 0: err = %v, want the schema's rejection naming spec.size", err)
	}

	err := controlplane.InstallCRDs(ctx, cfg, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
	if err == nil || !strings.Contains(err.Error(), `manifest 0, document 0: kind "ConfigMap"`) {
		t.Errorf("a ConfigMap as a CRD: err = %v, want one naming the document and its kind", err)
	}
}

func TestWaitFor(t *testing.T) {
	ctx := context.Background()
	n := 0
	if err := controlplane.WaitFor(ctx, 10*time.Second, "three polls", func(context.Context) (bool, error) {
		n++
		return n == 3, nil
	}); err != nil || n != 3 {
		t.Errorf("WaitFor = %v after %d polls, want nil after 3", err, n)
	}
	err := controlplane.WaitFor(ctx, 300*time.Millisecond, "never", func(context.Context) (bool, error) {
		return false, context.DeadlineExceeded
	})
	if err == nil || !strings.Contains(err.Error(), "never: not within 300ms") || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("WaitFor never = %v, want an error naming what and the last error", err)
	}
}
