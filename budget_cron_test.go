package nodeplan

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"pgregory.net/rapid"
)

// Karpenter evaluates budget schedules with github.com/robfig/cron/v3's standard parser. The
// two tests below hold ParseSchedule to it: the same expressions accepted, and for each
// accepted one the same minutes matched. The library is a test dependency only: nodeplan keeps
// its own parser because it needs Previous (the library only walks forward) and field-naming
// errors.

// cronField draws one field of a cron expression from the grammar both parsers share, with
// values a little outside the field's range so rejections are exercised too.
func cronField(t *rapid.T, label string, lo, hi int, names []string) string {
	value := func(l string) string {
		if len(names) > 0 && rapid.Bool().Draw(t, l+"-named") {
			n := rapid.SampledFrom(names).Draw(t, l+"-name")
			if rapid.Bool().Draw(t, l+"-upper") {
				n = strings.ToUpper(n)
			}
			return n
		}
		return fmt.Sprint(rapid.IntRange(lo-1, hi+1).Draw(t, l))
	}
	parts := rapid.IntRange(1, 3).Draw(t, label+"-parts")
	var out []string
	for i := range parts {
		l := fmt.Sprintf("%s-%d", label, i)
		var p string
		switch rapid.IntRange(0, 4).Draw(t, l+"-kind") {
		case 0:
			p = rapid.SampledFrom([]string{"*", "?"}).Draw(t, l+"-star")
		case 1:
			p = value(l + "-v")
		case 2:
			p = value(l+"-a") + "-" + value(l+"-b")
		case 3:
			p = rapid.SampledFrom([]string{"*", value(l + "-s"), value(l+"-ra") + "-" + value(l+"-rb")}).Draw(t, l+"-base")
			p += "/" + fmt.Sprint(rapid.IntRange(0, hi+1).Draw(t, l+"-step"))
		default:
			p = "*"
		}
		out = append(out, p)
	}
	return strings.Join(out, ",")
}

func cronExpr(t *rapid.T) string {
	if rapid.IntRange(0, 9).Draw(t, "macro?") == 0 {
		return rapid.SampledFrom([]string{"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}).Draw(t, "macro")
	}
	return strings.Join([]string{
		cronField(t, "minute", 0, 59, nil),
		cronField(t, "hour", 0, 23, nil),
		cronField(t, "dom", 1, 31, nil),
		cronField(t, "month", 1, 12, monthNames),
		cronField(t, "dow", 0, 6, dayNames),
	}, " ")
}

func TestScheduleAgreesWithKarpentersCronParser(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		expr := cronExpr(t)
		ours, ourErr := ParseSchedule(expr)
		theirs, theirErr := cron.ParseStandard(expr)
		if (ourErr == nil) != (theirErr == nil) {
			t.Fatalf("ParseSchedule(%q) error = %v; robfig/cron ParseStandard error = %v; want both to accept or both to reject", expr, ourErr, theirErr)
		}
		if ourErr != nil {
			return
		}
		// A minute t is a schedule time exactly when the library's next time after t−1m is t.
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rapid.IntRange(0, 4*365*24*60).Draw(t, "start")) * time.Minute)
		for i := range 64 {
			at := start.Add(time.Duration(i*rapid.IntRange(1, 997).Draw(t, "stride")) * time.Minute)
			want := theirs.Next(at.Add(-time.Minute)).Equal(at)
			if got := ours.Matches(at); got != want {
				t.Fatalf("ParseSchedule(%q).Matches(%v) = %v, want %v (robfig/cron)", expr, at, got, want)
			}
		}
	})
}

func TestScheduleRejectsWhatKarpenterRejects(t *testing.T) {
	for _, expr := range []string{
		"0 0 * * 7",     // robfig/cron's day-of-week is 0–6; Karpenter never fires this budget
		"0 0 * * 1-7",   // likewise
		"0 0 * * */0",   // a zero step
		"60 * * * *",    // minute out of range
		"0 0 0 * *",     // day-of-month starts at 1
		"@every 1h",     // accepted by the library but refused by Karpenter's CRD pattern
		"0 0 * * * *",   // six fields
		"0 0 L * *",     // no L/W/# extensions
		"0 0 * * mon#2", //
	} {
		if s, err := ParseSchedule(expr); err == nil {
			t.Errorf("ParseSchedule(%q) = %v, nil; want an error", expr, s)
		}
	}
}
