package nodeplan

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The decoder walks the JSON form of a YAML document (objects are map[string]any, arrays []any,
// numbers json.Number) rather than unmarshalling into structs, so that a wrong type, an unknown
// field or an invalid value anywhere is reported with its path and decoding carries on: every
// problem of a manifest comes out at once, and nothing in the input can make it panic.

// walker collects the field errors of one object.
type walker struct {
	object string // e.g. `NodePool "spot" (document 2)`
	errs   []*FieldError
}

func (w *walker) fail(field, value, expected string) {
	w.errs = append(w.errs, &FieldError{Object: w.object, Field: field, Value: value, Expected: expected})
}

// node is one JSON object being read. Reading a key marks it known; [node.finish] reports the
// keys nobody read. The zero node (an absent or mistyped object) reads as empty.
type node struct {
	w    *walker
	path string
	m    map[string]any
	read map[string]bool
}

// object returns v as an object at path, reporting anything else but null.
func (w *walker) obj(path string, v any) *node {
	n := &node{w: w, path: path}
	switch v := v.(type) {
	case nil:
	case map[string]any:
		n.m = v
		n.read = make(map[string]bool, len(v))
	default:
		w.fail(path, describe(v), "an object")
	}
	return n
}

func (n *node) at(key string) string {
	if key == "" {
		key = `""`
	}
	if n.path == "" {
		return key
	}
	return n.path + "." + key
}

// get returns the value of key, nil when absent or null.
func (n *node) get(key string) any {
	if n.m == nil {
		return nil
	}
	n.read[key] = true
	return n.m[key]
}

// has reports whether key is present and not null.
func (n *node) has(key string) bool { return n.m != nil && n.m[key] != nil }

// ignore marks keys as known without reading them.
func (n *node) ignore(keys ...string) {
	for _, k := range keys {
		if n.m != nil {
			n.read[k] = true
		}
	}
}

// finish reports every key that was not read, in sorted order. hints maps a key to a sentence
// for fields people often put in the wrong place.
func (n *node) finish(hints map[string]string) {
	var unknown []string
	for k := range n.m {
		if !n.read[k] {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		msg := "a known field (Karpenter v1 has no such field here)"
		if h, ok := hints[k]; ok {
			msg = h
		}
		n.w.fail(n.at(k), "", "unknown field: "+msg)
	}
}

// child returns the object under key.
func (n *node) child(key string) *node { return n.w.obj(n.at(key), n.get(key)) }

// list returns the array under key; ok is false when the key is absent or null.
func (n *node) list(key string) (items []any, ok bool) {
	switch v := n.get(key).(type) {
	case nil:
		return nil, false
	case []any:
		return v, true
	default:
		n.w.fail(n.at(key), describe(v), "a list")
		return nil, false
	}
}

// objects returns the array under key as objects, with their paths.
func (n *node) objects(key string) ([]*node, bool) {
	items, ok := n.list(key)
	out := make([]*node, len(items))
	for i, it := range items {
		out[i] = n.w.obj(fmt.Sprintf("%s[%d]", n.at(key), i), it)
	}
	return out, ok
}

// str returns the string under key; ok is false when absent or not a string.
func (n *node) str(key string) (string, bool) {
	return n.w.str(n.at(key), n.get(key))
}

func (w *walker) str(path string, v any) (string, bool) {
	switch v := v.(type) {
	case nil:
		return "", false
	case string:
		return v, true
	case bool:
		w.fail(path, describe(v), "a string (YAML reads unquoted true, false, yes, no, on, off, y and n as booleans: quote the value)")
		return "", false
	default:
		w.fail(path, describe(v), "a string (quote it in YAML)")
		return "", false
	}
}

// strings returns the array of strings under key.
func (n *node) strings(key string) ([]string, bool) {
	items, ok := n.list(key)
	out := make([]string, 0, len(items))
	for i, it := range items {
		if s, ok := n.w.str(fmt.Sprintf("%s[%d]", n.at(key), i), it); ok {
			out = append(out, s)
		}
	}
	return out, ok
}

// stringMap returns the object of strings under key, a null value reading as ""; nil when
// absent or empty.
func (n *node) stringMap(key string) map[string]string {
	o := n.child(key)
	if len(o.m) == 0 {
		return nil
	}
	out := make(map[string]string, len(o.m))
	for _, k := range sortedKeys(o.m) {
		if s, ok := o.str(k); ok || o.m[k] == nil {
			out[k] = s
		}
	}
	return out
}

// integer returns the integer under key, which must lie in [lo, hi].
func (n *node) integer(key string, lo, hi int64) (int64, bool) {
	v := n.get(key)
	if v == nil {
		return 0, false
	}
	num, isNum := v.(json.Number)
	i, err := strconv.ParseInt(string(num), 10, 64)
	if !isNum || err != nil || i < lo || i > hi {
		n.w.fail(n.at(key), describe(v), fmt.Sprintf("an integer %d-%d", lo, hi))
		return 0, false
	}
	return i, true
}

// boolean returns the boolean under key; nil when absent.
func (n *node) boolean(key string) *bool {
	switch v := n.get(key).(type) {
	case nil:
		return nil
	case bool:
		return &v
	default:
		n.w.fail(n.at(key), describe(v), "true or false")
		return nil
	}
}

// quantity reads a Kubernetes quantity, written as a string ("40Gi") or a number (20).
func (w *walker) quantity(path string, v any) (resource.Quantity, bool) {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case json.Number:
		s = string(v)
	default:
		w.fail(path, describe(v), "a quantity such as 4, 500m or 16Gi")
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		w.fail(path, s, "a quantity such as 4, 500m or 16Gi")
		return resource.Quantity{}, false
	}
	if q.Sign() < 0 {
		w.fail(path, s, "a non-negative quantity")
		return resource.Quantity{}, false
	}
	return q, true
}

// resources reads an object of quantities; nil when absent.
func (n *node) resources(key string) corev1.ResourceList {
	o := n.child(key)
	if len(o.m) == 0 {
		return nil
	}
	out := make(corev1.ResourceList, len(o.m))
	for _, k := range sortedKeys(o.m) {
		if k == "" {
			n.w.fail(o.path, "", "resource names must not be empty")
			continue
		}
		if q, ok := n.w.quantity(o.at(k), o.get(k)); ok {
			out[corev1.ResourceName(k)] = q
		}
	}
	return out
}

// duration reads a Go duration ("720h", "1h30m", "30s"), or "Never" when never is allowed.
// Negative durations are rejected.
func (n *node) duration(key string, never bool) (time.Duration, bool) {
	return n.w.duration(n.at(key), n.get(key), never)
}

func (w *walker) duration(path string, v any, never bool) (time.Duration, bool) {
	if v == nil {
		return 0, false
	}
	expected := `a duration such as "30s", "1h30m" or "720h"`
	if never {
		expected = `a duration such as "30s", "1h30m" or "720h", or "Never"`
	}
	s, isStr := v.(string)
	if never && s == "Never" {
		return Never, true
	}
	d, err := time.ParseDuration(s)
	if !isStr || err != nil || d < 0 {
		w.fail(path, describe(v), expected)
		return 0, false
	}
	return d, true
}

// describe renders a JSON value for an error message.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return truncate(v)
	case json.Number:
		return string(v)
	case bool:
		return strconv.FormatBool(v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprint(v)
}

func truncate(s string) string {
	const limit = 80
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// formatDuration writes d as Karpenter manifests do: "720h", "1h30m", "30s", "Never".
func formatDuration(d time.Duration) string {
	if d == Never {
		return "Never"
	}
	if d <= 0 || d%time.Second != 0 {
		return d.String()
	}
	var b strings.Builder
	if h := d / time.Hour; h > 0 {
		b.WriteString(strconv.FormatInt(int64(h), 10) + "h")
	}
	if m := d % time.Hour / time.Minute; m > 0 {
		b.WriteString(strconv.FormatInt(int64(m), 10) + "m")
	}
	if s := d % time.Minute / time.Second; s > 0 {
		b.WriteString(strconv.FormatInt(int64(s), 10) + "s")
	}
	return b.String()
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
