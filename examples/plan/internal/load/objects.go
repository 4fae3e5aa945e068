package load

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/nodeplan/nodeplan"
)

// Loader reads input files. The zero value is ready to use.
type Loader struct {
	// Warn, when not nil, is told about input that is accepted but partly ignored, such as
	// fields this version of the Kubernetes API types does not know.
	Warn func(msg string)
	// ReadFile, when not nil, reads the named input instead of the file system — how objects
	// listed from a live cluster go through the same decoding and checks as files.
	ReadFile func(name string) ([]byte, error)
}

func (l *Loader) warnf(format string, args ...any) {
	if l.Warn != nil {
		l.Warn(fmt.Sprintf(format, args...))
	}
}

// kind is what a file is expected to hold.
type kind struct {
	name       string // e.g. Pod
	apiVersion string // e.g. v1
	plural     string // e.g. Pods, for messages
}

// document is one YAML document or JSON value of a file, converted to JSON.
type document struct {
	index int // 1-based, counting non-empty documents
	line  int // 1-based line where it starts
	json  []byte
}

func (d document) where() string { return fmt.Sprintf("document %d (line %d)", d.index, d.line) }

// rawObject is one object of the expected kind, still undecoded, and where it was found.
type rawObject struct {
	where     string // e.g. "document 1 (line 1), items[3]"
	name      string
	namespace string
	json      []byte
	err       error // the object is unusable: not of the kind wanted
}

// readFile reads a file, making a read failure an *Error.
func (l *Loader) readFile(file string) ([]byte, error) {
	read := os.ReadFile
	if l.ReadFile != nil {
		read = l.ReadFile
	}
	data, err := read(file)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &Error{File: file, Err: fmt.Errorf("cannot read: %w", err)}
	}
	return data, nil
}

// objects reads every object of kind k from a file: single objects, items of lists, in order.
// An object that is not of kind k comes back as an entry with err set, in its place, so problems
// are reported in file order.
func (l *Loader) objects(file string, k kind) ([]rawObject, error) {
	data, err := l.readFile(file)
	if err != nil {
		return nil, err
	}
	docs, err := documents(data)
	if err != nil {
		return nil, inFile(file, err)
	}
	if len(docs) == 0 {
		return nil, &Error{File: file, Err: fmt.Errorf("no objects; want %s", k.plural)}
	}
	var out []rawObject
	for _, d := range docs {
		for _, o := range splitDocument(d, k) {
			if o.err != nil {
				o.err = inFile(file, o.err)
			}
			out = append(out, o)
		}
	}
	return out, nil
}

// inFile sets the file of every *Error in err (joined or not) and makes any other error one.
func inFile(file string, err error) error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var errs []error
		for _, e := range j.Unwrap() {
			errs = append(errs, inFile(file, e))
		}
		return errors.Join(errs...)
	}
	if e, ok := err.(*Error); ok {
		e.File = file
		return e
	}
	return &Error{File: file, Err: err}
}

// header is the part of any object needed to tell what it is.
type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// splitDocument checks a document's kind and returns its objects: itself, or a list's items.
func splitDocument(d document, k kind) []rawObject {
	where := d.where()
	bad := func(object string, err error) []rawObject {
		return []rawObject{{where: where, err: &Error{Object: object, Err: err}}}
	}
	if bytes.HasPrefix(d.json, []byte("[")) {
		var items []json.RawMessage
		if err := json.Unmarshal(d.json, &items); err != nil {
			return bad(where, err)
		}
		return listItems(where, items, k, false)
	}
	var h header
	if err := json.Unmarshal(d.json, &h); err != nil {
		return bad(where, fmt.Errorf("not a Kubernetes object: %v", err))
	}
	switch {
	case h.Kind == "":
		return bad(where, fmt.Errorf("no kind; want %s", k.name))
	case h.Kind == "List":
		return listItems(where, h.Items, k, false)
	case h.Kind == k.name+"List":
		if err := checkAPIVersion(h.APIVersion, k); err != nil {
			return bad(where, err)
		}
		return listItems(where, h.Items, k, true)
	case h.Kind != k.name:
		return bad(where, fmt.Errorf("kind %s, want %s", h.Kind, k.name))
	}
	o := rawObject{where: where, name: h.Metadata.Name, namespace: h.Metadata.Namespace, json: d.json}
	if err := checkAPIVersion(h.APIVersion, k); err != nil {
		o.err = &Error{Object: o.describe(k), Err: err}
	}
	return []rawObject{o}
}

