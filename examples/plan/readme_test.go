package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/nodeplan/nodeplan/cloudprovider/ec2/ec2test"
)

// The README's what-if and shadow-mode commands are run here, so the README cannot advertise a
// command that fails. Commands that read a cluster run against the fake cluster and ec2test;
// watch runs one pass.
func TestReadmeCommands(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(readme), "\\\n", " ")
	cmds := regexp.MustCompile(`(?m)^go run \./examples/plan (.*)$`).FindAllStringSubmatch(text, -1)
	if len(cmds) < 3 {
		t.Fatalf("README has %d plan commands, want the what-if, snapshot and shadow-mode ones", len(cmds))
	}
	for _, c := range cmds {
		argv := strings.Fields(c[1])
		for i, a := range argv {
			if strings.HasPrefix(a, "examples/plan/") {
				argv[i] = strings.TrimPrefix(a, "examples/plan/")
			}
			if a == "--metrics-addr" {
				argv[i+1] = "127.0.0.1:0"
			}
		}
		if argv[0] == "watch" {
			argv = append(argv, "--passes", "1")
		}
		t.Run(strings.Join(argv, " "), func(t *testing.T) {
			fakeCluster(t)
			useEC2(t, ec2test.NewServer())
			code, out, stderr := runPlan(t, argv)
			if code != exitOK {
				t.Fatalf("plan %v = %d; stderr:\n%s", argv, code, stderr)
			}
			if argv[0] == "provision" && argv[1] == "--pods" {
				block := regexp.MustCompile("(?s)```\n(COMPARISON\n.*?)```").FindStringSubmatch(string(readme))
				if block == nil {
					t.Fatal("README has no COMPARISON block")
				}
				for _, line := range strings.Split(strings.TrimSpace(block[1]), "\n") {
					if !strings.Contains(out, line) {
						t.Errorf("README's COMPARISON line %q is not in the output:\n%s", line, out)
					}
				}
			}
		})
	}
}
