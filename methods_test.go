package nodeplan

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxMethods is DESIGN.md's ceiling on one type's methods: a type past it holds several
// concepts, and a reader cannot find the one they need.
const maxMethods = 40

// overMethods are the types still past the ceiling, each with the count it may not exceed: the
// counts on main when this test landed (issue 31 is splitting them; *problem had 177 and the
// controller 93 when it started). A split lowers the number here; a type that reaches 40 or
// fewer leaves the list; nothing is added.
var overMethods = map[string]int{
	"scheduling.problem":                      152,
	"examples/internal/controller.Controller": 98,
	"cloudprovider/ec2/ec2test.Server":        74,
	"cloudprovider/ec2.Provider":              46,
	"scheduling/check.checker":                42,
}

// TestMethodsPerType counts the methods of every type in the repository's packages (tests
// excluded) and fails for a type past maxMethods that overMethods does not allow, or past what
// it allows.
func TestMethodsPerType(t *testing.T) {
	counts := map[string]int{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) == 0 {
				continue
			}
			if name := receiverType(fn.Recv.List[0].Type); name != "" {
				counts[dir+"."+name]++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range slices.Sorted(maps.Keys(counts)) {
		n, allowed := counts[typ], overMethods[typ]
		switch {
		case allowed > 0 && n > allowed:
			t.Errorf("%s has %d methods, more than the %d overMethods allows: split it, do not grow it", typ, n, allowed)
		case allowed > 0 && n <= maxMethods:
			t.Errorf("%s has %d methods, within the ceiling of %d: remove it from overMethods", typ, n, maxMethods)
		case allowed > 0 && n < allowed:
			t.Logf("%s has %d methods (ceiling %d, allowed %d): lower its entry in overMethods", typ, n, maxMethods, allowed)
		case allowed == 0 && n > maxMethods:
			t.Errorf("%s has %d methods, more than %d: split it by concept (DESIGN.md, conventions 5)", typ, n, maxMethods)
		}
	}
}

// receiverType is the type name of a method's receiver: T for T, *T, T[P] and *T[P].
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
