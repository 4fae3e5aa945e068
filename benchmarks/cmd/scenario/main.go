// Command scenario writes a scenario of the suite as the files `plan provision` reads, so the
// suite can be planned end to end as a user plans a snapshot of a cluster: pods as a kube-apiserver
// returns them (a v1 List, as `kubectl get pods -o yaml` writes it), the NodePools as Karpenter v1
// YAML, the DaemonSets, and the catalog.
//
// Usage:
//
//	go run ./cmd/scenario [-size full|small] -name karpenter-mix-drawn-1000 -o DIR
//	go run ./examples/plan provision --pods DIR/pods.yaml --nodepools DIR/nodepools.yaml \
//	    --daemonsets DIR/daemonsets.yaml --catalog DIR/catalog.json
//
// -list prints the scenarios' names.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/nodeplan/nodeplan"
	"github.com/nodeplan/nodeplan/benchmarks/suite"
)

func main() {
	size := flag.String("size", "full", "suite size: full or small")
	name := flag.String("name", "", "the scenario to write (see -list)")
	dir := flag.String("o", "", "directory to write pods.yaml, nodepools.yaml, daemonsets.yaml and catalog.json into")
	list := flag.Bool("list", false, "list the scenarios and exit")
	flag.Parse()
	if err := run(*size, *name, *dir, *list); err != nil {
		fmt.Fprintln(os.Stderr, "scenario:", err)
		os.Exit(1)
	}
}

func run(size, name, dir string, list bool) error {
	sz := suite.Full
	switch size {
	case "full":
	case "small":
		sz = suite.Small
	default:
		return fmt.Errorf("-size %q: want full or small", size)
	}
	scs, err := suite.Scenarios(sz)
	if err != nil {
		return err
	}
	if list {
		for _, sc := range scs {
			fmt.Printf("%s\t%d pods\t%s\n", sc.Name, len(sc.Input.Pods), sc.Description)
		}
		return nil
	}
	if name == "" || dir == "" {
		return fmt.Errorf("-name and -o are required (-list shows the names)")
	}
	for _, sc := range scs {
		if sc.Name == name {
			return write(sc, dir)
		}
	}
	return fmt.Errorf("no scenario %q at size %s (-list shows the names)", name, size)
}

func write(sc suite.Scenario, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var objs []runtime.Object
	for _, p := range sc.Input.Pods {
		p = p.DeepCopy()
		p.APIVersion, p.Kind = "v1", "Pod"
		objs = append(objs, p)
	}
	pods, err := list(objs)
	if err != nil {
		return err
	}
	objs = objs[:0]
	for _, ds := range sc.Input.DaemonSets {
		ds = ds.DeepCopy()
		ds.APIVersion, ds.Kind = "apps/v1", "DaemonSet"
		objs = append(objs, ds)
	}
	daemonSets, err := list(objs)
	if err != nil {
		return err
	}
	var pools bytes.Buffer
	for i, np := range sc.Input.NodePools {
		data, err := nodeplan.EncodeNodePool(np)
		if err != nil {
			return fmt.Errorf("nodepool %s: %w", np.Name, err)
		}
		if i > 0 {
			pools.WriteString("---\n")
		}
		pools.Write(data)
	}
	catalog, err := nodeplan.EncodeCatalog(sc.Input.InstanceTypes)
	if err != nil {
		return err
	}
	for file, data := range map[string][]byte{"pods.yaml": pods, "daemonsets.yaml": daemonSets, "nodepools.yaml": pools.Bytes(), "catalog.json": catalog} {
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("%s: %d pods, %d NodePools, %d DaemonSets, %d instance types in %s\n", sc.Name, len(sc.Input.Pods),
		len(sc.Input.NodePools), len(sc.Input.DaemonSets), len(sc.Input.InstanceTypes), dir)
	return nil
}

// list is objs as a v1 List in YAML, the shape `kubectl get -o yaml` writes.
func list(objs []runtime.Object) ([]byte, error) {
	l := corev1.List{}
	l.APIVersion, l.Kind = "v1", "List"
	for _, o := range objs {
		l.Items = append(l.Items, runtime.RawExtension{Object: o})
	}
	return yaml.Marshal(&l)
}
