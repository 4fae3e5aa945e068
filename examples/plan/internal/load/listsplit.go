package load

import (
	"bytes"
	"runtime"
	"sync"

	"sigs.k8s.io/yaml"
)

// A snapshot of a real cluster is one large List document (`kubectl get pods -A -o yaml`): for
// 1,000 API-server pods, converting it from YAML to JSON was three quarters of `plan
// provision`'s CPU, more than solving. Its items are independent, so yamlListToJSON converts
// them on every core and splices the results into the list: the same JSON value as converting
// the whole document (the items key last). It only takes the block layout every YAML emitter writes a list in
// (`items:` at column 0, each item starting with "- " at column 0, every other line of an item
// indented); anything else, or any item that does not convert, is left to the whole-document
// conversion, so errors and their line numbers stay what they were.

// minItemsToSplit is the smallest list worth splitting: below it the goroutines cost more than
// they save.
const minItemsToSplit = 64

// yamlListToJSON converts a YAML document holding a list in block layout to JSON, its items in
// parallel. ok is false when the document is not such a list or an item fails to convert; the
// caller then converts the whole document itself.
func yamlListToJSON(doc []byte) (out []byte, ok bool) {
	head, items, ok := splitListItems(doc)
	if !ok || len(items) < minItemsToSplit {
		return nil, false
	}
	converted := make([][]byte, len(items))
	failed := make([]bool, len(items))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				j, err := yaml.YAMLToJSONStrict(items[i])
				// An item "- x" alone converts to [x]: keep x.
				j = bytes.TrimSpace(j)
				if err != nil || len(j) < 2 || j[0] != '[' || j[len(j)-1] != ']' {
					failed[i] = true
					continue
				}
				converted[i] = j[1 : len(j)-1]
			}
		})
	}
	for i := range items {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, f := range failed {
		if f {
			return nil, false
		}
	}
	hj, err := yaml.YAMLToJSONStrict(head)
	hj = bytes.TrimSpace(hj)
	if err != nil {
		return nil, false
	}
	if len(hj) == 0 || bytes.Equal(hj, []byte("null")) {
		hj = []byte("{}")
	}
	if hj[0] != '{' || hj[len(hj)-1] != '}' {
		return nil, false
	}
	var b bytes.Buffer
	b.Grow(len(hj) + len(items)*1024)
	b.Write(hj[:len(hj)-1])
	if len(hj) > 2 {
		b.WriteByte(',')
	}
	b.WriteString(`"items":[`)
	for i, c := range converted {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(c)
	}
	b.WriteString("]}")
	return b.Bytes(), true
}

// splitListItems cuts a block-layout list document into the document without its items and
// each item's lines. ok is false unless there is exactly one "items:" key at column 0 followed
// by "- " items at column 0 whose other lines are indented, blank or comments.
func splitListItems(doc []byte) (head []byte, items [][]byte, ok bool) {
	var cur []byte // the item being collected
	inItems, seenItems := false, false
	for len(doc) > 0 {
		line := doc
		if i := bytes.IndexByte(doc, '\n'); i >= 0 {
			line, doc = doc[:i+1], doc[i+1:]
		} else {
			doc = nil
		}
		trimmed := bytes.TrimRight(line, "\r\n")
		switch {
		case bytes.Equal(trimmed, []byte("items:")):
			if seenItems {
				return nil, nil, false // a second items key: let the strict conversion say so
			}
			inItems, seenItems = true, true
		case !inItems:
			head = append(head, line...)
		case bytes.HasPrefix(trimmed, []byte("- ")) || bytes.Equal(trimmed, []byte("-")):
			if cur != nil {
				items = append(items, cur)
			}
			cur = append([]byte(nil), line...)
		case len(trimmed) == 0 || trimmed[0] == ' ' || trimmed[0] == '#':
			if cur == nil {
				if len(bytes.TrimSpace(trimmed)) == 0 || trimmed[0] == '#' {
					continue
				}
				return nil, nil, false // indented content before the first item
			}
			cur = append(cur, line...)
		case trimmed[0] == '\t':
			return nil, nil, false
		default: // a key at column 0: the items are over
			if cur != nil {
				items = append(items, cur)
				cur = nil
			}
			inItems = false
			head = append(head, line...)
		}
	}
	if cur != nil {
		items = append(items, cur)
	}
	return head, items, seenItems
}
