package nodeplan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitDocuments(t *testing.T) {
	type doc struct {
		Number, Line int
		Data         string
	}
	for _, tt := range []struct {
		name, in string
		want     []doc
	}{
		{"yaml with comments and separators", "# header\napiVersion: v1\nkind: A\n---\n\n# B follows\nkind: B\n---\n",
			[]doc{{1, 2, "# header\napiVersion: v1\nkind: A\n"}, {2, 7, "\n# B follows\nkind: B\n"}}},
		{"a JSON object in a YAML stream", "kind: A\n---\n{\"kind\": \"B\"}\n",
			[]doc{{1, 1, "kind: A\n"}, {2, 3, "{\"kind\": \"B\"}\n"}}},
		{"a JSON stream", "{\"kind\": \"A\"}\n{\"kind\": \"B\"}",
			[]doc{{1, 1, `{"kind": "A"}`}, {2, 2, `{"kind": "B"}`}}},
		{"blank documents", "---\n---\nkind: A\n", []doc{{1, 3, "kind: A\n"}}},
	} {
		docs, err := SplitDocuments([]byte(tt.in))
		if err != nil {
			t.Fatalf("SplitDocuments(%s): %v", tt.name, err)
		}
		var got []doc
		for _, d := range docs {
			got = append(got, doc{d.Number, d.Line, string(d.Data)})
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("SplitDocuments(%s) (-want +got):\n%s", tt.name, diff)
		}
	}
}
