package nodeplan

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

func TestParseNodeCount(t *testing.T) {
	tests := []struct {
		in   string
		want NodeCount
		ok   bool
	}{
		{"0", NodeCount{}, true},
		{"5", NodeCount{Value: 5}, true},
		{"120", NodeCount{Value: 120}, true},
		{"0%", NodeCount{Value: 0, Percent: true}, true},
		{"10%", NodeCount{Value: 10, Percent: true}, true},
		{"100%", NodeCount{Value: 100, Percent: true}, true},
		{"110%", NodeCount{}, false},
		{"-1", NodeCount{}, false},
		{"-1%", NodeCount{}, false},
		{"1.5", NodeCount{}, false},
		{"05", NodeCount{}, false},
		{"+5", NodeCount{}, false},
		{"%", NodeCount{}, false},
		{"", NodeCount{}, false},
		{" 5", NodeCount{}, false},
		{"5 %", NodeCount{}, false},
		{"ten", NodeCount{}, false},
	}
	for _, tt := range tests {
		got, err := ParseNodeCount(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseNodeCount(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if err == nil && got.String() != tt.in {
			t.Errorf("ParseNodeCount(%q).String() = %q, want %q", tt.in, got.String(), tt.in)
		}
	}
}

func TestNodeCountOf(t *testing.T) {
	tests := []struct {
		c     NodeCount
		total int
		want  int
	}{
		{NodeCount{Value: 10, Percent: true}, 5, 1}, // percentages round up
		{NodeCount{Value: 10, Percent: true}, 10, 1},
		{NodeCount{Value: 10, Percent: true}, 11, 2},
		{NodeCount{Value: 10, Percent: true}, 0, 0},
		{NodeCount{Value: 33, Percent: true}, 10, 4},
		{NodeCount{Value: 50, Percent: true}, 3, 2},
		{NodeCount{Value: 100, Percent: true}, 7, 7},
		{NodeCount{Value: 0, Percent: true}, 1000, 0},
		{NodeCount{Value: 1, Percent: true}, 1, 1},
		{NodeCount{Value: 3}, 1, 3}, // a count is not capped by the total
		{NodeCount{Value: 0}, 10, 0},
	}
	for _, tt := range tests {
		if got := tt.c.Of(tt.total); got != tt.want {
			t.Errorf("NodeCount(%v).Of(%d) = %d, want %d", tt.c, tt.total, got, tt.want)
		}
	}
}

func TestAllowedDisruptions(t *testing.T) {
	business := mustSchedule(t, "0 9-18 * * 1-5")
	monday := func(h, m int) time.Time { return time.Date(2026, time.August, 24, h, m, 0, 0, time.UTC) }
	blockBusinessHours := Budget{Nodes: NodeCount{Value: 0}, Schedule: business, Duration: time.Hour}
	tests := []struct {
		name    string
		budgets []Budget
		reason  DisruptionReason
		total   int
		now     time.Time
		want    int
	}{
		{"default 10% rounds up", nil, ReasonEmpty, 5, monday(10, 0), 1},
		{"default 10% of 25", nil, ReasonDrifted, 25, monday(10, 0), 3},
		{"empty list: no limit", []Budget{}, ReasonEmpty, 5, monday(10, 0), math.MaxInt},
		{"blocked at 10:00 Monday", []Budget{blockBusinessHours}, ReasonUnderutilized, 10, monday(10, 0), 0},
		{"blocked at 9:00 sharp", []Budget{blockBusinessHours}, ReasonUnderutilized, 10, monday(9, 0), 0},
		{"blocked until 18:59", []Budget{blockBusinessHours}, ReasonUnderutilized, 10, monday(18, 59), 0},
		{"open at 19:00", []Budget{blockBusinessHours}, ReasonUnderutilized, 10, monday(19, 0), math.MaxInt},
		{"open at 20:00", []Budget{blockBusinessHours}, ReasonUnderutilized, 10, monday(20, 0), math.MaxInt},
		{"open at 8:59", []Budget{blockBusinessHours}, ReasonUnderutilized, 10, monday(8, 59), math.MaxInt},
		{"open on Sunday", []Budget{blockBusinessHours}, ReasonUnderutilized, 10, monday(10, 0).AddDate(0, 0, -1), math.MaxInt},
		{"seconds count within the minute", []Budget{blockBusinessHours}, ReasonEmpty, 10, monday(18, 59).Add(59 * time.Second), 0},
		{"min of active budgets", []Budget{{Nodes: NodeCount{Value: 5}}, {Nodes: NodeCount{Value: 20, Percent: true}}}, ReasonEmpty, 10, monday(10, 0), 2},
		{"min includes the scheduled one", []Budget{{Nodes: NodeCount{Value: 5}}, blockBusinessHours}, ReasonEmpty, 10, monday(10, 0), 0},
		{"inactive scheduled budget ignored", []Budget{{Nodes: NodeCount{Value: 5}}, blockBusinessHours}, ReasonEmpty, 10, monday(20, 0), 5},
		{"reason not covered", []Budget{{Nodes: NodeCount{Value: 0}, Reasons: []DisruptionReason{ReasonDrifted}}}, ReasonEmpty, 10, monday(10, 0), math.MaxInt},
		{"reason covered", []Budget{{Nodes: NodeCount{Value: 0}, Reasons: []DisruptionReason{ReasonDrifted}}}, ReasonDrifted, 10, monday(10, 0), 0},
		{"per-reason budgets", []Budget{
			{Nodes: NodeCount{Value: 1}, Reasons: []DisruptionReason{ReasonDrifted}},
			{Nodes: NodeCount{Value: 50, Percent: true}, Reasons: []DisruptionReason{ReasonEmpty, ReasonUnderutilized}},
		}, ReasonUnderutilized, 10, monday(10, 0), 5},
	}
	for _, tt := range tests {
		d := Disruption{Budgets: tt.budgets}
		got := d.AllowedDisruptions(tt.reason, tt.total, tt.now)
		if got != tt.want {
			t.Errorf("%s: AllowedDisruptions(%s, %d, %v) = %d, want %d", tt.name, tt.reason, tt.total, tt.now.Format(time.RFC1123), got, tt.want)
		}
		b, i, ok := d.ActiveBudget(tt.reason, tt.total, tt.now)
		if ok != (tt.want != math.MaxInt) || (ok && b.Nodes.Of(tt.total) != tt.want) {
			t.Errorf("%s: ActiveBudget(%s, %d, %v) = %v, %d, %v; want a budget allowing %d", tt.name, tt.reason, tt.total, tt.now, b, i, ok, tt.want)
		}
	}
}

func TestParseScheduleErrors(t *testing.T) {
	tests := []struct {
		expr string
		want string // part of the error
	}{
		{"", "want 5 fields"},
		{"* * * *", "want 5 fields"},
		{"* * * * * *", "want 5 fields"},
		{"60 * * * *", "minute field"},
		{"* 24 * * *", "hour field"},
		{"* * 0 * *", "day-of-month field"},
		{"* * 32 * *", "day-of-month field"},
		{"* * * 13 *", "month field"},
		{"* * * foo *", "month field"},
		{"* * * * 8", "day-of-week field"},
		{"*/0 * * * *", "step"},
		{"*/x * * * *", "step"},
		{"5-1 * * * *", "backwards"},
		{"a-5 * * * *", "minute field"},
		{"1,,2 * * * *", "minute field"},
		{"@never", "want 5 fields"},
	}
	for _, tt := range tests {
		s, err := ParseSchedule(tt.expr)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseSchedule(%q) = %v, %v; want an error mentioning %q", tt.expr, s, err, tt.want)
		}
	}
}

func TestScheduleMatches(t *testing.T) {
	at := func(month time.Month, day, h, m int) time.Time {
		return time.Date(2026, month, day, h, m, 0, 0, time.UTC)
	}
	// 2026-08-24 is a Monday; 2026-08-23 a Sunday.
	tests := []struct {
		expr string
		t    time.Time
		want bool
	}{
		{"0 9-18 * * 1-5", at(8, 24, 9, 0), true},
		{"0 9-18 * * 1-5", at(8, 24, 18, 0), true},
		{"0 9-18 * * 1-5", at(8, 24, 19, 0), false},
		{"0 9-18 * * 1-5", at(8, 24, 9, 1), false},
		{"0 9-18 * * 1-5", at(8, 23, 10, 0), false},
		{"0 9-18 * * mon-fri", at(8, 28, 12, 0), true},
		{"*/15 * * * *", at(8, 24, 3, 45), true},
		{"*/15 * * * *", at(8, 24, 3, 46), false},
		{"5/20 * * * *", at(8, 24, 3, 45), true},
		{"0 0 * * 0", at(8, 23, 0, 0), true},
		{"0 0 * * sun", at(8, 24, 0, 0), false},
		{"@daily", at(8, 24, 0, 0), true},
		{"@hourly", at(8, 24, 7, 0), true},
		{"@weekly", at(8, 23, 0, 0), true},
		{"@monthly", at(9, 1, 0, 0), true},
		{"@yearly", at(1, 1, 0, 0), true},
		{"0 0 1 jan *", at(1, 1, 0, 0), true},
		// Both day fields restricted: either matches.
		{"0 0 1 * 1", at(8, 24, 0, 0), true},
		{"0 0 1 * 1", at(9, 1, 0, 0), true},
		{"0 0 1 * 1", at(9, 2, 0, 0), false},
		// A stepped star restricts (robfig/cron, which Karpenter uses): odd days or Mondays.
		{"0 0 */2 * 1", at(8, 24, 0, 0), true},  // an even Monday
		{"0 0 */2 * 1", at(8, 25, 0, 0), true},  // an odd Tuesday
		{"0 0 */2 * 1", at(8, 26, 0, 0), false}, // an even Wednesday
		{"0 0 * * 1", at(8, 25, 0, 0), false},   // a plain star does not widen the day
		{"0 0 1,15 * *", at(8, 15, 0, 0), true},
		{"0 12 * * *", time.Date(2026, 8, 24, 14, 0, 0, 0, time.FixedZone("CEST", 2*3600)), true}, // evaluated in UTC
	}
	for _, tt := range tests {
		s := mustSchedule(t, tt.expr)
		if got := s.Matches(tt.t); got != tt.want {
			t.Errorf("ParseSchedule(%q).Matches(%v) = %v, want %v", tt.expr, tt.t, got, tt.want)
		}
	}
}

func TestScheduleEqual(t *testing.T) {
	if !mustSchedule(t, "@daily").Equal(mustSchedule(t, "0 0 * * *")) {
		t.Error(`ParseSchedule("@daily").Equal("0 0 * * *") = false, want true`)
	}
	if mustSchedule(t, "0 0 * * 1").Equal(mustSchedule(t, "0 0 * * 2")) {
		t.Error(`ParseSchedule("0 0 * * 1").Equal("0 0 * * 2") = true, want false`)
	}
	var none *Schedule
	if !none.Equal(nil) || none.Equal(mustSchedule(t, "@daily")) {
		t.Error("nil schedules: Equal is wrong")
	}
}

func genCronField(lo, hi int) *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		n := rapid.IntRange(1, 2).Draw(t, "parts")
		var parts []string
		for range n {
			a := rapid.IntRange(lo, hi).Draw(t, "a")
			b := rapid.IntRange(a, hi).Draw(t, "b")
			step := rapid.IntRange(1, 7).Draw(t, "step")
			parts = append(parts, rapid.SampledFrom([]string{
				"*", fmt.Sprint(a), fmt.Sprintf("%d-%d", a, b), fmt.Sprintf("*/%d", step),
				fmt.Sprintf("%d-%d/%d", a, b, step), fmt.Sprintf("%d/%d", a, step),
			}).Draw(t, "form"))
		}
		return strings.Join(parts, ",")
	})
}

