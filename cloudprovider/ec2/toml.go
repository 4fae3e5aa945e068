package ec2

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// tomlDoc is a TOML document read for merging, not for its values: tables and keys are
// structure, each value is kept as the text it was written as (a string, number, boolean,
// date or array), so merging changes only the keys the provider sets and writes the rest back
// as the user wrote them. Inline tables become tables. Arrays of tables ([[…]]) are not
// supported: Bottlerocket's settings have none.
type tomlDoc struct{ root *tomlTable }

type tomlTable struct {
	order []string
	items map[string]*tomlNode
}

// tomlNode is a value (raw) or a table.
type tomlNode struct {
	raw   string
	table *tomlTable
}

func newTOMLTable() *tomlTable { return &tomlTable{items: map[string]*tomlNode{}} }

func (t *tomlTable) put(key string, n *tomlNode) {
	if _, ok := t.items[key]; !ok {
		t.order = append(t.order, key)
	}
	t.items[key] = n
}

// set puts the raw value at path, replacing whatever was there.
func (d *tomlDoc) set(path []string, raw string) {
	t := d.root
	for _, k := range path[:len(path)-1] {
		n := t.items[k]
		if n == nil || n.table == nil {
			n = &tomlNode{table: newTOMLTable()}
			t.put(k, n)
		}
		t = n.table
	}
	t.put(path[len(path)-1], &tomlNode{raw: raw})
}

// remove deletes the key at path, if present.
func (d *tomlDoc) remove(path []string) {
	t := d.root
	for _, k := range path[:len(path)-1] {
		n := t.items[k]
		if n == nil || n.table == nil {
			return
		}
		t = n.table
	}
	k := path[len(path)-1]
	if _, ok := t.items[k]; ok {
		delete(t.items, k)
		for i, o := range t.order {
			if o == k {
				t.order = append(t.order[:i:i], t.order[i+1:]...)
				break
			}
		}
	}
}

var bareKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func tomlKey(k string) string {
	if bareKey.MatchString(k) {
		return k
	}
	return strconv.Quote(k)
}

// String writes the document: each table's values under its header, then its sub-tables.
func (d *tomlDoc) String() string {
	var b strings.Builder
	var write func(path []string, t *tomlTable)
	write = func(path []string, t *tomlTable) {
		var subs []string
		header := false
		for _, k := range t.order {
			n := t.items[k]
			if n.table != nil {
				subs = append(subs, k)
				continue
			}
			if !header && len(path) > 0 {
				if b.Len() > 0 {
					b.WriteString("\n")
				}
				b.WriteString("[" + strings.Join(path, ".") + "]\n")
			}
			header = true
			b.WriteString(tomlKey(k) + " = " + n.raw + "\n")
		}
		if len(t.order) == 0 && len(path) > 0 {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString("[" + strings.Join(path, ".") + "]\n")
		}
		for _, k := range subs {
			write(append(path[:len(path):len(path)], tomlKey(k)), t.items[k].table)
		}
	}
	write(nil, d.root)
	return b.String()
}

// parseTOML reads a TOML document for merging.
func parseTOML(s string) (*tomlDoc, error) {
	p := &tomlParser{s: s, line: 1}
	doc := &tomlDoc{root: newTOMLTable()}
	cur := doc.root
	for {
		p.skipBlank(true)
		if p.eof() {
			return doc, nil
		}
		if p.peek() == '[' {
			if strings.HasPrefix(p.s[p.i:], "[[") {
				return nil, p.errorf("arrays of tables ([[…]]) are not supported")
			}
			p.i++
			path, err := p.keyPath(']')
			if err != nil {
				return nil, err
			}
			p.i++ // ]
			if cur, err = p.tableAt(doc.root, path); err != nil {
				return nil, err
			}
		} else if err := p.keyValue(cur); err != nil {
			return nil, err
		}
		p.skipBlank(false)
		if !p.eof() && p.peek() != '\n' {
			return nil, p.errorf("expected the end of the line, found %q", p.rest())
		}
	}
}

type tomlParser struct {
	s    string
	i    int
	line int
}

func (p *tomlParser) eof() bool  { return p.i >= len(p.s) }
func (p *tomlParser) peek() byte { return p.s[p.i] }

func (p *tomlParser) rest() string {
	r := p.s[p.i:]
	if j := strings.IndexByte(r, '\n'); j >= 0 {
		r = r[:j]
	}
	return r
}

func (p *tomlParser) errorf(format string, args ...any) error {
	return fmt.Errorf("line %d: %s", p.line, fmt.Sprintf(format, args...))
}

// skipBlank skips spaces, tabs and comments, and newlines too when newlines is set.
func (p *tomlParser) skipBlank(newlines bool) {
	for !p.eof() {
		switch c := p.peek(); {
		case c == ' ' || c == '\t' || c == '\r':
			p.i++
		case c == '\n' && newlines:
			p.i++
			p.line++
		case c == '#':
			for !p.eof() && p.peek() != '\n' {
				p.i++
			}
		default:
			return
		}
	}
}

