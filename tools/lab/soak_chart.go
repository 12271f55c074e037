package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
)

// Line chart geometry, in SVG user units: panels stacked, one per measure.
const (
	lineWidth   = 760
	panelHeight = 170
	panelGap    = 50
	lineLeft    = 70
	lineRight   = 170 // room for the legend
	linesTop    = 60
)

var slotColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"}

// writeSoakChart draws RSS, goroutines and open fds over the soak's
// minutes, one line per instance process (a restart starts a new, dashed
// line), with the faults marked on the time axis.
func writeSoakChart(w io.Writer, r *soakReport) error {
	rss, gor, fd := lives(r.Samples)
	panels := []struct {
		title string
		lives []life
	}{{"RSS (MiB)", rss}, {"goroutines", gor}, {"open file descriptors", fd}}
	height := linesTop + len(panels)*(panelHeight+panelGap)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		lineWidth, height, lineWidth, height)
	fmt.Fprintf(bw, `<rect width="%d" height="%d" fill="white"/>`+"\n", lineWidth, height)
	fmt.Fprintf(bw, `<text x="20" y="22" font-size="14" font-weight="bold">soak: %.0f min at %.0f requests/s, %d instances, faults rotating</text>`+"\n",
		r.Minutes, r.Rate, soakInstances)
	fmt.Fprintf(bw, `<text x="20" y="40" fill="#555">%s</text>`+"\n", esc(verdictLine(r.Verdict)))
	plotW := float64(lineWidth - lineLeft - lineRight)
	xOf := func(t float64) float64 { return lineLeft + plotW*t/math.Max(r.Minutes, 1e-9) }
	for pi, p := range panels {
		drawPanel(bw, r, pi, p.title, p.lives, plotW, xOf)
	}
	fmt.Fprintf(bw, `<text x="%d" y="%d" fill="#555">minutes; dotted pink lines: a fault begins (hover for its name); dashed: a restarted instance</text>`+"\n",
		lineLeft, height-12)
	fmt.Fprintln(bw, `</svg>`)
	return bw.Flush()
}

// drawPanel draws panel pi: its axes, the faults, one line per life.
func drawPanel(bw *bufio.Writer, r *soakReport, pi int, title string, lives []life, plotW float64, xOf func(float64) float64) {
	top := float64(linesTop + pi*(panelHeight+panelGap) + 20)
	bottom := top + panelHeight
	hi := 0.0
	for _, l := range lives {
		for _, pt := range l.Points {
			hi = max(hi, clean(pt.V))
		}
	}
	hi = niceCeil(hi)
	yOf := func(v float64) float64 { return bottom - (bottom-top)*v/hi }
	fmt.Fprintf(bw, `<text x="%d" y="%.0f" font-weight="bold">%s</text>`+"\n", lineLeft, top-8, esc(title))
	for i := 0; i <= 4; i++ {
		v := hi * float64(i) / 4
		fmt.Fprintf(bw, `<line x1="%d" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", lineLeft, lineLeft+plotW, yOf(v), yOf(v))
		fmt.Fprintf(bw, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", lineLeft-6, yOf(v)+4, esc(format(v)))
	}
	for m := 0; float64(m) <= r.Minutes+1e-9; m += max(1, int(r.Minutes/10)) {
		fmt.Fprintf(bw, `<text x="%.1f" y="%.0f" text-anchor="middle" fill="#555">%d</text>`+"\n", xOf(float64(m)), bottom+14, m)
	}
	for _, e := range r.Faults {
		fmt.Fprintf(bw, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="#f4a" stroke-dasharray="2,3"><title>%s</title></line>`+"\n",
			xOf(e.AtMin), xOf(e.AtMin), top, bottom, esc(e.Name))
	}
	for li, l := range lives {
		slot := 0
		fmt.Sscanf(l.Name, "instance %d", &slot)
		color := slotColors[slot%len(slotColors)]
		dash := ""
		if strings.Contains(l.Name, "restart") {
			dash = ` stroke-dasharray="6,3"`
		}
		var pts []string
		for _, pt := range l.Points {
			if !math.IsNaN(pt.V) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(pt.T), yOf(pt.V)))
			}
		}
		fmt.Fprintf(bw, `<polyline fill="none" stroke="%s" stroke-width="1.5"%s points="%s"><title>%s</title></polyline>`+"\n",
			color, dash, strings.Join(pts, " "), esc(l.Name))
		if pi == 0 {
			y := linesTop + 20 + li*16
			fmt.Fprintf(bw, `<line x1="%.0f" x2="%.0f" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n",
				lineLeft+plotW+12, lineLeft+plotW+32, y, y, color, dash)
			fmt.Fprintf(bw, `<text x="%.0f" y="%d">%s</text>`+"\n", lineLeft+plotW+36, y+4, esc(l.Name))
		}
	}
	fmt.Fprintf(bw, `<line x1="%d" x2="%.0f" y1="%.0f" y2="%.0f" stroke="#333"/>`+"\n", lineLeft, lineLeft+plotW, bottom, bottom)
}

func verdictLine(fails []string) string {
	if len(fails) == 0 {
		return "verdict: pass"
	}
	return fmt.Sprintf("verdict: FAIL (%d): %s", len(fails), fails[0])
}