// Previous agrees with a minute-by-minute scan back through the window.
func TestSchedulePreviousBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		expr := strings.Join([]string{
			genCronField(0, 59).Draw(t, "minute"),
			genCronField(0, 23).Draw(t, "hour"),
			genCronField(1, 31).Draw(t, "dom"),
			genCronField(1, 12).Draw(t, "month"),
			genCronField(0, 6).Draw(t, "dow"),
		}, " ")
		s, err := ParseSchedule(expr)
		if err != nil {
			t.Fatalf("ParseSchedule(%q): %v", expr, err)
		}
		base := time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)
		now := base.Add(time.Duration(rapid.Int64Range(0, 2*365*24*3600).Draw(t, "now")) * time.Second)
		within := time.Duration(rapid.IntRange(0, 3*24*60).Draw(t, "within")) * time.Minute
		if rapid.Bool().Draw(t, "odd seconds") {
			within += time.Duration(rapid.IntRange(1, 59).Draw(t, "seconds")) * time.Second
		}

		var want time.Time
		found := false
		cur := now.Truncate(time.Minute)
		for earliest := cur.Add(-within); cur.After(earliest); cur = cur.Add(-time.Minute) {
			if s.Matches(cur) {
				want, found = cur, true
				break
			}
		}
		got, ok := s.Previous(now, within)
		if ok != found || !got.Equal(want) {
			t.Fatalf("ParseSchedule(%q).Previous(%v, %v) = %v, %v; want %v, %v", expr, now, within, got, ok, want, found)
		}
		if active := s.ActiveWithin(now, within); active != found {
			t.Fatalf("ParseSchedule(%q).ActiveWithin(%v, %v) = %v, want %v", expr, now, within, active, found)
		}
	})
}

func TestBudgetReasons(t *testing.T) {
	b := Budget{Nodes: NodeCount{Value: 1}, Reasons: []DisruptionReason{ReasonEmpty, ReasonDrifted}}
	got := map[DisruptionReason]bool{}
	for _, r := range []DisruptionReason{ReasonEmpty, ReasonUnderutilized, ReasonDrifted, ReasonExpired} {
		got[r] = b.AppliesTo(r)
	}
	want := map[DisruptionReason]bool{ReasonEmpty: true, ReasonUnderutilized: false, ReasonDrifted: true, ReasonExpired: false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("AppliesTo mismatch (-want +got):\n%s", diff)
	}
	if all := (Budget{}); !all.AppliesTo(ReasonUnderutilized) {
		t.Error("a budget without reasons must apply to every reason")
	}
}
