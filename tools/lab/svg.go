package main

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
)

// Series is one set of bars in a grouped bar chart: a value per category.
type Series struct {
	Name   string
	Color  string // any SVG colour
	Values []float64
}

// Chart geometry, in SVG user units.
const (
	chartHeight = 360
	plotTop     = 60
	plotBottom  = 300 // y of the x axis
	plotLeft    = 70
	barWidth    = 28
	groupGap    = 24
)

// writeBarChart writes a self-contained SVG grouped bar chart: one group
// per category, one bar per series, each bar labelled with its value, on a
// linear axis from zero. Negative, NaN and missing values are drawn as zero.
func writeBarChart(w io.Writer, title, subtitle, unit string, categories []string, series []Series) error {
	bw := bufio.NewWriter(w)
	labelWidth := 0
	for _, c := range categories {
		labelWidth = max(labelWidth, 7*len([]rune(c))+12)
	}
	groupWidth := max(max(1, len(series))*barWidth+groupGap, labelWidth)
	width := max(plotLeft+len(categories)*groupWidth+40, 480, 9*len([]rune(title))+40, 7*len([]rune(subtitle))+40)
	top := 0.0
	for _, s := range series {
		for _, v := range s.Values {
			top = max(top, clean(v))
		}
	}
	top = niceCeil(top)
	scale := float64(plotBottom-plotTop) / top

	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		width, chartHeight, width, chartHeight)
	fmt.Fprintf(bw, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, chartHeight)
	fmt.Fprintf(bw, `<text x="20" y="22" font-size="14" font-weight="bold">%s</text>`+"\n", esc(title))
	fmt.Fprintf(bw, `<text x="20" y="40" fill="#555">%s</text>`+"\n", esc(subtitle))

	// Grid and y axis: five steps from zero to the rounded maximum.
	for i := 0; i <= 5; i++ {
		v := top * float64(i) / 5
		y := float64(plotBottom) - v*scale
		fmt.Fprintf(bw, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", plotLeft, width-20, y, y)
		fmt.Fprintf(bw, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", plotLeft-6, y+4, esc(format(v)))
	}
	fmt.Fprintf(bw, `<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">%s</text>`+"\n",
		(plotTop+plotBottom)/2, (plotTop+plotBottom)/2, esc(unit))

	for ci, cat := range categories {
		x0 := plotLeft + (groupWidth-len(series)*barWidth)/2 + ci*groupWidth
		for si, s := range series {
			v := 0.0
			if ci < len(s.Values) {
				v = clean(s.Values[ci])
			}
			h := v * scale
			x := x0 + si*barWidth
			y := float64(plotBottom) - h
			fmt.Fprintf(bw, `<rect class="bar" x="%d" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s %s: %s</title></rect>`+"\n",
				x, y, barWidth-4, h, esc(s.Color), esc(cat), esc(s.Name), esc(format(v)))
			fmt.Fprintf(bw, `<text x="%d" y="%.1f" text-anchor="middle" font-size="10">%s</text>`+"\n",
				x+(barWidth-4)/2, y-4, esc(format(v)))
		}
		fmt.Fprintf(bw, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n",
			x0+len(series)*barWidth/2, plotBottom+18, esc(cat))
	}
	fmt.Fprintf(bw, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#333"/>`+"\n", plotLeft, width-20, plotBottom, plotBottom)

	// Legend.
	for si, s := range series {
		x := plotLeft + si*160
		fmt.Fprintf(bw, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`+"\n", x, chartHeight-30, esc(s.Color))
		fmt.Fprintf(bw, `<text x="%d" y="%d">%s</text>`+"\n", x+18, chartHeight-20, esc(s.Name))
	}
	fmt.Fprintln(bw, `</svg>`)
	return bw.Flush()
}

// niceCeil rounds v up to a round number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6
// or 8 times a power of ten), so the five axis steps are round too; it is 1
// for zero or less.
func niceCeil(v float64) float64 {
	if !(v > 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= v*(1-1e-12) {
			return m * p
		}
	}
	return 10 * p
}

func clean(v float64) float64 {
	if math.IsNaN(v) || v < 0 || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// format prints a value without trailing zeros, to 0.1 below 100 and whole
// above: 1000, 12.5, 0.3.
func format(v float64) string {
	if math.Abs(v) >= 100 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

func esc(s string) string { return html.EscapeString(s) }
