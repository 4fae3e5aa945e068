package nodeplan

import "strings"

// Document is one document of a YAML or JSON stream, as SplitDocuments finds it.
type Document struct {
	// Number counts the non-blank documents from 1; Line is the 1-based line of the input
	// where the document's content starts.
	Number, Line int
	// Data is the document as written: YAML, or one JSON value.
	Data []byte
}

// SplitDocuments splits a stream the way kubectl reads one, with apimachinery's readers: JSON
// values one after another when it starts with '{', else YAML documents separated by "---"
// lines (a JSON object is a YAML document too). Blank documents are left out. Every reader of
// manifests in nodeplan — the decoders here and the what-if tool's loader — splits with it, so
// every file flag accepts the same forms.
func SplitDocuments(data []byte) ([]Document, error) {
	docs, err := readDocuments(data)
	out := make([]Document, len(docs))
	for i, d := range docs {
		out[i] = Document{Number: d.number, Line: d.line + leadingCommentLines(d.data), Data: d.data}
	}
	return out, err
}

// leadingCommentLines counts the comment lines that open a document after its blank lines, so
// Line is where its first key is.
func leadingCommentLines(doc []byte) int {
	n := 0
	for _, ln := range strings.SplitAfter(string(doc), "\n") {
		t := strings.TrimSpace(ln)
		switch {
		case t == "" && n == 0:
			continue // counted as blank already
		case strings.HasPrefix(t, "#"):
			n++
			continue
		}
		return n
	}
	return n
}
