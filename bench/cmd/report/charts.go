package main

import (
	"errors"
	"fmt"
	"image/color"
	"math"

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
	Name string
	X, Y []float64
}

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
	for i, s := range ss {
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
		l.Color = plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i / 7)
		l.Width = vg.Points(1.5)
		sc.Color = plotutil.Color(i)
		sc.Shape = plotutil.Shape(i)
		p.Add(l, sc)
		p.Legend.Add(s.Name, l, sc)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	return p.Save(8*vg.Inch, 5*vg.Inch, path)
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
		b.Color = plotutil.Color(j)
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
	p.X.Min = 0
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	return p.Save(8*vg.Inch, vg.Length(1.2+0.42*float64(len(groups)))*vg.Inch, path)
}
