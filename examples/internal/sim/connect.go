package sim

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
// cs must come from [NewCluster].
func Connect(cs *fake.Clientset) *fake.Clientset {
	st, ok := stores.Load(cs.Tracker())
	if !ok {
		panic("sim: Connect: the clientset does not come from NewCluster")
	}
	c := &fake.Clientset{}
	serve(&c.Fake, st.(*store))
	c.PrependReactor("create", "pods", subresources(st.(*store)))
	return c
}
