package sim

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/examples/internal/controller"
)

// Timeline prints a run's story, one line per step, stamped with the simulated time since
// Start. The controller's steps come from its typed event stream ([controller.Event], through
// Controller.Events), not from its log text; the script's own lines come from [Timeline.Say]:
//
//	00:00:02 launched nodeclaim default-x7k2p nodepool=default instance-type=c6a.2xlarge zone=us-east-1a … pods=5
//
// Prices print as $/h, resource lists as cpu:7910m,memory:14162Mi. [Timeline.Handler] also
// prints log records (the -v mode's debug lines) in the same layout. Safe for concurrent use.
type Timeline struct {
	W     io.Writer
	Now   func() time.Time
	Start time.Time

	mu *sync.Mutex
}

// NewTimeline returns a Timeline writing to w.
func NewTimeline(w io.Writer, now func() time.Time, start time.Time) *Timeline {
	return &Timeline{W: w, Now: now, Start: start, mu: &sync.Mutex{}}
}

// field is one key=value of a line; an empty key prints the value bare.
type field struct {
	key string
	val any
}

func kv(key string, val any) field { return field{key, val} }

// Event prints the controller's event as a line. Kinds it does not know print as their kind
// and the fields set.
func (t *Timeline) Event(e controller.Event) {
	var msg string
	var fs []field
	switch e.Kind {
	case controller.EventStarted:
		msg, fs = "controller started", []field{kv("nodepools", e.Pools), kv("claims", e.Count)}
	case controller.EventSolved:
		msg, fs = "found provisionable pod(s)", []field{kv("pods", e.Pods)}
		if e.BufferPods > 0 {
			fs = append(fs, kv("buffer-pods", e.BufferPods))
		}
		fs = append(fs, kv("nodeclaims", e.NodeClaims))
		if e.NodeClaims > 0 {
			fs = append(fs, kv("cost", controller.Dollars(e.Cost)))
		}
		if e.NodeCost != 0 {
			fs = append(fs, kv("node-cost", controller.Dollars(e.NodeCost)))
		}
	case controller.EventPodUnschedulable:
		msg, fs = "could not schedule pod "+e.Pod, []field{kv("reason", e.Reason), kv("message", e.Message)}
	case controller.EventNodeClaimCreated:
		msg, fs = "created nodeclaim "+e.NodeClaim, []field{kv("nodepool", e.NodePool), kv("requests", resources(e.Requests)),
			kv("instance-types", firstNames(e.InstanceTypes, 5))}
	case controller.EventNodeClaimLaunched:
		msg, fs = "launched nodeclaim "+e.NodeClaim, []field{kv("nodepool", e.NodePool), kv("instance-type", e.InstanceType),
			kv("zone", e.Zone), kv("capacity-type", string(e.CapacityType)), kv("price", controller.Dollars(e.Price)),
			kv("allocatable", resources(e.Allocatable)), kv("pods", e.Pods)}
		if e.Planned != "" {
			fs = append(fs, kv("planned", e.Planned))
		}
		if e.Reason != "" {
			fs = append(fs, kv("for", e.Reason))
		}
	case controller.EventLaunchFailed:
		msg, fs = "could not launch nodeclaim "+e.NodeClaim, []field{kv("reason", e.Reason), kv("error", e.Message)}
	case controller.EventNodeClaimRegistered:
		msg, fs = "registered nodeclaim "+e.NodeClaim, []field{kv("node", e.Node)}
	case controller.EventNodeClaimInitialized:
		msg, fs = "initialized nodeclaim "+e.NodeClaim, []field{kv("node", e.Node), kv("allocatable", resources(e.Allocatable))}
	case controller.EventDrifted:
		msg, fs = "marking drifted "+e.NodeClaim, []field{kv("node", e.Node), kv("reason", e.Reason), kv("message", e.Message)}
	case controller.EventInterrupted:
		msg, fs = "received interruption "+e.NodeClaim, []field{kv("node", e.Node), kv("kind", e.Reason)}
	case controller.EventDisrupting:
		msg, fs = "disrupting node(s)", []field{kv("reason", e.Reason), kv(controller.PriceChange(e.Savings)), kv("pod-count", e.Pods)}
		if e.Replacements > 0 {
			fs = append(fs, kv("replacement-node-count", e.Replacements))
		}
		fs = append(fs, kv("disrupted-nodes", e.Nodes))
	case controller.EventDisruptionCancelled:
		msg, fs = "disruption command cancelled "+e.NodeClaim, []field{kv("node", e.Node), kv("reason", e.Reason), kv("blocked-by", e.Message)}
	case controller.EventNodeTainted:
		msg, fs = "tainted node "+e.Node, []field{kv("taint", nodeplan.TaintDisrupted+":NoSchedule")}
	case controller.EventNodeDeleted:
		msg = "deleted node " + e.Node
	case controller.EventNodeClaimDeleted:
		msg, fs = "deleted nodeclaim "+e.NodeClaim, []field{kv("node", e.Node), kv("reason", e.Reason)}
	case controller.EventStaticScale:
		msg = "provisioning nodeclaims to satisfy replica count"
		n := e.Delta
		if n < 0 {
			msg, n = "deprovisioning nodeclaims to satisfy replica count", -n
		}
		fs = []field{kv("nodepool", e.NodePool), kv("current", e.Count), kv("desired", e.Replicas), kv("count", n)}
	default:
		msg = string(e.Kind)
		for _, f := range []field{kv("nodeclaim", e.NodeClaim), kv("node", e.Node), kv("reason", e.Reason), kv("message", e.Message)} {
			if f.val != "" {
				fs = append(fs, f)
			}
		}
	}
	level := slog.LevelInfo
	if e.Kind == controller.EventPodUnschedulable || e.Kind == controller.EventLaunchFailed {
		level = slog.LevelError
	}
	t.write(e.Time, level, msg, fs)
}

