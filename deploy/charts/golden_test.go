package charts

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.yaml from the charts")

// A golden file is a chart rendered as `helm template` renders it, checked in so that
// examples/e2e, a module that must not depend on Helm, can apply the chart as installed.
type golden struct {
	file, chart, release string
	values               string // over values.yaml's defaults, as -f would give them
}

// goldens are the installs examples/e2e applies: the CRD chart; the controller chart with
// the settings it requires, plain and with kubeadm joins; and shadow mode.
var goldens = []golden{
	{"nodeplan-crd.yaml", crdChart, "nodeplan-crd", ""},
	{"nodeplan.yaml", controllerChart, releaseName, strings.TrimSpace(required)},
	{"nodeplan-kubeadm.yaml", controllerChart, releaseName, strings.TrimSpace(required) + "\nkubeadm: {enabled: true, caCertHashes: [\"" + hash + "\"]}"},
	{"nodeplan-shadow.yaml", controllerChart, releaseName, "shadow: {enabled: true}"},
}

// header says where a golden file comes from and how to rewrite it.
func (g golden) header() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# helm template %s deploy/charts/%s -n %s", g.release, g.chart, namespace)
	if g.values != "" {
		b.WriteString(" -f values.yaml, with values.yaml:\n")
		for l := range strings.SplitSeq(g.values, "\n") {
			b.WriteString("#   " + l + "\n")
		}
	} else {
		b.WriteString("\n")
	}
	b.WriteString("# Rendered by deploy/charts' TestGolden through Helm's library; examples/e2e's TestInstall\n" +
		"# applies it as installed. Not to be edited: after changing the chart, rewrite it with\n" +
		"#   cd deploy && GOWORK=off go test ./charts -run TestGolden -update\n")
	return b.String()
}

// TestGolden: testdata/ holds each chart as it renders now, so that what the e2e installs is
// the chart as shipped; -update rewrites the files.
func TestGolden(t *testing.T) {
	for _, g := range goldens {
		t.Run(g.file, func(t *testing.T) {
			var values []string
			if g.values != "" {
				values = append(values, g.values)
			}
			manifest, err := renderManifest(g.chart, g.release, values...)
			if err != nil {
				t.Fatalf("render %s with %q: %v", g.chart, g.values, err)
			}
			if objs, err := decodeManifests(manifest); err != nil || len(objs) == 0 {
				t.Fatalf("render %s: %d objects (%v)", g.chart, len(objs), err)
			}
			want := g.header() + manifest
			path := filepath.Join("testdata", g.file)
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v: write it with `cd deploy && GOWORK=off go test ./charts -run TestGolden -update`", err)
			}
			if string(got) != want {
				t.Errorf("deploy/charts/%s is not %s as it renders now (%s); rewrite it with\n"+
					"  cd deploy && GOWORK=off go test ./charts -run TestGolden -update\nand check the diff", path, g.chart, firstDiff(string(got), want))
			}
		})
	}
}

// firstDiff names the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d is %q, the chart renders %q", i+1, gl, wl)
		}
	}
	return "equal"
}
