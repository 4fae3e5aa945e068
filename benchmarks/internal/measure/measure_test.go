package measure

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{3}, 3},
		{[]time.Duration{5, 1, 3}, 3},
		{[]time.Duration{4, 1, 3, 2}, 2},
	} {
		if got := Median(tc.in); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestRepeat(t *testing.T) {
	calls := 0
	tm, err := Repeat(context.Background(), Options{Runs: 3}, func(context.Context) error {
		calls++
		time.Sleep(time.Millisecond)
		return nil
	})
	if err != nil || calls != 3 || tm.Runs != 3 || tm.Wall < time.Millisecond {
		t.Errorf("Repeat(3 runs) = %+v, %v after %d calls, want 3 runs of at least 1ms", tm, err, calls)
	}
	calls = 0
	tm, _ = Repeat(context.Background(), Options{Runs: 5, Budget: time.Nanosecond}, func(context.Context) error {
		calls++
		return nil
	})
	if calls != 1 || tm.Runs != 1 {
		t.Errorf("Repeat(budget spent) made %d calls, want 1", calls)
	}
	boom := errors.New("boom")
	if _, err := Repeat(context.Background(), Options{}, func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Repeat(failing) = %v, want %v", err, boom)
	}
}