// Say prints a line of the script: msg, then key-value pairs (the first value bare when msg
// ends with its key).
func (t *Timeline) Say(msg string, args ...any) {
	var fs []field
	for i := 0; i+1 < len(args); i += 2 {
		key := fmt.Sprint(args[i])
		if i == 0 && strings.HasSuffix(msg, " "+key) {
			msg += " " + format(args[i+1]) // "created deployment" + deployment=x: the value bare
			continue
		}
		fs = append(fs, kv(key, args[i+1]))
	}
	t.write(t.Now(), slog.LevelInfo, msg, fs)
}

func (t *Timeline) write(at time.Time, level slog.Level, msg string, fs []field) {
	d := at.Sub(t.Start)
	if d < 0 {
		d = 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%02d:%02d:%02d ", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
	switch {
	case level >= slog.LevelError:
		b.WriteString("ERROR ")
	case level >= slog.LevelWarn:
		b.WriteString("WARN ")
	}
	b.WriteString(msg)
	for _, f := range fs {
		b.WriteString(" " + f.key + "=" + format(f.val))
	}
	b.WriteByte('\n')
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = io.WriteString(t.W, b.String())
}

// format prints a value: strings quoted when they hold spaces, lists in brackets.
func format(v any) string {
	switch x := v.(type) {
	case string:
		if x == "" || strings.ContainsAny(x, " \t") && !strings.HasPrefix(x, "[") {
			return fmt.Sprintf("%q", x)
		}
		return x
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

// resources prints a resource list as cpu:7910m,memory:14162Mi, names sorted.
type resources corev1.ResourceList

func (r resources) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r)) {
		q := r[k]
		parts = append(parts, string(k)+":"+q.String())
	}
	return strings.Join(parts, ",")
}

func firstNames(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d other(s)", len(names)-n)
}

// Handler returns a slog.Handler printing into the timeline the records at least min and below
// max whose message is not in omit (e.g. the debug lines with -v, and errors no event tells;
// the controller's story comes from its events). Attributes named in skip are left out. When a
// message ends with the key of its first attribute ("registered nodeclaim" + nodeclaim=…) the
// value follows the message bare.
func (t *Timeline) Handler(min, max slog.Level, omit, skip []string) slog.Handler {
	return &logLines{t: t, min: min, max: max, omit: omit, skip: skip}
}

type logLines struct {
	t          *Timeline
	min, max   slog.Level
	omit, skip []string
	attrs      []slog.Attr
}

func (h *logLines) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min && l < h.max }

func (h *logLines) WithAttrs(as []slog.Attr) slog.Handler {
	out := *h
	out.attrs = append(slices.Clone(h.attrs), as...)
	return &out
}

func (h *logLines) WithGroup(string) slog.Handler { return h }

func (h *logLines) Handle(_ context.Context, r slog.Record) error {
	if !h.Enabled(context.Background(), r.Level) || slices.Contains(h.omit, r.Message) {
		return nil
	}
	attrs := slices.Clone(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a)
		return true
	})
	msg := r.Message
	var fs []field
	for i, a := range attrs {
		if slices.Contains(h.skip, a.Key) || a.Key == "controller" {
			continue // controller: the JSON records' key (Karpenter's controller name), not the timeline's
		}
		if i == 0 && strings.HasSuffix(msg, " "+a.Key) {
			msg += " " + formatValue(a.Value)
			continue
		}
		fs = append(fs, kv(a.Key, rawValue(formatValue(a.Value))))
	}
	h.t.write(h.t.Now(), r.Level, msg, fs)
	return nil
}

// rawValue is a value already formatted.
type rawValue string

func (r rawValue) String() string { return string(r) }

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
		return format(v.String())
	}
	return fmt.Sprint(v.Any())
}
