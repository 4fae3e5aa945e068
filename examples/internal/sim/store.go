package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
)

// store is client-go's object tracker with watches as an API server keeps them: they never
// block a writer, drop an event or panic. client-go's own tracker gives each watch a 100-event
// channel and panics ("channel full") when a burst outruns its reader — a scale-up of a
// thousand pods is such a burst.
//
// Every write takes a resourceVersion from one counter (as etcd's revision), stamped on the
// object; a List says the counter's value, and a Watch from that resourceVersion first replays
// the writes made since, from a bounded history, so nothing falls in the gap between an
// informer's List and its Watch. A Watch from a resourceVersion older than the history answers
// 410 Gone, and the reflector lists again, as against a real API server. A Watch with no
// resourceVersion (or "0") starts with the current objects, as client-go's tracker does.
//
// Label and field selectors on a Watch are ignored, as client-go's tracker ignores them.
type store struct {
	k8stesting.ObjectTracker
	// typer names the kind of a typed object (which carries no TypeMeta), for listing a
	// resource's objects at the start of a Watch; unstructured objects name their own.
	typer runtime.ObjectTyper

	mu       sync.RWMutex // held for writing across a write and its events
	rv       int64
	kinds    map[schema.GroupVersionResource]schema.GroupVersionKind
	watchers map[schema.GroupVersionResource][]*queueWatch
	// objects are the stored objects as last written (the copies the watches were sent),
	// never modified once here: [store.view] hands them out without copying.
	objects map[schema.GroupVersionResource]map[types.NamespacedName]runtime.Object
	history []storedEvent
	// historyLen bounds history; zero means defaultHistoryLen.
	historyLen int // the last historyLen to 2×historyLen writes, oldest first
}

// defaultHistoryLen bounds the replay history: an informer's List→Watch gap is a few writes;
// an informer further behind lists again.
const defaultHistoryLen = 1 << 16

type storedEvent struct {
	rv  int64
	gvr schema.GroupVersionResource
	ns  string
	ev  watch.Event
}

var _ k8stesting.ObjectTracker = (*store)(nil)

func newStore(inner k8stesting.ObjectTracker, typer runtime.ObjectTyper) *store {
	return &store{ObjectTracker: inner, typer: typer, rv: 1,
		kinds:    map[schema.GroupVersionResource]schema.GroupVersionKind{},
		watchers: map[schema.GroupVersionResource][]*queueWatch{},
		objects:  map[schema.GroupVersionResource]map[types.NamespacedName]runtime.Object{}}
}

// stores finds the store behind a clientset's tracker, for Connect. Only NewCluster adds to it.
var stores sync.Map // k8stesting.ObjectTracker (inner) → *store

// stamp copies obj and gives the copy the next resourceVersion, and ns when it has none.
// Callers hold mu.
func (s *store) stamp(obj runtime.Object, ns string) (runtime.Object, error) {
	obj = obj.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	m.SetResourceVersion(strconv.FormatInt(s.rv+1, 10))
	if m.GetNamespace() == "" {
		m.SetNamespace(ns)
	}
	return obj, nil
}

