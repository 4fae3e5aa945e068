package load

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeplan/nodeplan"
)

var (
	kindPod        = kind{name: "Pod", apiVersion: "v1", plural: "Pods"}
	kindNode       = kind{name: "Node", apiVersion: "v1", plural: "Nodes"}
	kindDaemonSet  = kind{name: "DaemonSet", apiVersion: "apps/v1", plural: "DaemonSets"}
	kindPDB        = kind{name: "PodDisruptionBudget", apiVersion: "policy/v1", plural: "PodDisruptionBudgets"}
	kindPVC        = kind{name: "PersistentVolumeClaim", apiVersion: "v1", plural: "PersistentVolumeClaims"}
	kindPV         = kind{name: "PersistentVolume", apiVersion: "v1", plural: "PersistentVolumes"}
	kindSC         = kind{name: "StorageClass", apiVersion: "storage.k8s.io/v1", plural: "StorageClasses"}
	defaultNSValue = "default"
)

// Pods reads Pods. An object without a namespace is in "default", as kubectl would create it.
// Bound and pending pods are both returned; spec.nodeName tells them apart.
func (l *Loader) Pods(file string) ([]*corev1.Pod, error) {
	return loadAll(l, file, kindPod, true, func(p *corev1.Pod) []error {
		return validatePodSpec(&p.Spec, "spec")
	})
}

// Nodes reads Nodes.
func (l *Loader) Nodes(file string) ([]*corev1.Node, error) {
	return loadAll(l, file, kindNode, false, validateNode)
}

// DaemonSets reads apps/v1 DaemonSets, checking their pod templates as Pods are checked.
func (l *Loader) DaemonSets(file string) ([]*appsv1.DaemonSet, error) {
	return loadAll(l, file, kindDaemonSet, true, func(ds *appsv1.DaemonSet) []error {
		return validatePodSpec(&ds.Spec.Template.Spec, "spec.template.spec")
	})
}

// PodDisruptionBudgets reads policy/v1 PodDisruptionBudgets.
func (l *Loader) PodDisruptionBudgets(file string) ([]*policyv1.PodDisruptionBudget, error) {
	return loadAll(l, file, kindPDB, true, func(pdb *policyv1.PodDisruptionBudget) []error {
		var errs []error
		if pdb.Spec.MinAvailable != nil && pdb.Spec.MaxUnavailable != nil {
			errs = append(errs, &fieldError{path: "spec", msg: "minAvailable and maxUnavailable are both set; give one"})
		}
		for _, err := range []error{
			intOrPercent("spec.minAvailable", pdb.Spec.MinAvailable),
			intOrPercent("spec.maxUnavailable", pdb.Spec.MaxUnavailable),
		} {
			if err != nil {
				errs = append(errs, err)
			}
		}
		if err := labelSelector(pdb.Spec.Selector); err != nil {
			errs = append(errs, &fieldError{path: "spec.selector", msg: err.Error()})
		}
		return errs
	})
}

// PersistentVolumeClaims reads PersistentVolumeClaims.
func (l *Loader) PersistentVolumeClaims(file string) ([]*corev1.PersistentVolumeClaim, error) {
	return loadAll(l, file, kindPVC, true, func(*corev1.PersistentVolumeClaim) []error { return nil })
}

// PersistentVolumes reads PersistentVolumes.
func (l *Loader) PersistentVolumes(file string) ([]*corev1.PersistentVolume, error) {
	return loadAll(l, file, kindPV, false, func(*corev1.PersistentVolume) []error { return nil })
}

// StorageClasses reads storage.k8s.io/v1 StorageClasses.
func (l *Loader) StorageClasses(file string) ([]*storagev1.StorageClass, error) {
	return loadAll(l, file, kindSC, false, func(*storagev1.StorageClass) []error { return nil })
}

// object is a pointer to a Kubernetes object type.
type object[T any] interface {
	*T
	metav1.Object
}

// loadAll reads every object of kind k from file, decodes it, defaults its namespace, checks it
// and rejects duplicates. It reports every problem in the file.
func loadAll[T any, P object[T]](l *Loader, file string, k kind, namespaced bool, check func(P) []error) ([]P, error) {
	raws, err := l.objects(file, k)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	seen := map[string]string{} // key → where
	var out []P
	for _, o := range raws {
		if o.err != nil {
			errs = append(errs, o.err)
			continue
		}
		if namespaced && o.namespace == "" {
			o.namespace = defaultNSValue
		}
		v := P(new(T))
		if err := l.decode(file, o, k, v); err != nil {
			errs = append(errs, err)
			continue
		}
		var objErrs []error
		if v.GetName() == "" {
			objErrs = append(objErrs, errNoName)
		}
		if namespaced && v.GetNamespace() == "" {
			v.SetNamespace(defaultNSValue)
		}
		if !namespaced {
			v.SetNamespace("")
		}
		objErrs = append(objErrs, check(v)...)
		for _, e := range objErrs {
			errs = append(errs, &Error{File: file, Object: o.describe(k), Err: e})
		}
		if len(objErrs) > 0 {
			continue
		}
		key := v.GetName()
		if namespaced {
			key = v.GetNamespace() + "/" + key
		}
		if prev, ok := seen[key]; ok {
			errs = append(errs, &Error{File: file, Object: o.describe(k), Err: fmt.Errorf("appears twice (first at %s)", prev)})
			continue
		}
		seen[key] = o.where
		out = append(out, v)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// Catalog reads an instance catalog (see [nodeplan.DecodeCatalog]).
func (l *Loader) Catalog(file string) ([]nodeplan.InstanceType, error) {
	data, err := l.readFile(file)
	if err != nil {
		return nil, err
	}
	its, err := nodeplan.DecodeCatalog(data)
	if err != nil {
		return nil, eachInFile(file, err)
	}
	if len(its) == 0 {
		return nil, &Error{File: file, Err: errors.New("the catalog has no instance types")}
	}
	return its, nil
}

// eachInFile makes every error joined in err an *Error of file, without the package prefix.
func eachInFile(file string, err error) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var errs []error
		for _, e := range j.Unwrap() {
			errs = append(errs, eachInFile(file, e))
		}
		return errors.Join(errs...)
	}
	return &Error{File: file, Err: trimPrefix(err)}
}
