package pgbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lore-dev/lore/graph"
)

// An Answer is one side's answer to a question.
type Answer struct {
	// Lines are the answer in a form both sides share (IDs in order, a
	// count, a path's length); the sides agree when their lines are equal.
	Lines []string
	// Elapsed is Lore's own stats.elapsedMs, or PostgreSQL's round trip.
	Elapsed time.Duration
	// Truncated is the reason a bound cut Lore's answer, if one did.
	Truncated string
	// Visited is the work Lore reports (stats.visited).
	Visited int
}

// A Question is asked of both sides.
type Question struct {
	Name string
	// Lore asks Lore, under the ceilings given.
	Lore func(ctx context.Context, l *Lore, ceilings graph.Limits) (Answer, error)
	// PG asks PostgreSQL.
	PG func(ctx context.Context, p *Postgres) (Answer, error)
	// CheckOnly marks a question asked once to compare answers, not timed.
	CheckOnly bool
}

// Questions returns the benchmark's questions about g's subjects s.
func Questions(g *Graph, s Subjects) []Question {
	hub, leaf := g.PackageID(s.Hub), g.PackageID(s.Leaf)
	get, from, m := g.PackageID(s.Get), g.PackageID(s.PathFrom), g.MaintainerID(s.Maintainer)
	closure := func(hops int) Question {
		return Question{
			Name: fmt.Sprintf("distinct %d-hop reverse closure of the hub (count)", hops),
			Lore: loreQuery(fmt.Sprintf(`{"from":{"ids":[%q]},"traverse":[{"edge":"dependsOn","direction":"in","hops":%d}],"return":{"count":true}}`, hub, hops)),
			PG:   pgRows("in_closure_count", hub, "dependsOn", hops),
		}
	}
	closureIDs := func(hops int) Question {
		return Question{
			Name:      fmt.Sprintf("distinct %d-hop reverse closure of the hub (IDs)", hops),
			Lore:      loreAll(fmt.Sprintf(`{"from":{"ids":[%q]},"traverse":[{"edge":"dependsOn","direction":"in","hops":%d}],"return":{"fields":["id"]},"limit":10000`, hub, hops)),
			PG:        sorted(pgRows("in_closure", hub, "dependsOn", hops)),
			CheckOnly: true,
		}
	}
	return []Question{
		{
			Name: "a package by ID",
			Lore: loreQuery(fmt.Sprintf(`{"from":{"ids":[%q]}}`, get)),
			PG:   pgRows("get", get),
		},
		{
			Name: "out-neighbours to depth 3 of a leaf package",
			Lore: loreQuery(fmt.Sprintf(`{"from":{"ids":[%q]},"traverse":[{"edge":"dependsOn","hops":3}],"return":{"fields":["id"]},"limit":10000}`, leaf)),
			PG:   sorted(pgRows("out", leaf, "dependsOn", 3)),
		},
		{
			Name: "count of the hub's 1-hop reverse dependencies",
			Lore: loreQuery(fmt.Sprintf(`{"from":{"ids":[%q]},"traverse":[{"edge":"dependsOn","direction":"in"}],"return":{"count":true}}`, hub)),
			PG:   pgRows("in_count", hub, "dependsOn"),
		},
		{
			Name: "the hub's first 50 reverse dependencies by ID",
			Lore: loreQuery(fmt.Sprintf(`{"from":{"ids":[%q]},"traverse":[{"edge":"dependsOn","direction":"in"}],"return":{"fields":["id"]},"limit":50}`, hub), true),
			PG:   pgRows("in_page", hub, "dependsOn", 50),
		},
		{
			Name: "the hub's 50 largest reverse dependencies",
			Lore: loreQuery(fmt.Sprintf(`{"from":{"ids":[%q]},"traverse":[{"edge":"dependsOn","direction":"in"}],"orderBy":[{"field":"size","desc":true}],"return":{"fields":["id","size"]},"limit":50}`, hub), true),
			PG:   pgRows("top_dependents", hub, 50),
		},
		{
			Name: fmt.Sprintf("shortest path from a package into the hub (%d hops)", s.PathLen),
			Lore: lorePath(g, from, hub),
			PG:   pgPath(g, from, hub),
		},
		{
			Name: fmt.Sprintf("a maintainer's packages in %s, top 10 by size", s.Section),
			Lore: loreQuery(fmt.Sprintf(`{"from":{"ids":[%q]},"traverse":[{"edge":"maintains","where":{"section":%q}}],"orderBy":[{"field":"size","desc":true}],"return":{"fields":["id","size"]},"limit":10}`, m, s.Section), true),
			PG:   pgRows("top_maintained", m, s.Section, 10),
		},
		closure(2),
		closure(3),
		closureIDs(2),
		closureIDs(3),
	}
}