// view returns the objects of gvr in ns ("" for all), by namespace and name, as stored: the
// caller must not modify them. It is a List without the copies, for the simulated components,
// which read every pod and node at every step.
func (s *store) view(gvr schema.GroupVersionResource, ns string) []runtime.Object {
	s.mu.RLock()
	defer s.mu.RUnlock()
	objs := s.objects[gvr]
	keys := make([]types.NamespacedName, 0, len(objs))
	for k := range objs {
		if ns == "" || k.Namespace == ns {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	out := make([]runtime.Object, len(keys))
	for i, k := range keys {
		out[i] = objs[k]
	}
	return out
}

func (s *store) learnKind(gvr schema.GroupVersionResource, obj runtime.Object) {
	if _, ok := s.kinds[gvr]; ok {
		return
	}
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != "" {
		s.kinds[gvr] = gvk
		return
	}
	if s.typer != nil {
		if gvks, _, err := s.typer.ObjectKinds(obj); err == nil && len(gvks) > 0 {
			s.kinds[gvr] = gvks[0]
		}
	}
}

// write runs op on a stamped copy of obj and, when it succeeds, sends the copy as event t.
func (s *store) write(gvr schema.GroupVersionResource, ns string, obj runtime.Object, t watch.EventType,
	op func(runtime.Object) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	stamped, err := s.stamp(obj, ns)
	if err != nil {
		return err
	}
	if err := op(stamped); err != nil {
		return err
	}
	s.rv++
	m, _ := meta.Accessor(stamped) // stamp checked it
	ns = m.GetNamespace()
	if s.objects[gvr] == nil {
		s.objects[gvr] = map[types.NamespacedName]runtime.Object{}
	}
	s.objects[gvr][types.NamespacedName{Namespace: ns, Name: m.GetName()}] = stamped
	s.learnKind(gvr, stamped)
	s.emit(gvr, ns, watch.Event{Type: t, Object: stamped})
	return nil
}

// Add adds an object (not a list) as a create of its guessed resource would.
func (s *store) Add(obj runtime.Object) error {
	if meta.IsListType(obj) {
		items, err := meta.ExtractList(obj)
		if err != nil {
			return err
		}
		for _, it := range items {
			if err := s.Add(it); err != nil {
				return err
			}
		}
		return nil
	}
	var gvk schema.GroupVersionKind
	if s.typer != nil {
		if gvks, _, err := s.typer.ObjectKinds(obj); err == nil && len(gvks) > 0 {
			gvk = gvks[0]
		}
	}
	if gvk.Kind == "" {
		gvk = obj.GetObjectKind().GroupVersionKind()
	}
	if gvk.Kind == "" {
		return fmt.Errorf("sim: no kind for %T", obj)
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	return s.Create(gvr, obj, m.GetNamespace())
}

func (s *store) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	return s.write(gvr, ns, obj, watch.Added, func(o runtime.Object) error { return s.ObjectTracker.Create(gvr, o, ns, opts...) })
}

func (s *store) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	return s.write(gvr, ns, obj, watch.Modified, func(o runtime.Object) error { return s.ObjectTracker.Update(gvr, o, ns, opts...) })
}

func (s *store) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	return s.write(gvr, ns, obj, watch.Modified, func(o runtime.Object) error { return s.ObjectTracker.Patch(gvr, o, ns, opts...) })
}

// Apply merges as client-go's tracker does, then stores the result as an update.
func (s *store) Apply(gvr schema.GroupVersionResource, cfg runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	s.mu.Lock()
	err := s.ObjectTracker.Apply(gvr, cfg, ns, opts...)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	m, err := meta.Accessor(cfg)
	if err != nil {
		return err
	}
	cur, err := s.ObjectTracker.Get(gvr, ns, m.GetName())
	if err != nil {
		return err
	}
	return s.Update(gvr, cur, ns)
}

func (s *store) Delete(gvr schema.GroupVersionResource, ns, name string, opts ...metav1.DeleteOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, err := s.ObjectTracker.Get(gvr, ns, name)
	if err != nil {
		return err
	}
	if err := s.ObjectTracker.Delete(gvr, ns, name, opts...); err != nil {
		return err
	}
	s.rv++
	delete(s.objects[gvr], types.NamespacedName{Namespace: ns, Name: name})
	if m, err := meta.Accessor(old); err == nil {
		m.SetResourceVersion(strconv.FormatInt(s.rv, 10))
	}
	s.emit(gvr, ns, watch.Event{Type: watch.Deleted, Object: old})
	return nil
}

// List is the tracker's list, at the store's resourceVersion.
func (s *store) List(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, ns string, opts ...metav1.ListOptions) (runtime.Object, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	list, err := s.ObjectTracker.List(gvr, gvk, ns, opts...)
	if err != nil {
		return nil, err
	}
	if lm, err := meta.ListAccessor(list); err == nil {
		lm.SetResourceVersion(strconv.FormatInt(s.rv, 10))
	}
	return list, nil
}

