package scheduling

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"
)

// TestNameSorterSortsByKey checks the prefix-number sort against sorting the keys as strings,
// on keys that share long prefixes, end at any point of each other and hold any bytes.
func TestNameSorterSortsByKey(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		prefix := rapid.SampledFrom([]string{"", "default/", "default/web-7d9f8b6c4-", "ns/a"}).Draw(t, "prefix")
		tail := rapid.Map(rapid.SliceOfN(rapid.SampledFrom([]byte{0, 1, '0', '9', 'a', 0xff}), 0, 14), func(b []byte) string { return string(b) })
		tails := rapid.SliceOfNDistinct(tail, 0, 40, rapid.ID).Draw(t, "tails")
		var pods []*corev1.Pod
		var keys []string
		for _, tail := range tails {
			pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tail}})
			keys = append(keys, prefix+tail)
		}
		byKey := map[string]*corev1.Pod{}
		for i, k := range keys {
			byKey[k] = pods[i]
		}
		var s nameSorter
		s.sort(pods, keys)
		if want := slices.Sorted(slices.Values(keys)); !slices.Equal(keys, want) {
			t.Fatalf("keys sorted as %q, want %q", keys, want)
		}
		for i, k := range keys {
			if byKey[k] != pods[i] {
				t.Fatalf("pod %d is not the pod of key %q", i, k)
			}
		}
	})
}
