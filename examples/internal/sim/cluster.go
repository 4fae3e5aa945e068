package sim

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nodeplan/nodeplan/disruption"
)

var (
	podsGVR = corev1.SchemeGroupVersion.WithResource("pods")
	pdbsGVR = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")
)

// NewCluster returns an in-process cluster: client-go's fake clientset, whose informers work
// as against a real API server, plus what the fake lacks and a controller needs — the Eviction
// API, which refuses (429) an eviction a PodDisruptionBudget does not allow, binding, and
// watches that never block or panic however many events a burst brings (store.go).
//
// It is the fake without server-side apply's field manager (which nothing here uses, and whose
// bookkeeping on every write was most of a large simulation's CPU).
func NewCluster(objects ...runtime.Object) *fake.Clientset {
	//nolint:staticcheck // NewSimpleClientset: the plain tracker, no field manager (see above)
	cs := fake.NewSimpleClientset()
	st := newStore(cs.Tracker(), scheme.Scheme)
	stores.Store(cs.Tracker(), st)
	serve(&cs.Fake, st)
	cs.PrependReactor("create", "pods", subresources(st))
	for _, o := range objects {
		if err := st.Add(o); err != nil {
			panic(fmt.Sprintf("sim: NewCluster: %v", err)) // as fake.NewClientset does
		}
	}
	return cs
}

// serve makes f answer every verb and watch from st, replacing the reactors f had.
func serve(f *k8stesting.Fake, st *store) {
	f.ReactionChain = nil
	f.WatchReactionChain = nil
	f.AddReactor("*", "*", k8stesting.ObjectReaction(st))
	f.AddWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if w, ok := action.(k8stesting.WatchActionImpl); ok {
			opts = w.ListOptions
		}
		w, err := st.Watch(action.GetResource(), action.GetNamespace(), opts)
		if err != nil {
			return true, nil, err // as an API server answers: 410 Gone, 400
		}
		return true, w, nil
	})
}

func evict(tracker k8stesting.ObjectTracker, ns, name string) error {
	obj, err := tracker.Get(podsGVR, ns, name)
	if err != nil {
		return err
	}
	pod := obj.(*corev1.Pod)
	list, err := tracker.List(podsGVR, corev1.SchemeGroupVersion.WithKind("Pod"), ns)
	if err != nil {
		return err
	}
	var pods []*corev1.Pod
	for i := range list.(*corev1.PodList).Items {
		pods = append(pods, &list.(*corev1.PodList).Items[i])
	}
	pdbList, err := tracker.List(pdbsGVR, policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), ns)
	if err != nil {
		return err
	}
	for i := range pdbList.(*policyv1.PodDisruptionBudgetList).Items {
		pdb := &pdbList.(*policyv1.PodDisruptionBudgetList).Items[i]
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if allowed, _, _ := disruption.PDBAllowed(pdb, pods); allowed <= 0 {
			return apierrors.NewTooManyRequestsError("Cannot evict pod as it would violate the pod's disruption budget.")
		}
	}
	return tracker.Delete(podsGVR, ns, name)
}

func bind(tracker k8stesting.ObjectTracker, ns, name, node string) error {
	obj, err := tracker.Get(podsGVR, ns, name)
	if err != nil {
		return err
	}
	pod := obj.(*corev1.Pod).DeepCopy()
	if pod.Spec.NodeName != "" {
		return apierrors.NewConflict(podsGVR.GroupResource(), name, nil)
	}
	pod.Spec.NodeName = node
	return tracker.Update(podsGVR, pod, ns)
}
