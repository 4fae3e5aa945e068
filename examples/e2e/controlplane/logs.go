package controlplane

import (
	"flag"
	"strings"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// logKeep is how much of the control plane's log LogTail can return.
const logKeep = 1 << 20

// ring keeps the last logKeep bytes written to it.
type ring struct {
	mu  sync.Mutex
	buf []byte
}

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	if over := len(r.buf) - logKeep; over > 0 {
		r.buf = append(r.buf[:0], r.buf[over:]...)
	}
	return len(p), nil
}

func (r *ring) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.buf)
}

var (
	logs        ring
	captureOnce sync.Once
)

// captureLogs sends klog's output (the API server's and the scheduler's logs) to the ring
// instead of stderr: a test's output then shows only what it prints, and LogTail shows the
// control plane's side when a test fails. klog copies errors to stderr whatever its output
// unless its stderr threshold is raised, which only its flags can do.
func captureLogs() {
	captureOnce.Do(func() {
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		for name, value := range map[string]string{"logtostderr": "false", "alsologtostderr": "false", "stderrthreshold": "FATAL"} {
			_ = fs.Set(name, value) // klog's own flags and values: no error to expect

		}
		klog.SetOutput(&logs)
	})
}

// etcdLogger writes etcd's warnings and errors to the same ring.
func etcdLogger() *zap.Logger {
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(&logs), zap.WarnLevel))
}

// LogTail returns the last n lines the control plane logged through klog.
func LogTail(n int) string {
	lines := strings.Split(strings.TrimRight(logs.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
