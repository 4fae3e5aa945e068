package ec2

import (
	"strings"
	"testing"
)

// Whatever parseTOML accepts, it writes back as a document it reads to the same structure.
func FuzzParseTOML(f *testing.F) {
	for _, s := range []string{
		"[settings.kubernetes]\nmax-pods = 3\n",
		"a.b = { c = 1, 'd e' = \"x\" }\n[t]\nl = [1, [2, 3], \"]\"] # c\n",
		"s = \"\"\"\nline \"\" \n\"\"\"\nr = '''raw'''\n",
		"[\"quoted key\".x]\ny = true\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseTOML(s)
		if err != nil {
			return
		}
		out := d.String()
		d2, err := parseTOML(out)
		if err != nil {
			t.Fatalf("re-reading %q (written from %q): %v", out, s, err)
		}
		if out2 := d2.String(); out2 != out {
			t.Fatalf("not stable:\n%s\n---\n%s", out, out2)
		}
	})
}

func TestParseTOMLErrors(t *testing.T) {
	for in, want := range map[string]string{
		"[[a]]\n":      "arrays of tables",
		"a = \n":       "expected a value",
		"a = \"x\nb=1": "newline in a single-line string",
		"a = 1 b":      "expected the end of the line",
		"a=1\na=2":     `line 2: duplicate key "a"`,
		"a = [1, 2":    "unterminated array",
		"a = 1\n[a]\n": "is a value, not a table",
		"a = { b = 1 ": "unterminated inline table",
	} {
		if _, err := parseTOML(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseTOML(%q) error = %v, want %q", in, err, want)
		}
	}
}
