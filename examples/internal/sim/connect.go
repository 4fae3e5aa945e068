package sim

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// subresources answers what the fake clientset lacks: pods/eviction, which refuses (429) an
// eviction a PodDisruptionBudget does not allow, and pods/binding. Reactors run under the
// fake's lock, so they use the tracker directly.
func subresources(tracker k8stesting.ObjectTracker) k8stesting.ReactionFunc {
	return func(action k8stesting.Action) (bool, runtime.Object, error) {
		create, ok := action.(k8stesting.CreateAction)
		if !ok {
			return false, nil, nil
		}
		switch action.GetSubresource() {
		case "eviction":
			ev, ok := create.GetObject().(*policyv1.Eviction)
			if !ok {
				return false, nil, nil
			}
			return true, nil, evict(tracker, action.GetNamespace(), ev.Name)
		case "binding":
			b, ok := create.GetObject().(*corev1.Binding)
			if !ok {
				return false, nil, nil
			}
			return true, nil, bind(tracker, action.GetNamespace(), b.Name, b.Target.Name)
		}
		return false, nil, nil
	}
}

// Connect returns a second client of the cluster cs simulates: a clientset over the same store,
// with the same Eviction API and binding and working watches, whose reactors are its own. Give
// it to the component under test and prepend reactors to it to inject API errors or record
// its writes, while the simulated kubelets, scheduler and Deployment controller keep using cs.
func Connect(cs *fake.Clientset) *fake.Clientset {
	tracker := cs.Tracker()
	c := &fake.Clientset{}
	c.AddReactor("*", "*", k8stesting.ObjectReaction(tracker))
	c.AddWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if w, ok := action.(k8stesting.WatchActionImpl); ok {
			opts = w.ListOptions
		}
		w, err := tracker.Watch(action.GetResource(), action.GetNamespace(), opts)
		if err != nil {
			return false, nil, err
		}
		return true, w, nil
	})
	c.PrependReactor("create", "pods", subresources(tracker))
	return c
}
