package load

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestYAMLListToJSONMatchesWholeConversion: wherever the split conversion answers, it gives
// exactly the bytes of converting the whole document, and it declines what it cannot split.
func TestYAMLListToJSONMatchesWholeConversion(t *testing.T) {
	item := func(i int) string {
		return fmt.Sprintf("- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p-%d\n    labels: {app: web}\n  spec:\n    containers:\n    - name: c\n      args:\n      - |\n        line one\n        - not an item\n      image: x\n", i)
	}
	var items strings.Builder
	for i := range 100 {
		items.WriteString(item(i))
		if i == 50 {
			items.WriteString("\n# a comment between items\n")
		}
	}
	cases := []struct {
		name string
		doc  string
		ok   bool
	}{
		{"kubectl layout", "apiVersion: v1\nitems:\n" + items.String() + "kind: List\nmetadata:\n  resourceVersion: \"\"\n", true},
		{"items last", "apiVersion: v1\nkind: List\nitems:\n" + items.String(), true},
		{"no head", "items:\n" + items.String(), true},
		{"too few items", "apiVersion: v1\nitems:\n" + item(1) + "kind: List\n", false},
		{"flow items", "apiVersion: v1\nkind: List\nitems: [" + strings.Repeat("{a: 1},", 99) + "{a: 1}]\n", false},
		{"indented items", "apiVersion: v1\nkind: List\nitems:\n  " + strings.ReplaceAll(items.String(), "\n", "\n  ") + "\n", false},
		{"not a list", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n", false},
		{"duplicate key in an item", "apiVersion: v1\nitems:\n" + items.String() + "- kind: Pod\n  kind: Pod\n", false},
		{"two items keys", "items:\n" + items.String() + "items:\n" + item(1), false},
	}
	for _, c := range cases {
		got, ok := yamlListToJSON([]byte(c.doc))
		if ok != c.ok {
			t.Errorf("%s: yamlListToJSON ok = %v, want %v", c.name, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		want, err := yaml.YAMLToJSONStrict([]byte(c.doc))
		if err != nil {
			t.Fatalf("%s: whole conversion: %v", c.name, err)
		}
		// The whole conversion sorts keys; so must the splice, which puts items where sorting
		// does only when the head's keys sort around it — compare as decoded values instead.
		if !jsonEqual(t, got, want) {
			t.Errorf("%s: split conversion differs from the whole:\n got %.300s\nwant %.300s", c.name, got, want)
		}
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := yaml.Unmarshal(a, &x); err != nil {
		t.Fatalf("split output is not JSON: %v: %.200s", err, a)
	}
	if err := yaml.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xa, _ := yaml.Marshal(x)
	ya, _ := yaml.Marshal(y)
	return bytes.Equal(xa, ya)
}
