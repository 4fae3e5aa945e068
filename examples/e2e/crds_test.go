package e2e

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRDs creates Karpenter's CRDs (as the controller ships them) on the API server and
// waits until NodeClaims can be listed; it returns a dynamic client.
func installCRDs(t *testing.T, cfg *rest.Config) dynamic.Interface {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, crd := range controller.CRDs() {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		if _, err := dyn.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("installing CRD %s: %v", crd.Name, err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := dyn.Resource(controller.NodeClaimGVR).List(ctx, metav1.ListOptions{})
		if err == nil {
			return dyn
		}
		if time.Now().After(deadline) {
			t.Fatalf("NodeClaims not served 30s after installing the CRDs: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
