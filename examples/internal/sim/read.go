package sim

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

var nodesGVR = corev1.SchemeGroupVersion.WithResource("nodes")

// storeOf returns the store behind a NewCluster clientset, or nil for any other client.
func storeOf(c kubernetes.Interface) *store {
	cs, ok := c.(*fake.Clientset)
	if !ok || cs.Tracker() == nil {
		return nil
	}
	st, ok := stores.Load(cs.Tracker())
	if !ok {
		return nil
	}
	return st.(*store)
}

// readPods lists the pods of ns ("" for all) that sel matches (nil matches all). Against a
// NewCluster clientset it reads the store without copying — the simulated components read
// every pod at every step, and copying them was most of a large run's CPU — so the caller
// must not modify them; against any other client it lists.
func readPods(ctx context.Context, c kubernetes.Interface, ns string, sel labels.Selector) ([]*corev1.Pod, error) {
	if sel == nil {
		sel = labels.Everything()
	}
	if st := storeOf(c); st != nil {
		var out []*corev1.Pod
		for _, o := range st.view(podsGVR, ns) {
			if p := o.(*corev1.Pod); sel.Matches(labels.Set(p.Labels)) {
				out = append(out, p)
			}
		}
		return out, nil
	}
	list, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// readNodes lists the Nodes, as readPods lists pods.
func readNodes(ctx context.Context, c kubernetes.Interface) ([]*corev1.Node, error) {
	if st := storeOf(c); st != nil {
		objs := st.view(nodesGVR, "")
		out := make([]*corev1.Node, len(objs))
		for i, o := range objs {
			out[i] = o.(*corev1.Node)
		}
		return out, nil
	}
	list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// Pods returns the pods of ns ("" for all) as stored: the caller must not modify them.
func (w *World) Pods(ns string) []*corev1.Pod {
	pods, _ := readPods(context.Background(), w.Client, ns, nil)
	return pods
}

// Nodes returns the Nodes as stored: the caller must not modify them.
func (w *World) Nodes() []*corev1.Node {
	nodes, _ := readNodes(context.Background(), w.Client)
	return nodes
}
