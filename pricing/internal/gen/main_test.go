package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedFileIsCurrent fails when zz_generated_prices.go was not regenerated after the
// shared price data changed: run go generate ./pricing.
func TestGeneratedFileIsCurrent(t *testing.T) {
	const in = "../../../../shared/data/aws-on-demand-prices.json"
	if _, err := os.Stat(in); err != nil {
		t.Skipf("shared price data not available: %v", err)
	}
	out := filepath.Join(t.TempDir(), "prices.go")
	if err := run(in, out); err != nil {
		t.Fatalf("run() error = %v", err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../zz_generated_prices.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("zz_generated_prices.go is stale: run go generate ./pricing")
	}
}
