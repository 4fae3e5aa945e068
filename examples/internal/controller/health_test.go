package controller

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func probe(t *testing.T, h *Health, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

// TestReadyz walks a replica through start, leadership, cache sync and a cloud outage.
func TestReadyz(t *testing.T) {
	now := time.Unix(0, 0)
	cloudErr := errors.New("RequestError: send request failed")
	calls := 0
	h := &Health{Now: func() time.Time { return now }, CloudCheck: func(context.Context) error {
		calls++
		return cloudErr
	}}
	steps := []struct {
		do       func()
		wantCode int
		wantBody string
	}{
		{func() {}, 503, "apiserver: not answered yet"},
		{h.SetStarted, 200, "ok"}, // a standby is ready once the API server answered
		{func() { h.SetLeading(true) }, 503, "caches: informer caches not synced"},
		{func() { h.setSynced(true) }, 503, "cloud: RequestError"},
		{func() { cloudErr = nil }, 503, "cloud: RequestError"}, // the last answer is reused for 30s
		{func() { now = now.Add(31 * time.Second) }, 200, "ok"},
		{func() { h.SetLeading(false) }, 200, "ok"},
	}
	for i, s := range steps {
		s.do()
		code, body := probe(t, h, "/readyz")
		if code != s.wantCode || !strings.Contains(body, s.wantBody) {
			t.Errorf("step %d: /readyz = %d %q, want %d containing %q", i, code, body, s.wantCode, s.wantBody)
		}
		if code, _ := probe(t, h, "/healthz"); code != 200 {
			t.Errorf("step %d: /healthz = %d, want 200", i, code)
		}
	}
	if calls != 2 {
		t.Errorf("cloud checked %d times, want 2 (cached between)", calls)
	}
}
