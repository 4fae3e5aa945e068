package nodeplan

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Budget caps how many of a NodePool's nodes may be disrupting at once, optionally only during a
// recurring window and only for some reasons. Budgets limit concurrency, not rate: a budget of 2
// lets two nodes be disrupting at any moment, however many finish in an hour.
type Budget struct {
	// Nodes is the cap: a count, or a percentage of the pool's nodes rounded up.
	Nodes NodeCount
	// Schedule, when set, makes the budget active only for Duration after each of its times
	// (cron, evaluated in UTC). A nil Schedule is always active.
	Schedule *Schedule
	// Duration is how long the budget stays active after each Schedule time.
	Duration time.Duration
	// Reasons limits the budget to these disruption reasons; empty means all of them.
	Reasons []DisruptionReason
}

// NodeCount is a number of nodes, or a percentage of some total.
type NodeCount struct {
	Value   int
	Percent bool
}

// ParseNodeCount reads "5" or "10%" (0-100%).
func ParseNodeCount(s string) (NodeCount, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 100 || p != strconv.Itoa(n) {
			return NodeCount{}, fmt.Errorf("%q is not a node count or a percentage 0-100%%", s)
		}
		return NodeCount{Value: n, Percent: true}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || s != strconv.Itoa(n) {
		return NodeCount{}, fmt.Errorf("%q is not a node count or a percentage 0-100%%", s)
	}
	return NodeCount{Value: n}, nil
}

// Of returns the count for a total of nodes: the value itself, or the percentage of total
// rounded up (10% of 5 nodes is 1), as PodDisruptionBudgets round maxUnavailable.
func (c NodeCount) Of(total int) int {
	if !c.Percent {
		return c.Value
	}
	return int(math.Ceil(float64(c.Value) * float64(total) / 100))
}

func (c NodeCount) String() string {
	if c.Percent {
		return strconv.Itoa(c.Value) + "%"
	}
	return strconv.Itoa(c.Value)
}

// defaultBudgets is what a NodePool has when it names none: 10% of its nodes. Never modified.
var defaultBudgets = []Budget{{Nodes: NodeCount{Value: 10, Percent: true}}}

// Active reports whether the budget applies at now.
func (b Budget) Active(now time.Time) bool {
	if b.Schedule == nil {
		return true
	}
	return b.Schedule.ActiveWithin(now, b.Duration)
}

// AppliesTo reports whether the budget covers reason.
func (b Budget) AppliesTo(reason DisruptionReason) bool {
	return len(b.Reasons) == 0 || slices.Contains(b.Reasons, reason)
}

// AllowedDisruptions returns how many of a pool's total nodes may be disrupting at once for
// reason at now: the minimum over the active budgets that cover the reason (percentages of
// total, rounded up). It is math.MaxInt when no budget constrains the reason. Nodes already
// disrupting are the caller's to subtract.
func (d Disruption) AllowedDisruptions(reason DisruptionReason, total int, now time.Time) int {
	budgets := d.Budgets
	if budgets == nil {
		budgets = defaultBudgets
	}
	allowed := math.MaxInt
	for _, b := range budgets {
		if b.AppliesTo(reason) && b.Active(now) {
			allowed = min(allowed, b.Nodes.Of(total))
		}
	}
	return allowed
}

// ActiveBudget returns the budget that sets [Disruption.AllowedDisruptions] — the active one with
// the lowest cap — so a message can name it. ok is false when none constrains the reason.
func (d Disruption) ActiveBudget(reason DisruptionReason, total int, now time.Time) (b Budget, index int, ok bool) {
	budgets := d.Budgets
	if budgets == nil {
		budgets = defaultBudgets
	}
	best := math.MaxInt
	index = -1
	for i, c := range budgets {
		if c.AppliesTo(reason) && c.Active(now) && c.Nodes.Of(total) < best {
			best, b, index, ok = c.Nodes.Of(total), c, i, true
		}
	}
	return b, index, ok
}

// Schedule is a standard five-field cron expression (minute hour day-of-month month
// day-of-week), evaluated in UTC, as Karpenter's budget schedules are. Fields take *, numbers,
// ranges a-b, steps */n and a-b/n, and comma lists; months and weekdays also take names (jan,
// mon). The macros @yearly, @annually, @monthly, @weekly, @daily, @midnight and @hourly are
// accepted. As in cron, when both day-of-month and day-of-week are restricted a day matching
// either is a hit. The grammar is exactly what Karpenter accepts: it evaluates budgets with
// github.com/robfig/cron/v3's standard parser, and a test holds this one to it — so day-of-week
// runs 0–6 (Sunday is 0; the 7 some crons allow is rejected, since Karpenter would never fire
// such a budget).
type Schedule struct {
	expr                          string
	minute, hour, dom, month, dow uint64 // bitsets
	domStar, dowStar              bool
}

var cronMacros = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
	"@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

var (
	monthNames = []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	dayNames   = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
)

