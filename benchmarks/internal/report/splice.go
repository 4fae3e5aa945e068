package report

import (
	"bytes"
	"fmt"
	"os"
)

// Splice replaces the text between the lines "<!-- name:begin -->" and "<!-- name:end -->" in
// the file at path with content. The markers stay; the file must already have both.
func Splice(path, name string, content []byte) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	begin := []byte("<!-- " + name + ":begin -->\n")
	end := []byte("<!-- " + name + ":end -->")
	i := bytes.Index(data, begin)
	j := bytes.Index(data, end)
	if i < 0 || j < i+len(begin) {
		return fmt.Errorf("report: %s: no %q … %q markers", path, bytes.TrimSpace(begin), end)
	}
	var out bytes.Buffer
	out.Write(data[:i+len(begin)])
	out.Write(content)
	if len(content) > 0 && content[len(content)-1] != '\n' {
		out.WriteByte('\n')
	}
	out.Write(data[j:])
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
