package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
)

// Series colours: nodeplan blue, the peer orange (colour-blind safe together).
const (
	colourNodeplan = "#1f77b4"
	colourPeer     = "#ff7f0e"
)

// Chart writes an SVG with two panels: solve time against pod count on log-log axes (one line
// per scenario family with several sizes, for each solver; each family's largest scenario
// labelled with both solvers' times; a run cut off at a time limit drawn as a lower limit, an
// arrow up), and cost over the lower bound per scenario as paired bars with node counts. peer
// names the other solver in the legend.
func Chart(w io.Writer, peer string, ps []Pair) error {
	const (
		width    = 1100
		panelW   = 470
		panelH   = 380
		left     = 70
		top      = 50
		barLeft  = 560 + 150
		barWidth = 330
	)
	rowH := 30
	height := max(top+panelH+80, top+len(ps)*rowH+80)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)

	// Left panel: time against pods, log-log.
	var pods, secs []float64
	for _, p := range ps {
		for _, r := range []float64{p.Nodeplan.Wall.Seconds(), p.Peer.Wall.Seconds()} {
			if r > 0 {
				secs = append(secs, r)
			}
		}
		pods = append(pods, float64(p.Nodeplan.Pods))
	}
	x0, x1 := decades(pods)
	y0, y1 := decades(secs)
	xs := func(v float64) float64 { return left + (math.Log10(v)-x0)/(x1-x0)*panelW }
	ys := func(v float64) float64 { return top + panelH - (math.Log10(v)-y0)/(y1-y0)*panelH }
	fmt.Fprintf(&b, `<text x="%d" y="25" font-size="15" font-weight="bold">Solve time (median wall clock) against pending pods</text>`+"\n", left)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>`+"\n", left, top, panelW, panelH)
	for e := x0; e <= x1; e++ {
		x := xs(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`, x, top, x, top+panelH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, top+panelH+16, podLabel(math.Pow(10, e)))
	}
	for e := y0; e <= y1; e++ {
		y := ys(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`, left, y, left+panelW, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, secondsLabel(math.Pow(10, e)))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">pods (log scale)</text>`+"\n", left+panelW/2, top+panelH+36)
	fmt.Fprintf(&b, `<text transform="translate(18 %d) rotate(-90)" text-anchor="middle">seconds (log scale)</text>`+"\n", top+panelH/2)
	families := map[string][]Pair{}
	var order []string
	for _, p := range ps {
		f := p.Nodeplan.Family
		if _, ok := families[f]; !ok {
			order = append(order, f)
		}
		families[f] = append(families[f], p)
	}
	for _, f := range order {
		fps := slices.Clone(families[f])
		slices.SortFunc(fps, func(a, b Pair) int { return a.Nodeplan.Pods - b.Nodeplan.Pods })
		for side, colour := range []string{colourNodeplan, colourPeer} {
			var pts []string
			for _, p := range fps {
				r := p.Nodeplan
				if side == 1 {
					r = p.Peer
				}
				if r.Wall <= 0 {
					continue
				}
				x, y := xs(float64(r.Pods)), ys(r.Wall.Seconds())
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
				title := html.EscapeString(fmt.Sprintf("%s %s: %s", r.Solver, r.Scenario, dur(r.Wall)))
				if r.CutOff {
					// Stopped at the time limit: the real time is longer. An arrow up says so.
					title = html.EscapeString(fmt.Sprintf("%s %s: cut off at %s, still running", r.Solver, r.Scenario, dur(r.Wall)))
					fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5"/>`, x, y-6, x, y-26, colour)
					fmt.Fprintf(&b, `<path d="M%.1f %.1f l-4 7 h8 z" fill="%s"/>`, x, y-30, colour)
					fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="%s">≥ %s (cut off)</text>`+"\n", x+6, y-20, colour, html.EscapeString(dur(r.Wall)))
				}
				if side == 0 {
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"><title>%s</title></circle>`+"\n", x, y, colour, title)
				} else {
					fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="8" height="8" fill="%s"><title>%s</title></rect>`+"\n", x-4, y-4, colour, title)
				}
			}
			if len(pts) > 1 {
				fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", strings.Join(pts, " "), colour)
			}
		}
		// Label both solvers' points of the family's largest scenario with the solver and its
		// time, the slower one with the family's name too.
		last := fps[len(fps)-1]
		x := xs(float64(last.Nodeplan.Pods)) + 7
		np, pr := last.Nodeplan, last.Peer
		if np.Wall > 0 {
			label := "nodeplan " + dur(np.Wall)
			if np.Wall >= pr.Wall {
				label = f + ": " + label
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="%s">%s</text>`+"\n", x, ys(np.Wall.Seconds())+12, colourNodeplan, html.EscapeString(label))
		}
		if pr.Wall > 0 && !pr.CutOff {
			label := peerShort(peer) + " " + dur(pr.Wall)
			if pr.Wall > np.Wall {
				label = f + ": " + label
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="%s">%s</text>`+"\n", x, ys(pr.Wall.Seconds())-5, colourPeer, html.EscapeString(label))
		}
	}
	legend := func(x, y int, colour, label string, square bool) {
		if square {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/>`, x, y-9, colour)
		} else {
			fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="5" fill="%s"/>`, x+5, y-4, colour)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", x+16, y, html.EscapeString(label))
	}
	legend(left+10, top+18, colourNodeplan, "nodeplan", false)
	legend(left+10, top+36, colourPeer, peer, true)
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">lines join sizes of one scenario family</text>`+"\n", left+10, top+54)

	// Right panel: cost over lower bound, paired bars.
	maxRatio := 1.0
	for _, p := range ps {
		maxRatio = math.Max(maxRatio, math.Max(p.Nodeplan.CostOverLB(), p.Peer.CostOverLB()))
	}
	// A loose bound (one node per anti-affinity pod, say) gives ratios far above the rest; the
	// axis runs to the largest ratio up to 5, and a longer bar is drawn broken — a white zigzag
	// across its end — with its value written out, never silently clipped.
	scaleMax := math.Min(math.Ceil(maxRatio*2)/2, 5)
	bx := func(v float64) float64 { return barLeft + math.Min(v, scaleMax)/scaleMax*barWidth }
	fmt.Fprintf(&b, `<text x="%d" y="25" font-size="15" font-weight="bold">Cost over lower bound (1 = provably optimal)</text>`+"\n", barLeft-150)
	for v := 0.0; v <= scaleMax+1e-9; v += tick(scaleMax) {
		x := bx(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`, x, top, x, top+len(ps)*rowH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%g</text>`+"\n", x, top+len(ps)*rowH+16, v)
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#444" stroke-dasharray="4 3"/>`+"\n", bx(1), top-4, bx(1), top+len(ps)*rowH)
	for i, p := range ps {
		y := top + i*rowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", barLeft-6, y+rowH/2+4, html.EscapeString(p.Nodeplan.Scenario))
		for side, r := range []struct {
			v      float64
			colour string
			note   string
			nodes  int
		}{{p.Nodeplan.CostOverLB(), colourNodeplan, unplacedNote(p.Nodeplan.Unplaced), p.Nodeplan.Nodes},
			{p.Peer.CostOverLB(), colourPeer, unplacedNote(p.Peer.Unplaced) + cutOffNote(p.Peer.CutOff), p.Peer.Nodes}} {
			by := y + 3 + side*12
			if r.v <= 0 {
				continue
			}
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="11" fill="%s"/>`, barLeft, by, bx(r.v)-barLeft, r.colour)
			cut := ""
			if r.v > scaleMax {
				cut = " (bar broken)"
				bxEnd := bx(r.v)
				fmt.Fprintf(&b, `<path d="M%.1f %d l4 4 l-4 3 l4 4" fill="none" stroke="white" stroke-width="2"/>`, bxEnd-12, by)
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10">%s · %s%s%s</text>`+"\n", bx(r.v)+3, by+9, ratio(r.v), nodesLabel(r.nodes), cut, r.note)
		}
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">$/h ÷ lower bound (bars past %g drawn broken; value and node count written)</text>`+"\n", barLeft+barWidth/2, top+len(ps)*rowH+36, scaleMax)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func cutOffNote(cut bool) string {
	if cut {
		return " (cut off)"
	}
	return ""
}

func nodesLabel(n int) string {
	if n == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}

// peerShort is the peer's name without its version, for point labels.
func peerShort(peer string) string {
	name, _, _ := strings.Cut(peer, " ")
	return name
}

func unplacedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d unplaced)", n)
}

// decades returns whole powers of ten enclosing vs (log10), at least one decade apart.
func decades(vs []float64) (lo, hi float64) {
	if len(vs) == 0 {
		return 0, 1
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		lo = math.Min(lo, math.Floor(math.Log10(v)))
		hi = math.Max(hi, math.Ceil(math.Log10(v)))
	}
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi
}

func tick(scaleMax float64) float64 {
	switch {
	case scaleMax <= 2:
		return 0.25
	case scaleMax <= 5:
		return 0.5
	case scaleMax <= 10:
		return 1
	}
	return math.Ceil(scaleMax / 10)
}

func podLabel(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}

func secondsLabel(v float64) string {
	switch {
	case v >= 1:
		return fmt.Sprintf("%gs", v)
	case v >= 1e-3:
		return fmt.Sprintf("%gms", math.Round(v*1e3))
	}
	return fmt.Sprintf("%gµs", math.Round(v*1e6))
}
