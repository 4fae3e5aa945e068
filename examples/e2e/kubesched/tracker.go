package kubesched

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
)

// broadcastTracker is client-go's object tracker with watchers that never drop or block: each
// change is read back from the tracker and queued, unbounded, for every watcher of its
// resource and namespace.
type broadcastTracker struct {
	clienttesting.ObjectTracker

	mu       sync.Mutex
	watchers map[schema.GroupVersionResource][]*queueWatch
}

func newBroadcastTracker() *broadcastTracker {
	return &broadcastTracker{
		ObjectTracker: clienttesting.NewObjectTracker(scheme.Scheme, scheme.Codecs.UniversalDecoder()),
		watchers:      map[schema.GroupVersionResource][]*queueWatch{},
	}
}

func (b *broadcastTracker) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	if err := b.ObjectTracker.Create(gvr, obj, ns, opts...); err != nil {
		return err
	}
	b.emitCurrent(gvr, ns, obj, watch.Added)
	return nil
}

func (b *broadcastTracker) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	if err := b.ObjectTracker.Update(gvr, obj, ns, opts...); err != nil {
		return err
	}
	b.emitCurrent(gvr, ns, obj, watch.Modified)
	return nil
}

func (b *broadcastTracker) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	if err := b.ObjectTracker.Patch(gvr, obj, ns, opts...); err != nil {
		return err
	}
	b.emitCurrent(gvr, ns, obj, watch.Modified)
	return nil
}

func (b *broadcastTracker) Delete(gvr schema.GroupVersionResource, ns, name string, opts ...metav1.DeleteOptions) error {
	old, err := b.ObjectTracker.Get(gvr, ns, name)
	if err != nil {
		return err
	}
	if err := b.ObjectTracker.Delete(gvr, ns, name, opts...); err != nil {
		return err
	}
	b.emit(gvr, ns, watch.Event{Type: watch.Deleted, Object: old})
	return nil
}

// emitCurrent sends obj as the tracker now stores it.
func (b *broadcastTracker) emitCurrent(gvr schema.GroupVersionResource, ns string, obj runtime.Object, t watch.EventType) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	cur, err := b.ObjectTracker.Get(gvr, ns, m.GetName())
	if err != nil {
		return
	}
	b.emit(gvr, ns, watch.Event{Type: t, Object: cur})
}

func (b *broadcastTracker) emit(gvr schema.GroupVersionResource, ns string, e watch.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range b.watchers[gvr] {
		if w.ns == "" || w.ns == ns {
			w.push(watch.Event{Type: e.Type, Object: e.Object.DeepCopyObject()})
		}
	}
}

// watched reports whether gvr has a watcher.
func (b *broadcastTracker) watched(gvr schema.GroupVersionResource) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.watchers[gvr]) > 0
}

// watch starts a watcher of gvr in ns ("" for all namespaces).
func (b *broadcastTracker) watch(gvr schema.GroupVersionResource, ns string) watch.Interface {
	w := &queueWatch{ns: ns, wake: make(chan struct{}, 1), out: make(chan watch.Event), stop: make(chan struct{})}
	w.remove = func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		ws := b.watchers[gvr]
		for i, x := range ws {
			if x == w {
				b.watchers[gvr] = append(ws[:i:i], ws[i+1:]...)
				break
			}
		}
	}
	b.mu.Lock()
	b.watchers[gvr] = append(b.watchers[gvr], w)
	b.mu.Unlock()
	go w.run()
	return w
}

// queueWatch is a watch.Interface fed through an unbounded queue.
type queueWatch struct {
	ns     string
	mu     sync.Mutex
	queue  []watch.Event
	wake   chan struct{}
	out    chan watch.Event
	stop   chan struct{}
	once   sync.Once
	remove func()
}

func (w *queueWatch) push(e watch.Event) {
	w.mu.Lock()
	w.queue = append(w.queue, e)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *queueWatch) run() {
	defer close(w.out)
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			w.mu.Unlock()
			select {
			case <-w.wake:
				continue
			case <-w.stop:
				return
			}
		}
		e := w.queue[0]
		w.queue = w.queue[1:]
		w.mu.Unlock()
		select {
		case w.out <- e:
		case <-w.stop:
			return
		}
	}
}

func (w *queueWatch) Stop() {
	w.once.Do(func() {
		w.remove()
		close(w.stop)
	})
}

func (w *queueWatch) ResultChan() <-chan watch.Event { return w.out }
