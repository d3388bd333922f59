package main

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

func init() {
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
}

// series is one line of a chart.
type series struct {
	Name   string
	X, Y   []float64
	Color  int  // index into palette
	Dashed bool // baselines: dashed
}

// palette is Tableau's ten colours, distinct for readers with the common
// colour-vision deficiencies.
var palette = []color.Color{
	color.RGBA{0x4e, 0x79, 0xa7, 0xff}, color.RGBA{0xf2, 0x8e, 0x2b, 0xff},
	color.RGBA{0xe1, 0x57, 0x59, 0xff}, color.RGBA{0x76, 0xb7, 0xb2, 0xff},
	color.RGBA{0x59, 0xa1, 0x4f, 0xff}, color.RGBA{0xed, 0xc9, 0x48, 0xff},
	color.RGBA{0xb0, 0x7a, 0xa1, 0xff}, color.RGBA{0xff, 0x9d, 0xa7, 0xff},
	color.RGBA{0x9c, 0x75, 0x5f, 0xff}, color.RGBA{0xba, 0xb0, 0xac, 0xff},
}

func paletteColor(i int) color.Color { return palette[i%len(palette)] }

// axis describes one axis of a line chart: its label, whether it is
// logarithmic, and how to write a tick's value.
type axis struct {
	Label string
	Log   bool
	Ticks []float64 // where to put ticks; nil: gonum's default
	Fmt   func(float64) string
}

// lineChart draws series as lines with points into an SVG file. It
// writes nothing and returns errNoData when no series has a point.
func lineChart(path, title string, x, y axis, ss []series) error {
	points := 0
	for _, s := range ss {
		for j := range s.X {
			if !math.IsNaN(s.Y[j]) && s.Y[j] > 0 && !math.IsInf(s.Y[j], 0) {
				points++
			}
		}
	}
	if points == 0 {
		return errNoData
	}
	p := plot.New()
	p.Title.Text = title
	p.Add(plotter.NewGrid())
	setAxis(&p.X, x)
	setAxis(&p.Y, y)
	ylo, yhi := math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, v := range s.Y {
			if !math.IsNaN(v) && v > 0 && !math.IsInf(v, 0) {
				ylo, yhi = min(ylo, v), max(yhi, v)
			}
		}
	}
	// Room above the data for the legend, which gonum draws inside.
	rows := float64(len(ss))*0.045 + 0.08
	if y.Log {
		p.Y.Min, p.Y.Max = ylo/1.2, yhi*math.Pow(yhi*1.2/(ylo/1.2), rows/(1-rows))
	} else {
		p.Y.Min, p.Y.Max = 0, yhi/(1-rows)
	}
	if x.Log && len(ss) > 0 && len(ss[0].X) > 0 {
		p.X.Min, p.X.Max = slices.Min(ss[0].X)/1.3, slices.Max(ss[0].X)*1.3
	}
	for _, s := range ss {
		var pts plotter.XYs
		for j := range s.X {
			if !math.IsNaN(s.Y[j]) && s.Y[j] > 0 && !math.IsInf(s.Y[j], 0) {
				pts = append(pts, plotter.XY{X: s.X[j], Y: s.Y[j]})
			}
		}
		if len(pts) == 0 {
			continue
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		l.Color = paletteColor(s.Color)
		if s.Dashed {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		l.Width = vg.Points(1.5)
		sc.Color = paletteColor(s.Color)
		sc.Shape = plotutil.Shape(s.Color)
		p.Add(l, sc)
		p.Legend.Add(s.Name, l, sc)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	return saveSVG(p, 8*vg.Inch, 5*vg.Inch, path)
}

// saveSVG writes the plot with a font list that falls back to fonts of the
// same metrics (Arial, Helvetica) where Liberation Sans is not installed,
// so that text keeps the width gonum laid it out for.
func saveSVG(p *plot.Plot, w, h vg.Length, path string) error {
	wt, err := p.WriterTo(w, h, "svg")
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if _, err := wt.WriteTo(&b); err != nil {
		return err
	}
	out := strings.ReplaceAll(b.String(), "font-family:Liberation Sans", "font-family:'Liberation Sans',Arial,Helvetica,sans-serif")
	return os.WriteFile(path, []byte(out), 0o644)
}

func setAxis(a *plot.Axis, spec axis) {
	a.Label.Text = spec.Label
	if spec.Log {
		a.Scale = plot.LogScale{}
		a.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	if spec.Ticks != nil {
		var ts plot.ConstantTicks
		for _, v := range spec.Ticks {
			label := fmt.Sprint(v)
			if spec.Fmt != nil {
				label = spec.Fmt(v)
			}
			ts = append(ts, plot.Tick{Value: v, Label: label})
		}
		a.Tick.Marker = ts
	}
}

var errNoData = errors.New("no data")

// barGroup is one row of a horizontal bar chart: a label and one value
// per bar series.
type barGroup struct {
	Label  string
	Values []float64
}

// barChart draws horizontal grouped bars (one colour per series name),
// with a vertical line at ref.
func barChart(path, title, xlabel string, names []string, groups []barGroup, ref float64) error {
	if len(groups) == 0 {
		return errNoData
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Add(plotter.NewGrid())
	w := vg.Points(10)
	labels := make([]string, len(groups))
	for i, g := range groups {
		labels[len(groups)-1-i] = g.Label
	}
	for j, name := range names {
		vals := make(plotter.Values, len(groups))
		for i, g := range groups {
			v := g.Values[j]
			if math.IsNaN(v) {
				v = 0
			}
			vals[len(groups)-1-i] = v
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return err
		}
		b.Horizontal = true
		b.Color = paletteColor(j)
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(float64(len(names)-1)/2-float64(j))
		p.Add(b)
		p.Legend.Add(name, b)
	}
	if ref > 0 {
		line, err := plotter.NewLine(plotter.XYs{{X: ref, Y: -0.5}, {X: ref, Y: float64(len(groups)) - 0.5}})
		if err != nil {
			return err
		}
		line.Color = color.Gray{Y: 80}
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(line)
	}
	p.NominalY(labels...)
	hi := ref
	for _, g := range groups {
		for _, v := range g.Values {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				hi = max(hi, v)
			}
		}
	}
	p.X.Min, p.X.Max = 0, hi*1.25
	var ticks plot.ConstantTicks
	for t := 0.0; t <= p.X.Max; t += 0.5 {
		ticks = append(ticks, plot.Tick{Value: t, Label: fmt.Sprintf("%.1fx", t)})
	}
	p.X.Tick.Marker = ticks
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	return saveSVG(p, 8*vg.Inch, vg.Length(1.2+0.42*float64(len(groups)))*vg.Inch, path)
}
