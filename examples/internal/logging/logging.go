// Package logging builds the controller's slog logger so that its lines look like Karpenter
// v1.14's: one JSON object a line with the keys level (upper-case), time (ISO 8601, UTC,
// milliseconds), logger ("controller"), message, commit, error for errors, and the objects a
// line is about as nested references — "NodeClaim": {"name": …}, "Node", "NodePool",
// "Pod": {"namespace": …, "name": …} — so log queries written for Karpenter
// (`message="launched nodeclaim"`, `NodeClaim.name=…`) find the same lines here. client-go's
// own lines (klog) are routed into the same logger.
//
// It does not sample repeated lines (zap does, above 100 a second) and never prints a caller
// (Karpenter does at debug level).
//
// # Usage
//
//	log, err := logging.New(logging.Options{Level: os.Getenv("LOG_LEVEL"), Writer: os.Stdout})
//	if err != nil { … }
//	logging.RouteKlog(log)
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// Options configure New. The zero value writes JSON at info level to nowhere (io.Discard).
type Options struct {
	// Level is Karpenter's LOG_LEVEL: debug, info (the default when empty) or error.
	Level string
	// Format is json (the default when empty) or text (for a terminal).
	Format string
	// Writer receives the lines.
	Writer io.Writer
}

// ParseLevel reads Karpenter's LOG_LEVEL values.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "error":
		return slog.LevelError, nil
	case "warn":
		return slog.LevelWarn, nil
	}
	return 0, fmt.Errorf("logging: unknown log level %q (want debug, info or error)", s)
}

// New returns a logger writing Karpenter's layout (see the package doc).
func New(o Options) (*slog.Logger, error) {
	level, err := ParseLevel(o.Level)
	if err != nil {
		return nil, err
	}
	w := o.Writer
	if w == nil {
		w = io.Discard
	}
	var h slog.Handler
	switch o.Format {
	case "", "json":
		h = NewJSONHandler(w, level)
	case "text":
		h = slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: replaceAttr})
	default:
		return nil, fmt.Errorf("logging: unknown log format %q (want json or text)", o.Format)
	}
	return slog.New(h), nil
}

// NewJSONHandler is the handler of New for JSON: Karpenter's keys, the logger name and the
// binary's commit on every line.
func NewJSONHandler(w io.Writer, level slog.Leveler) slog.Handler {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: replaceAttr})
	return h.WithAttrs([]slog.Attr{slog.String("logger", "controller"), slog.String("commit", commit())})
}

// RouteKlog sends client-go's klog lines (leader election, reflector and event broadcaster
// messages, throttling notices) through log, so every line the process writes has one layout.
func RouteKlog(log *slog.Logger) {
	klog.SetSlogLogger(log)
}

// objectKeys maps the controller's attribute keys for objects to Karpenter's nested references.
var objectKeys = map[string]string{
	"nodeclaim": "NodeClaim",
	"node":      "Node",
	"nodepool":  "NodePool",
	"pod":       "Pod",
}

func replaceAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.MessageKey:
		a.Key = "message"
	case slog.TimeKey:
		if t, ok := a.Value.Any().(time.Time); ok {
			a.Value = slog.StringValue(t.UTC().Format("2006-01-02T15:04:05.000Z"))
		}
	case slog.LevelKey:
		if l, ok := a.Value.Any().(slog.Level); ok && l == slog.LevelWarn {
			a.Value = slog.StringValue("WARN")
		}
	case "err":
		a.Key = "error"
	default:
		kind, ok := objectKeys[a.Key]
		if !ok || a.Value.Kind() != slog.KindString || a.Value.String() == "" {
			return a
		}
		name := a.Value.String()
		if ns, n, ok := strings.Cut(name, "/"); ok && kind == "Pod" {
			return slog.Group(kind, slog.String("namespace", ns), slog.String("name", n))
		}
		return slog.Group(kind, slog.String("name", name))
	}
	return a
}

// commit is the VCS revision the binary was built from, as Karpenter's commit key.
func commit() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return ""
}