// keyPath reads a dotted key up to (not including) end.
func (p *tomlParser) keyPath(end byte) ([]string, error) {
	var path []string
	for {
		p.skipBlank(false)
		if p.eof() {
			return nil, p.errorf("unterminated key")
		}
		var k string
		switch c := p.peek(); {
		case c == '"' || c == '\'':
			raw, err := p.scanString()
			if err != nil {
				return nil, err
			}
			if c == '\'' {
				k = raw[1 : len(raw)-1]
			} else if k, err = strconv.Unquote(raw); err != nil {
				return nil, p.errorf("invalid quoted key %s", raw)
			}
		default:
			j := p.i
			for j < len(p.s) && (bareKey.MatchString(p.s[j : j+1])) {
				j++
			}
			if j == p.i {
				return nil, p.errorf("expected a key, found %q", p.rest())
			}
			k, p.i = p.s[p.i:j], j
		}
		path = append(path, k)
		p.skipBlank(false)
		if p.eof() {
			return nil, p.errorf("unterminated key")
		}
		switch p.peek() {
		case '.':
			p.i++
		case end:
			return path, nil
		default:
			return nil, p.errorf("expected %q after key %q, found %q", end, strings.Join(path, "."), p.rest())
		}
	}
}

// tableAt returns the table at path under t, creating tables on the way.
func (p *tomlParser) tableAt(t *tomlTable, path []string) (*tomlTable, error) {
	for _, k := range path {
		n := t.items[k]
		if n == nil {
			n = &tomlNode{table: newTOMLTable()}
			t.put(k, n)
		} else if n.table == nil {
			return nil, p.errorf("key %q is a value, not a table", k)
		}
		t = n.table
	}
	return t, nil
}

// keyValue reads key = value into t.
func (p *tomlParser) keyValue(t *tomlTable) error {
	path, err := p.keyPath('=')
	if err != nil {
		return err
	}
	p.i++ // =
	parent, err := p.tableAt(t, path[:len(path)-1])
	if err != nil {
		return err
	}
	key := path[len(path)-1]
	if _, dup := parent.items[key]; dup {
		return p.errorf("duplicate key %q", strings.Join(path, "."))
	}
	p.skipBlank(false)
	if p.eof() {
		return p.errorf("key %q has no value", strings.Join(path, "."))
	}
	if p.peek() == '{' {
		p.i++
		sub := newTOMLTable()
		parent.put(key, &tomlNode{table: sub})
		for {
			p.skipBlank(false)
			if !p.eof() && p.peek() == '}' {
				p.i++
				return nil
			}
			if err := p.keyValue(sub); err != nil {
				return err
			}
			p.skipBlank(false)
			if p.eof() {
				return p.errorf("unterminated inline table")
			}
			switch p.peek() {
			case ',':
				p.i++
			case '}':
			default:
				return p.errorf("expected , or } in inline table, found %q", p.rest())
			}
		}
	}
	raw, err := p.scanValue()
	if err != nil {
		return err
	}
	parent.put(key, &tomlNode{raw: raw})
	return nil
}

// scanValue returns the text of the value at the cursor (not an inline table).
func (p *tomlParser) scanValue() (string, error) {
	start := p.i
	switch c := p.peek(); {
	case c == '"' || c == '\'':
		return p.scanString()
	case c == '[':
		depth := 0
		for !p.eof() {
			switch c := p.peek(); c {
			case '"', '\'':
				if _, err := p.scanString(); err != nil {
					return "", err
				}
				continue
			case '#':
				p.skipBlank(false)
				continue
			case '\n':
				p.line++
			case '[', '{':
				depth++
			case ']', '}':
				depth--
				if depth == 0 {
					p.i++
					return p.s[start:p.i], nil
				}
			}
			p.i++
		}
		return "", p.errorf("unterminated array")
	default:
		for !p.eof() && !strings.ContainsRune(" \t\r\n,]}#", rune(p.peek())) {
			p.i++
		}
		if p.i == start {
			return "", p.errorf("expected a value, found %q", p.rest())
		}
		return p.s[start:p.i], nil
	}
}

// scanString returns the text of the string at the cursor, quotes included.
func (p *tomlParser) scanString() (string, error) {
	start := p.i
	q := p.s[p.i : p.i+1]
	multi := strings.HasPrefix(p.s[p.i:], strings.Repeat(q, 3))
	if multi {
		q = strings.Repeat(q, 3)
	}
	p.i += len(q)
	for !p.eof() {
		c := p.peek()
		switch {
		case c == '\\' && q[0] == '"':
			p.i += 2
			continue
		case c == '\n' && !multi:
			return "", p.errorf("newline in a single-line string")
		case c == '\n':
			p.line++
		case strings.HasPrefix(p.s[p.i:], q):
			p.i += len(q)
			for extra := 0; multi && extra < 2 && !p.eof() && p.peek() == q[0]; extra++ { // content may end in up to two quote characters
				p.i++
			}
			return p.s[start:p.i], nil
		}
		p.i++
	}
	return "", p.errorf("unterminated string")
}