// loreQuery asks Lore the query doc; the answer is its count, or each
// result's fields in order: every result, unless firstPage says that the
// first page is the answer (a top k).
func loreQuery(doc string, firstPage ...bool) func(context.Context, *Lore, graph.Limits) (Answer, error) {
	return func(ctx context.Context, l *Lore, ceilings graph.Limits) (Answer, error) {
		res, err := l.Query(ctx, doc, ceilings)
		if err != nil {
			return Answer{}, err
		}
		a := Answer{Elapsed: ms(res.Stats.ElapsedMs), Visited: res.Stats.Visited}
		if res.Truncated {
			a.Truncated = res.Reason
		}
		if res.More && len(firstPage) == 0 {
			return a, fmt.Errorf("query %s: more results than one page holds", doc)
		}
		if res.Count != nil {
			a.Lines = []string{strconv.Itoa(*res.Count)}
			return a, nil
		}
		for _, n := range res.Nodes {
			a.Lines = append(a.Lines, line(n))
		}
		return a, nil
	}
}

// loreAll pages through every result of doc and returns their IDs, sorted.
// doc is a query document without its closing brace, so that a cursor can
// be added to it.
func loreAll(doc string) func(context.Context, *Lore, graph.Limits) (Answer, error) {
	return func(ctx context.Context, l *Lore, ceilings graph.Limits) (Answer, error) {
		var a Answer
		seen := map[string]bool{}
		cursor := ""
		for {
			d := doc + "}"
			if cursor != "" {
				d = doc + `,"cursor":` + strconv.Quote(cursor) + "}"
			}
			res, err := l.Query(ctx, d, ceilings)
			if err != nil {
				return a, err
			}
			a.Elapsed += ms(res.Stats.ElapsedMs)
			if res.Truncated {
				a.Truncated = res.Reason
			}
			for _, n := range res.Nodes {
				if id := fmt.Sprint(n["id"]); !seen[id] {
					seen[id] = true
					a.Lines = append(a.Lines, id)
				}
			}
			if !res.More {
				break
			}
			cursor = res.Cursor
		}
		slices.Sort(a.Lines)
		return a, nil
	}
}

// lorePath asks Lore's paths (what the paths tool calls) for a shortest
// dependsOn path from one package into another; the answer is its length,
// once the path is checked against the generated graph.
func lorePath(g *Graph, from, to string) func(context.Context, *Lore, graph.Limits) (Answer, error) {
	return func(ctx context.Context, l *Lore, ceilings graph.Limits) (Answer, error) {
		res, err := graph.Paths(ctx, l.Store, graph.PathsQuery{From: graph.ID(from), To: graph.ID(to), Labels: []string{"dependsOn"}, Direction: graph.Out}, ceilings)
		if err != nil {
			return Answer{}, err
		}
		a := Answer{Elapsed: ms(res.Stats.ElapsedMs), Visited: res.Stats.Visited}
		if res.Truncated {
			a.Truncated = res.Reason
		}
		if len(res.Paths) == 0 {
			a.Lines = []string{"no path"}
			return a, nil
		}
		ids := make([]string, len(res.Paths[0].Nodes))
		for i, id := range res.Paths[0].Nodes {
			ids[i] = string(id)
		}
		a.Lines, err = g.checkPath(ids, from, to)
		return a, err
	}
}

func pgPath(g *Graph, from, to string) func(context.Context, *Postgres) (Answer, error) {
	q := pgRows("path", from, to, "dependsOn", graph.DefaultCeilings.MaxHops)
	return func(ctx context.Context, p *Postgres) (Answer, error) {
		a, err := q(ctx, p)
		if err != nil || len(a.Lines) == 0 {
			a.Lines = []string{"no path"}
			return a, err
		}
		a.Lines, err = g.checkPath(strings.Split(a.Lines[0], " "), from, to)
		return a, err
	}
}

// checkPath checks that ids is a dependsOn path from one node to the other
// in g, and returns its length as the answer.
func (g *Graph) checkPath(ids []string, from, to string) ([]string, error) {
	bad := len(ids) < 2 || ids[0] != from || ids[len(ids)-1] != to
	for i := 0; !bad && i+1 < len(ids); i++ {
		a, okA := g.rank(ids[i])
		b, okB := g.rank(ids[i+1])
		bad = !okA || !okB || !slices.Contains(g.Packages[a].DependsOn, b)
	}
	if bad {
		return nil, fmt.Errorf("%v is not a dependsOn path from %s to %s in the generated graph", ids, from, to)
	}
	return []string{fmt.Sprintf("%d hops", len(ids)-1)}, nil
}

