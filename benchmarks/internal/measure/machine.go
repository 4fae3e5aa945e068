package measure

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// Machine describes where a benchmark ran, so its numbers can be read in context.
type Machine struct {
	Date      string `json:"date"`
	CPU       string `json:"cpu"`
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
	// LoadBefore and LoadAfter are the 1-minute load averages at the start and the end: on a
	// shared machine, wall times above CPU times mean others were using it too.
	LoadBefore string `json:"loadBefore"`
	LoadAfter  string `json:"loadAfter"`
}

// ThisMachine describes the machine running the process now.
func ThisMachine() Machine {
	return Machine{
		Date:       time.Now().UTC().Format("2006-01-02"),
		CPU:        cpuModel(),
		CPUs:       runtime.NumCPU(),
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS + "/" + runtime.GOARCH,
		LoadBefore: LoadAverage(),
	}
}

// Summary is the machine in one line.
func (m Machine) Summary() string {
	s := fmt.Sprintf("%d × %s, %s, %s", m.CPUs, m.CPU, m.OS, m.GoVersion)
	if m.LoadBefore != "" {
		s += fmt.Sprintf(", load average %s at the start and %s at the end", m.LoadBefore, m.LoadAfter)
	}
	return s
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// LoadAverage returns the 1-minute load average, or "" where it is not known.
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return ""
	}
	return fields[0]
}