// ParseSchedule parses a cron expression; the error says which field is wrong and why.
func ParseSchedule(expr string) (*Schedule, error) {
	s := &Schedule{expr: expr}
	e := strings.TrimSpace(expr)
	if m, ok := cronMacros[strings.ToLower(e)]; ok {
		e = m
	}
	fields := strings.Fields(e)
	if len(fields) != 5 {
		return nil, fmt.Errorf("%q is not a cron schedule: want 5 fields (minute hour day-of-month month day-of-week), got %d", expr, len(fields))
	}
	var err error
	parse := func(i int, name string, lo, hi int, names []string, nameBase int) (uint64, bool) {
		if err != nil {
			return 0, false
		}
		var bits uint64
		bits, err = parseCronField(fields[i], lo, hi, names, nameBase)
		if err != nil {
			err = fmt.Errorf("%q is not a cron schedule: %s field %q: %v", expr, name, fields[i], err)
		}
		return bits, cronStar(fields[i])
	}
	s.minute, _ = parse(0, "minute", 0, 59, nil, 0)
	s.hour, _ = parse(1, "hour", 0, 23, nil, 0)
	s.dom, s.domStar = parse(2, "day-of-month", 1, 31, nil, 0)
	s.month, _ = parse(3, "month", 1, 12, monthNames, 1)
	s.dow, s.dowStar = parse(4, "day-of-week", 0, 6, dayNames, 0)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// cronStar reports whether a day field counts as unrestricted when combining day-of-month and
// day-of-week, as the robfig/cron parser Karpenter uses decides it: some part of it is * or ?
// with no step, or a step of 1. A stepped star restricts: "0 0 */2 * 1" fires on odd days and
// on Mondays, while "0 0 * * 1" fires on Mondays only.
func cronStar(field string) bool {
	for _, part := range strings.Split(field, ",") {
		rng, step, stepped := strings.Cut(part, "/")
		if (rng == "*" || rng == "?") && (!stepped || step == "1") {
			return true
		}
	}
	return false
}

func parseCronField(f string, lo, hi int, names []string, nameBase int) (uint64, error) {
	var bits uint64
	num := func(v string) (int, error) {
		for i, n := range names {
			if strings.EqualFold(v, n) {
				return i + nameBase, nil
			}
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number", v)
		}
		if n < lo || n > hi {
			return 0, fmt.Errorf("%d is out of range %d-%d", n, lo, hi)
		}
		return n, nil
	}
	for _, part := range strings.Split(f, ",") {
		rng, stepStr, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepStr)
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("step %q is not a positive number", stepStr)
			}
			step = n
		}
		start, end := lo, hi
		switch {
		case rng == "*" || rng == "?":
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if start, err = num(a); err != nil {
				return 0, err
			}
			if end, err = num(b); err != nil {
				return 0, err
			}
			if start > end {
				return 0, fmt.Errorf("range %s runs backwards", rng)
			}
		default:
			n, err := num(rng)
			if err != nil {
				return 0, err
			}
			start, end = n, n
			if hasStep {
				end = hi
			}
		}
		for v := start; v <= end; v += step {
			bits |= 1 << uint(v)
		}
	}
	return bits, nil
}

// String returns the expression as written.
func (s *Schedule) String() string { return s.expr }

// Equal reports whether s and o fire at the same times ("@daily" equals "0 0 * * *"). Two nil
// schedules are equal. It also lets go-cmp compare values holding a Schedule.
func (s *Schedule) Equal(o *Schedule) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.minute == o.minute && s.hour == o.hour && s.dom == o.dom && s.month == o.month && s.dow == o.dow &&
		s.domStar == o.domStar && s.dowStar == o.dowStar
}

// Matches reports whether t (in UTC, truncated to the minute) is one of the schedule's times.
func (s *Schedule) Matches(t time.Time) bool {
	t = t.UTC()
	return s.minute&(1<<uint(t.Minute())) != 0 && s.hour&(1<<uint(t.Hour())) != 0 && s.dayMatches(t)
}

func (s *Schedule) dayMatches(t time.Time) bool {
	if s.month&(1<<uint(t.Month())) == 0 {
		return false
	}
	domOK := s.dom&(1<<uint(t.Day())) != 0
	dowOK := s.dow&(1<<uint(t.Weekday())) != 0
	if s.domStar || s.dowStar {
		return domOK && dowOK
	}
	return domOK || dowOK
}

// ActiveWithin reports whether some schedule time falls in (now − d, now]: a window of length d
// opened by that time is still open at now.
func (s *Schedule) ActiveWithin(now time.Time, d time.Duration) bool {
	_, ok := s.Previous(now, d)
	return ok
}

// Previous returns the latest schedule time at or before now and after now − within.
func (s *Schedule) Previous(now time.Time, within time.Duration) (time.Time, bool) {
	now = now.UTC().Truncate(time.Minute)
	earliest := now.Add(-within)
	// Walk back day by day, and within a matching day hour by hour, so long windows stay cheap.
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	for ; !day.Add(24 * time.Hour).Before(earliest); day = day.AddDate(0, 0, -1) {
		if !s.dayMatches(day) {
			continue
		}
		for h := 23; h >= 0; h-- {
			if s.hour&(1<<uint(h)) == 0 {
				continue
			}
			for m := 59; m >= 0; m-- {
				if s.minute&(1<<uint(m)) == 0 {
					continue
				}
				t := day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
				if t.After(now) {
					continue
				}
				if !t.After(earliest) {
					return time.Time{}, false
				}
				return t, true
			}
		}
	}
	return time.Time{}, false
}