// pgRows runs a prepared statement; the answer is one line per row, the
// row's columns joined by spaces (a JSON column in canonical form).
func pgRows(stmt string, args ...any) func(context.Context, *Postgres) (Answer, error) {
	return func(ctx context.Context, p *Postgres) (Answer, error) {
		var a Answer
		start := time.Now()
		rows, err := p.Conn.Query(ctx, stmt, args...)
		if err != nil {
			return a, fmt.Errorf("%s: %w", stmt, err)
		}
		var values [][]any
		for rows.Next() {
			v, err := rows.Values()
			if err != nil {
				rows.Close()
				return a, err
			}
			values = append(values, v)
		}
		rows.Close()
		a.Elapsed = time.Since(start)
		if err := rows.Err(); err != nil {
			return a, fmt.Errorf("%s: %w", stmt, err)
		}
		for _, v := range values {
			parts := make([]string, len(v))
			for i, c := range v {
				parts[i] = column(c)
			}
			a.Lines = append(a.Lines, strings.Join(parts, " "))
		}
		return a, nil
	}
}

// sorted sorts an answer's lines (SQL without ORDER BY has no order; Lore
// orders by ID).
func sorted(q func(context.Context, *Postgres) (Answer, error)) func(context.Context, *Postgres) (Answer, error) {
	return func(ctx context.Context, p *Postgres) (Answer, error) {
		a, err := q(ctx, p)
		slices.Sort(a.Lines)
		return a, err
	}
}

func column(c any) string {
	switch c := c.(type) {
	case map[string]any:
		return canonical(c)
	case []any:
		parts := make([]string, len(c))
		for i, x := range c {
			parts[i] = fmt.Sprint(x)
		}
		return strings.Join(parts, " ")
	}
	return fmt.Sprint(c)
}

// line renders one of Lore's results as pgRows renders a row: id, type and
// properties, or the fields asked for.
func line(n map[string]any) string {
	var parts []string
	for _, f := range []string{"id", "type", "properties", "size"} {
		if v, ok := n[f]; ok {
			parts = append(parts, column(v))
		}
	}
	return strings.Join(parts, " ")
}

// canonical renders a JSON object with sorted keys and numbers as written.
func canonical(v any) string {
	data, _ := json.Marshal(v)
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var x any
	d.Decode(&x)
	data, _ = json.Marshal(x)
	return string(data)
}

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

// A Mismatch is a question the two sides answered differently.
type Mismatch struct {
	Question  string
	Lore, PG  []string
	Truncated string
}

func (m *Mismatch) Error() string {
	const show = 5
	onlyLore, onlyPG := missing(m.Lore, m.PG, show), missing(m.PG, m.Lore, show)
	msg := fmt.Sprintf("%s: the answers differ: Lore has %d lines, PostgreSQL %d; only Lore's: %q; only PostgreSQL's: %q",
		m.Question, len(m.Lore), len(m.PG), onlyLore, onlyPG)
	if len(onlyLore) == 0 && len(onlyPG) == 0 {
		msg += fmt.Sprintf("; the order differs: Lore %q, PostgreSQL %q", head(m.Lore, show), head(m.PG, show))
	}
	if m.Truncated != "" {
		msg += "; Lore's answer was truncated by its " + m.Truncated + " bound"
	}
	return msg
}

// missing returns up to n lines of a that b lacks.
func missing(a, b []string, n int) []string {
	in := make(map[string]bool, len(b))
	for _, l := range b {
		in[l] = true
	}
	var out []string
	for _, l := range a {
		if !in[l] && len(out) < n {
			out = append(out, l)
		}
	}
	return out
}

func head(s []string, n int) []string { return s[:min(n, len(s))] }

// Agree asks every question of both sides once, under Lore's ceilings, and
// returns every mismatch (joined), or nil when all answers agree. A
// truncated Lore answer is a mismatch. A check-only question whose
// PostgreSQL answer has more than maxLines lines is not asked of Lore
// (paging through a closure re-expands it for every page of 10,000): its
// name is returned in skipped. maxLines 0 means no such limit.
func Agree(ctx context.Context, qs []Question, l *Lore, p *Postgres, ceilings graph.Limits, maxLines int) (skipped []string, _ error) {
	var errs []error
	for _, q := range qs {
		pa, err := q.PG(ctx, p)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: PostgreSQL: %w", q.Name, err))
			continue
		}
		if q.CheckOnly && maxLines > 0 && len(pa.Lines) > maxLines {
			skipped = append(skipped, q.Name)
			continue
		}
		la, err := q.Lore(ctx, l, ceilings)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: Lore: %w", q.Name, err))
			continue
		}
		if la.Truncated != "" || !slices.Equal(la.Lines, pa.Lines) {
			errs = append(errs, &Mismatch{Question: q.Name, Lore: la.Lines, PG: pa.Lines, Truncated: la.Truncated})
		}
	}
	return skipped, errors.Join(errs...)
}

// Generous are the ceilings the benchmark gives Lore, as a server's
// configuration may: high enough that no question is cut, so that the
// answers can be compared. The table also says whether each question
// completes within graph.DefaultCeilings.
var Generous = graph.Limits{MaxResults: 10000, MaxHops: graph.DefaultCeilings.MaxHops, MaxVisited: 1 << 30, TimeoutMs: 30 * 60 * 1000, MaxBytes: 1 << 30}