// emit queues ev for the resource's watchers of its namespace and of all namespaces, and keeps
// it for replay. Callers hold mu.
func (s *store) emit(gvr schema.GroupVersionResource, ns string, ev watch.Event) {
	keep := s.historyLen
	if keep <= 0 {
		keep = defaultHistoryLen
	}
	if len(s.history) >= 2*keep {
		s.history = append(s.history[:0:0], s.history[len(s.history)-keep:]...)
	}
	s.history = append(s.history, storedEvent{rv: s.rv, gvr: gvr, ns: ns, ev: ev})
	for _, w := range s.watchers[gvr] {
		if w.ns == "" || w.ns == ns {
			w.push(watch.Event{Type: ev.Type, Object: ev.Object.DeepCopyObject()})
		}
	}
}

// Watch starts a watch of gvr in ns ("" for all) from opts' resourceVersion.
func (s *store) Watch(gvr schema.GroupVersionResource, ns string, opts ...metav1.ListOptions) (watch.Interface, error) {
	rv := ""
	if len(opts) > 0 {
		rv = opts[0].ResourceVersion
	}
	var from int64
	if rv != "" && rv != "0" {
		n, err := strconv.ParseInt(rv, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q", rv))
		}
		from = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := newQueueWatch(s, gvr, ns)
	switch {
	case from == 0:
		if gvk, ok := s.kinds[gvr]; ok {
			list, err := s.ObjectTracker.List(gvr, gvk, ns)
			if err != nil {
				return nil, err
			}
			items, err := meta.ExtractList(list)
			if err != nil {
				return nil, err
			}
			for _, it := range items {
				w.push(watch.Event{Type: watch.Added, Object: it})
			}
		}
	case len(s.history) > 0 && from < s.history[0].rv-1:
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, s.history[0].rv-1))
	default:
		for _, e := range s.history {
			if e.rv > from && e.gvr == gvr && (ns == "" || e.ns == ns) {
				w.push(watch.Event{Type: e.ev.Type, Object: e.ev.Object.DeepCopyObject()})
			}
		}
	}
	s.watchers[gvr] = append(s.watchers[gvr], w)
	go w.run()
	return w, nil
}

func (s *store) remove(w *queueWatch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws := s.watchers[w.gvr]
	for i, x := range ws {
		if x == w {
			s.watchers[w.gvr] = append(ws[:i:i], ws[i+1:]...)
			return
		}
	}
}

// queueWatch is a watch.Interface over an unbounded queue: push never blocks, and one
// goroutine hands the events to the reader in order.
type queueWatch struct {
	s   *store
	gvr schema.GroupVersionResource
	ns  string
	ch  chan watch.Event

	mu      sync.Mutex
	cond    sync.Cond
	queue   []watch.Event
	stopped bool
	done    chan struct{}
	once    sync.Once
}

func newQueueWatch(s *store, gvr schema.GroupVersionResource, ns string) *queueWatch {
	w := &queueWatch{s: s, gvr: gvr, ns: ns, ch: make(chan watch.Event), done: make(chan struct{})}
	w.cond.L = &w.mu
	return w
}

func (w *queueWatch) push(e watch.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.queue = append(w.queue, e)
		w.cond.Signal()
	}
}

func (w *queueWatch) run() {
	defer close(w.ch)
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.stopped {
			w.cond.Wait()
		}
		if w.stopped {
			w.mu.Unlock()
			return
		}
		e := w.queue[0]
		w.queue[0] = watch.Event{}
		w.queue = w.queue[1:]
		w.mu.Unlock()
		select {
		case w.ch <- e:
		case <-w.done:
			return
		}
	}
}

// ResultChan returns the events; it is closed after Stop.
func (w *queueWatch) ResultChan() <-chan watch.Event { return w.ch }

// Stop ends the watch; it is safe to call more than once.
func (w *queueWatch) Stop() {
	w.once.Do(func() {
		w.s.remove(w)
		w.mu.Lock()
		w.stopped = true
		w.queue = nil
		w.cond.Broadcast()
		w.mu.Unlock()
		close(w.done)
	})
}
