package sim

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func configMap(i int) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i), Namespace: "ns"}}
}

// TestWatchBurst: a watch that nobody reads while thousands of objects are written loses
// none of them, in order, and blocks no writer. client-go's own fake panics ("channel full")
// at the 101st.
func TestWatchBurst(t *testing.T) {
	ctx := context.Background()
	cs := NewCluster()
	w, err := cs.CoreV1().ConfigMaps("ns").Watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	const n = 5000
	for i := range n {
		if _, err := cs.CoreV1().ConfigMaps("ns").Create(ctx, configMap(i), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		select {
		case ev := <-w.ResultChan():
			if got, want := ev.Object.(*corev1.ConfigMap).Name, configMap(i).Name; ev.Type != watch.Added || got != want {
				t.Fatalf("event %d = %s %s, want ADDED %s", i, ev.Type, got, want)
			}
		case <-time.After(time.Minute):
			t.Fatalf("event %d never came", i)
		}
	}
}

// TestWatchFromList: a watch from a List's resourceVersion sees exactly the writes made after
// the List (none lost in between, none repeated), with resourceVersions that increase.
func TestWatchFromList(t *testing.T) {
	ctx := context.Background()
	cs := NewCluster(configMap(0))
	cms := cs.CoreV1().ConfigMaps("ns")
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.ResourceVersion == "" {
		t.Fatalf("List = %d items at resourceVersion %q, want 1 at a version", len(list.Items), list.ResourceVersion)
	}
	// Written between the List and the Watch: an informer must still see these.
	if _, err := cms.Create(ctx, configMap(1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := configMap(0)
	cm.Data = map[string]string{"k": "v"}
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := cms.Delete(ctx, configMap(1).Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"ADDED cm-00001", "MODIFIED cm-00000", "DELETED cm-00001"}
	last := list.ResourceVersion
	for i, wantEv := range want {
		ev := <-w.ResultChan()
		cm := ev.Object.(*corev1.ConfigMap)
		if got := fmt.Sprintf("%s %s", ev.Type, cm.Name); got != wantEv {
			t.Errorf("event %d = %s, want %s", i, got, wantEv)
		}
		if len(cm.ResourceVersion) < len(last) || len(cm.ResourceVersion) == len(last) && cm.ResourceVersion <= last {
			t.Errorf("event %d: resourceVersion %s does not follow %s", i, cm.ResourceVersion, last)
		}
		last = cm.ResourceVersion
	}
	select {
	case ev := <-w.ResultChan():
		t.Errorf("unexpected event %s %v", ev.Type, ev.Object)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestWatchTooOld: a watch from before the replay history answers 410 Gone, so a reflector
// lists again rather than miss writes.
func TestWatchTooOld(t *testing.T) {
	ctx := context.Background()
	cs := NewCluster()
	storeOf(cs).historyLen = 10
	for i := range 21 {
		if _, err := cs.CoreV1().ConfigMaps("ns").Create(ctx, configMap(i), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := cs.CoreV1().ConfigMaps("ns").Watch(ctx, metav1.ListOptions{ResourceVersion: "2"})
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("Watch(resourceVersion 2) after 21 writes, 10 kept = %v, want 410 Gone", err)
	}
}

// TestWatchStop: Stop closes the result channel and may be called twice.
func TestWatchStop(t *testing.T) {
	cs := NewCluster()
	w, err := cs.CoreV1().ConfigMaps("").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	w.Stop()
	select {
	case _, ok := <-w.ResultChan():
		if ok {
			t.Error("an event after Stop")
		}
	case <-time.After(time.Minute):
		t.Error("the result channel stayed open after Stop")
	}
}
