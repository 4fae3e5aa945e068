package sim

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeplan/nodeplan"
)

// Deployments plays the Deployment and ReplicaSet controllers for the Deployments created
// through it: each Step creates or deletes pods (owned by a ReplicaSet, as real ones are) until
// each Deployment has its replicas. Scaling down deletes pending pods first, then the newest.
type Deployments struct {
	Client kubernetes.Interface

	mu   sync.Mutex
	deps map[string]*deployment // by namespace/name
	rnd  *rand.Rand
}

type deployment struct {
	obj      *appsv1.Deployment
	rsName   string
	rsUID    types.UID
	replicas int
}

// Create creates the namespace (if missing) and the Deployment with its replica count.
func (d *Deployments) Create(ctx context.Context, dep *appsv1.Deployment) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: dep.Namespace}}
	if _, err := d.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("sim: create namespace %s: %w", dep.Namespace, err)
	}
	obj, err := d.Client.AppsV1().Deployments(dep.Namespace).Create(ctx, dep, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("sim: create deployment %s/%s: %w", dep.Namespace, dep.Name, err)
	}
	h := fnv.New32a()
	fmt.Fprint(h, dep.Namespace, dep.Name)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.deps == nil {
		d.deps = map[string]*deployment{}
		d.rnd = rand.New(rand.NewPCG(1, 2))
	}
	replicas := 1
	if dep.Spec.Replicas != nil {
		replicas = int(*dep.Spec.Replicas)
	}
	d.deps[dep.Namespace+"/"+dep.Name] = &deployment{obj: obj, replicas: replicas,
		rsName: fmt.Sprintf("%s-%08x", dep.Name, h.Sum32())[:len(dep.Name)+9], rsUID: types.UID(fmt.Sprintf("rs-%08x", h.Sum32()))}
	return nil
}

// Scale sets a Deployment's replicas; the pods follow on the next Step.
func (d *Deployments) Scale(ctx context.Context, namespace, name string, replicas int) error {
	d.mu.Lock()
	dep, ok := d.deps[namespace+"/"+name]
	if ok {
		dep.replicas = replicas
	}
	d.mu.Unlock()
	if !ok {
		return fmt.Errorf("sim: no deployment %s/%s", namespace, name)
	}
	obj, err := d.Client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	r := int32(replicas)
	obj.Spec.Replicas = &r
	_, err = d.Client.AppsV1().Deployments(namespace).Update(ctx, obj, metav1.UpdateOptions{})
	return err
}

// Step reconciles every Deployment's pods at now.
func (d *Deployments) Step(ctx context.Context, now time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, key := range sortedKeys(d.deps) {
		dep := d.deps[key]
		sel := labels.SelectorFromSet(dep.obj.Spec.Selector.MatchLabels)
		list, err := readPods(ctx, d.Client, dep.obj.Namespace, sel)
		if err != nil {
			return fmt.Errorf("sim: deployment %s: %w", key, err)
		}
		var live []*corev1.Pod
		for _, p := range list {
			if p.DeletionTimestamp == nil && !nodeplan.PodTerminal(p) {
				live = append(live, p)
			}
		}
		for n := len(live); n < dep.replicas; n++ {
			if err := d.createPod(ctx, dep, now); err != nil {
				return err
			}
		}
		if len(live) > dep.replicas {
			slices.SortFunc(live, func(a, b *corev1.Pod) int {
				if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
					if a.Spec.NodeName == "" {
						return -1
					}
					return 1
				}
				if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
					return c
				}
				return strings.Compare(a.Name, b.Name)
			})
			for _, p := range live[:len(live)-dep.replicas] {
				if err := d.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("sim: deployment %s: delete pod: %w", key, err)
				}
			}
		}
	}
	return nil
}

const podSuffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func (d *Deployments) createPod(ctx context.Context, dep *deployment, now time.Time) error {
	var b strings.Builder
	b.WriteString(dep.rsName + "-")
	for range 5 {
		b.WriteByte(podSuffixAlphabet[d.rnd.IntN(len(podSuffixAlphabet))])
	}
	tmpl := dep.obj.Spec.Template.DeepCopy()
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: b.String(), Namespace: dep.obj.Namespace, Labels: tmpl.Labels, Annotations: tmpl.Annotations,
			CreationTimestamp: metav1.NewTime(now),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: dep.rsName,
				UID: dep.rsUID, Controller: &yes}},
		},
		Spec:   tmpl.Spec,
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if _, err := d.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("sim: create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