// listItems checks the items of a list. In a typed list (PodList) items may omit kind and
// apiVersion, as the API server returns them.
func listItems(where string, items []json.RawMessage, k kind, typed bool) []rawObject {
	var out []rawObject
	for i, raw := range items {
		iw := fmt.Sprintf("%s, items[%d]", where, i)
		var h header
		if err := json.Unmarshal(raw, &h); err != nil {
			out = append(out, rawObject{where: iw, err: &Error{Object: iw, Err: fmt.Errorf("not a Kubernetes object: %v", err)}})
			continue
		}
		o := rawObject{where: iw, name: h.Metadata.Name, namespace: h.Metadata.Namespace, json: raw}
		switch {
		case h.Kind == "" && !typed:
			o.err = &Error{Object: iw, Err: fmt.Errorf("no kind; want %s", k.name)}
		case h.Kind != "" && h.Kind != k.name:
			o.err = &Error{Object: iw, Err: fmt.Errorf("kind %s, want %s", h.Kind, k.name)}
		default:
			if err := checkAPIVersion(h.APIVersion, k); err != nil {
				o.err = &Error{Object: o.describe(k), Err: err}
			}
		}
		out = append(out, o)
	}
	return out
}

func checkAPIVersion(v string, k kind) error {
	if v != "" && v != k.apiVersion {
		return fmt.Errorf("apiVersion %s, want %s", v, k.apiVersion)
	}
	return nil
}

// describe names the object for messages: "document 2 (line 14): Pod default/web".
func (o rawObject) describe(k kind) string {
	name := o.name
	if name == "" {
		name = "(no name)"
	}
	if o.namespace != "" {
		name = o.namespace + "/" + name
	}
	return o.where + ": " + k.name + " " + name
}

// decode unmarshals an object into v. An unknown field is a warning, not an error: a snapshot
// from a newer cluster may carry fields these types do not know. A value that does not decode
// is an error naming the field where that can be found.
func (l *Loader) decode(file string, o rawObject, k kind, v any) error {
	dec := json.NewDecoder(bytes.NewReader(o.json))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err != nil && strings.HasPrefix(err.Error(), "json: unknown field ") {
		l.warnf("file %s: %s: %s ignored", file, o.describe(k), strings.TrimPrefix(err.Error(), "json: "))
		err = json.Unmarshal(o.json, v)
	}
	if err == nil {
		return nil
	}
	if fe := findBadQuantity(o.json); fe != nil {
		err = fe
	} else {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			err = &fieldError{path: te.Field, msg: fmt.Sprintf("a JSON %s, want %s", te.Value, te.Type)}
		}
	}
	return &Error{File: file, Object: o.describe(k), Err: err}
}

// documents splits a file into documents with nodeplan.SplitDocuments — the splitting every
// nodeplan decoder uses, apimachinery's readers underneath — and converts each to JSON, strictly
// (a duplicate key is an error). YAML errors name the file's line, not the document's.
func documents(data []byte) ([]document, error) {
	split, err := nodeplan.SplitDocuments(data)
	var syntax utilyaml.JSONSyntaxError
	if errors.As(err, &syntax) {
		off := min(int(syntax.Offset), len(data))
		return nil, fmt.Errorf("invalid JSON at line %d: %v", 1+bytes.Count(data[:off], []byte("\n")), syntax.Err)
	}
	if err != nil {
		return nil, trimPrefix(err)
	}
	var docs []document
	var errs []error
	for _, d := range split {
		j, ok := yamlListToJSON(d.Data)
		var err error
		if !ok {
			j, err = yaml.YAMLToJSONStrict(d.Data)
		}
		if err != nil {
			// Lines in the YAML error count from the document's start; make them the file's.
			msg := yamlLine.ReplaceAllStringFunc(err.Error(), func(m string) string {
				n, _ := strconv.Atoi(yamlLine.FindStringSubmatch(m)[1])
				return fmt.Sprintf("line %d", n+d.Line-1)
			})
			msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
			errs = append(errs, &Error{Object: fmt.Sprintf("document %d (line %d)", len(docs)+1, d.Line), Err: fmt.Errorf("invalid YAML: %s", msg)})
			docs = append(docs, document{index: len(docs) + 1, line: d.Line})
			continue
		}
		j = bytes.TrimSpace(j)
		if len(j) == 0 || bytes.Equal(j, []byte("null")) {
			continue
		}
		if j[0] != '{' && j[0] != '[' {
			errs = append(errs, &Error{Object: fmt.Sprintf("document %d (line %d)", len(docs)+1, d.Line), Err: errors.New("not an object")})
		}
		docs = append(docs, document{index: len(docs) + 1, line: d.Line, json: j})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return docs, nil
}

var yamlLine = regexp.MustCompile(`\bline (\d+)\b`)
