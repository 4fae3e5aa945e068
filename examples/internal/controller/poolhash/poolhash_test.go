package poolhash_test

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/nodeplan/nodeplan/examples/internal/controller/poolhash"
)

// TestMatchesKarpenter hashes every NodePool in testdata/nodepools.yaml and compares with what
// Karpenter v1.14.1's NodePool.Hash() printed for the same documents (testdata/karphash).
func TestMatchesKarpenter(t *testing.T) {
	want := map[string]string{}
	f, err := os.ReadFile("testdata/karphash.txt")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(f))
	for sc.Scan() {
		name, hash, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("karphash.txt: bad line %q", sc.Text())
		}
		want[name] = hash
	}
	docs, err := os.ReadFile("testdata/nodepools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, doc := range bytes.Split(docs, []byte("\n---\n")) {
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatal(err)
		}
		name := obj["metadata"].(map[string]any)["name"].(string)
		h, err := poolhash.Template(obj)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got[name] = h
	}
	if len(want) < 10 {
		t.Fatalf("only %d goldens", len(want))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hashes differ from Karpenter's (-want +got):\n%s", diff)
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		obj  map[string]any
		want string
	}{
		{"no template", map[string]any{"spec": map[string]any{}}, "poolhash: NodePool has no spec.template"},
		{"bad expireAfter", map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"expireAfter": "soon"}}}},
			`poolhash: spec.template: expireAfter: time: invalid duration "soon"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := poolhash.Template(tc.obj)
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
