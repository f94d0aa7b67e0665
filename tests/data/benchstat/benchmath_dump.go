// Prints benchmath's AssumeNothing summary and comparison of old/new samples, full precision.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/perf/benchmath"
)

func read(path string) (map[string][]float64, []string) {
	f, _ := os.Open(path)
	defer f.Close()
	out := map[string][]float64{}
	var order []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 4 || !strings.HasPrefix(fs[0], "Benchmark") {
			continue
		}
		v, _ := strconv.ParseFloat(fs[2], 64)
		if _, ok := out[fs[0]]; !ok {
			order = append(order, fs[0])
		}
		out[fs[0]] = append(out[fs[0]], v)
	}
	return out, order
}

func main() {
	old, order := read(os.Args[1])
	new, _ := read(os.Args[2])
	th := &benchmath.DefaultThresholds
	for _, name := range order {
		s1 := benchmath.NewSample(append([]float64(nil), old[name]...), th)
		s2 := benchmath.NewSample(append([]float64(nil), new[name]...), th)
		a := benchmath.AssumeNothing
		m1 := a.Summary(s1, 0.95)
		m2 := a.Summary(s2, 0.95)
		c := a.Compare(s1, s2)
		fmt.Printf("%s %.17g %.17g %.17g %s %.17g %.17g %.17g %s %.17g %q %q\n", strings.TrimPrefix(name, "Benchmark"),
			m1.Center, m1.Lo, m1.Hi, m1.PctRangeString(), m2.Center, m2.Lo, m2.Hi, m2.PctRangeString(), c.P,
			c.FormatDelta(m1.Center, m2.Center), c.String())
	}
}
