package sim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// Timeline is a slog.Handler that prints one readable line per record, stamped with the
// simulated time since Start:
//
//	00:00:03 launched nodeclaim default-x7k2p instance-type=c6a.2xlarge zone=us-east-1a price=$0.0929/h …
//
// When a message ends with the key of its first attribute ("launched nodeclaim" + nodeclaim=…)
// the value follows the message bare. Prices ($/h) print with a dollar sign, resource lists as
// cpu:7910m,memory:14162Mi. Attributes named in Skip are left out.
type Timeline struct {
	W     io.Writer
	Now   func() time.Time
	Start time.Time
	// Level is the least level printed; nil means Info.
	Level slog.Leveler
	Skip  []string

	mu    *sync.Mutex
	attrs []slog.Attr
}

// NewTimeline returns a Timeline writing to w.
func NewTimeline(w io.Writer, now func() time.Time, start time.Time, level slog.Leveler, skip ...string) *Timeline {
	return &Timeline{W: w, Now: now, Start: start, Level: level, Skip: skip, mu: &sync.Mutex{}}
}

// Enabled implements slog.Handler.
func (t *Timeline) Enabled(_ context.Context, l slog.Level) bool {
	min := slog.LevelInfo
	if t.Level != nil {
		min = t.Level.Level()
	}
	return l >= min
}

// WithAttrs implements slog.Handler.
func (t *Timeline) WithAttrs(as []slog.Attr) slog.Handler {
	out := *t
	out.attrs = append(slices.Clone(t.attrs), as...)
	return &out
}

// WithGroup implements slog.Handler; groups are flattened.
func (t *Timeline) WithGroup(string) slog.Handler { return t }

// Handle implements slog.Handler.
func (t *Timeline) Handle(_ context.Context, r slog.Record) error {
	d := t.Now().Sub(t.Start)
	if d < 0 {
		d = 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%02d:%02d:%02d ", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
	switch {
	case r.Level >= slog.LevelError:
		b.WriteString("ERROR ")
	case r.Level >= slog.LevelWarn:
		b.WriteString("WARN ")
	}
	b.WriteString(r.Message)
	attrs := slices.Clone(t.attrs)
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a)
		return true
	})
	for i, a := range attrs {
		if slices.Contains(t.Skip, a.Key) {
			continue
		}
		if i == 0 && strings.HasSuffix(r.Message, " "+a.Key) {
			b.WriteString(" " + formatValue(a.Value))
			continue
		}
		b.WriteString(" " + a.Key + "=" + formatValue(a.Value))
	}
	b.WriteByte('\n')
	t.mu.Lock()
	defer t.mu.Unlock()
	_, err := io.WriteString(t.W, b.String())
	return err
}

func formatValue(v slog.Value) string {
	if v.Kind() == slog.KindLogValuer {
		if s, ok := v.Any().(fmt.Stringer); ok {
			return s.String()
		}
		v = v.Resolve()
	}
	switch v.Kind() {
	case slog.KindGroup:
		var parts []string
		for _, a := range v.Group() {
			parts = append(parts, a.Key+":"+formatValue(a.Value))
		}
		return strings.Join(parts, ",")
	case slog.KindString:
		s := v.String()
		if s == "" || strings.ContainsAny(s, " \t") && !strings.HasPrefix(s, "[") {
			return fmt.Sprintf("%q", s)
		}
		return s
	}
	return fmt.Sprint(v.Any())
}
