package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
)

// InstallCRDs creates (or replaces) the CustomResourceDefinitions in manifests — YAML or JSON,
// several documents a manifest allowed — and waits until the API server serves each of them
// (condition Established). Documents of other kinds are an error naming the manifest and the
// document, as is a CRD the API server rejects or names not accepted within a minute.
func InstallCRDs(ctx context.Context, cfg *rest.Config, manifests ...[]byte) error {
	client, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	var names []string
	for i, m := range manifests {
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(m), 4096)
		for doc := 0; ; doc++ {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := dec.Decode(&crd); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return fmt.Errorf("controlplane: manifest %d, document %d: %w", i, doc, err)
			}
			if crd.Kind == "" && crd.Name == "" {
				continue // an empty document
			}
			if crd.Kind != "CustomResourceDefinition" {
				return fmt.Errorf("controlplane: manifest %d, document %d: kind %q, want CustomResourceDefinition", i, doc, crd.Kind)
			}
			if err := createOrReplace(ctx, crds, &crd); err != nil {
				return fmt.Errorf("controlplane: manifest %d, document %d (%s): %w", i, doc, crd.Name, err)
			}
			names = append(names, crd.Name)
		}
	}
	for _, name := range names {
		var last *apiextensionsv1.CustomResourceDefinition
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			last = got
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse {
					return false, fmt.Errorf("names not accepted: %s", c.Message)
				}
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			conds := ""
			if last != nil {
				conds = fmt.Sprintf(" (conditions: %v)", last.Status.Conditions)
			}
			return fmt.Errorf("controlplane: CRD %s not established: %w%s", name, err, conds)
		}
	}
	return nil
}

type crdClient interface {
	Create(context.Context, *apiextensionsv1.CustomResourceDefinition, metav1.CreateOptions) (*apiextensionsv1.CustomResourceDefinition, error)
	Get(context.Context, string, metav1.GetOptions) (*apiextensionsv1.CustomResourceDefinition, error)
	Update(context.Context, *apiextensionsv1.CustomResourceDefinition, metav1.UpdateOptions) (*apiextensionsv1.CustomResourceDefinition, error)
}

func createOrReplace(ctx context.Context, crds crdClient, crd *apiextensionsv1.CustomResourceDefinition) error {
	_, err := crds.Create(ctx, crd, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	old, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	crd.ResourceVersion = old.ResourceVersion
	_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
	return err
}

// WaitFor polls cond every 100ms until it reports true or timeout passes. An error from cond
// counts as not yet (API calls fail transiently); the timeout's error names what was awaited
// and cond's last error, if any.
func WaitFor(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		last = err
		return ok && err == nil, nil
	})
	if err == nil {
		return nil
	}
	if last != nil {
		return fmt.Errorf("controlplane: %s: not within %v: %w", what, timeout, last)
	}
	return fmt.Errorf("controlplane: %s: not within %v", what, timeout)
}
