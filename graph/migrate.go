package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lore-dev/lore/schema"
)

// A Migration is a declarative change of stored nodes, the common cases of
// a model change that the data must follow: rename a property, give one a
// default, change the JSON type of its values, change the type of nodes
// (keeping their IDs, creation times and edges). Migrate runs it as ordinary
// atomic batches, each recorded in the change log. Every step is
// idempotent, so a migration stopped part way (a crash, a cancel) is
// finished by running it again.
type Migration struct {
	Steps []MigrationStep `json:"steps"`
}

// A MigrationStep is one change; exactly one of its fields is set. A step
// applies to the nodes of one type, in the order the steps are listed: a
// node that RetypeNodes re-types goes through the later steps of its new
// type.
type MigrationStep struct {
	// RenameProperty moves a property's value to a new name; a node that
	// has both names keeps the new one's value and loses the old.
	RenameProperty *RenameProperty `json:"renameProperty,omitempty"`
	// SetDefault gives a property a value on every node that lacks it.
	SetDefault *SetDefault `json:"setDefault,omitempty"`
	// ConvertProperty changes the JSON type of a property's values.
	ConvertProperty *ConvertProperty `json:"convertProperty,omitempty"`
	// RetypeNodes changes the type of nodes.
	RetypeNodes *RetypeNodes `json:"retypeNodes,omitempty"`
}

// RenameProperty renames property From of the nodes of Type to To.
type RenameProperty struct {
	Type string `json:"type"`
	From string `json:"from"`
	To   string `json:"to"`
}

// SetDefault sets Property of the nodes of Type that lack it to Value.
type SetDefault struct {
	Type     string          `json:"type"`
	Property string          `json:"property"`
	Value    json.RawMessage `json:"value"`

	value any
}

// ConvertProperty converts the values of Property of the nodes of Type to
// To: "string" (numbers and booleans as their JSON text), "integer" (from
// integral numbers and strings that hold one), "number" (from strings that
// hold one) or "boolean" (from "true" and "false", in any case). A value
// that cannot be converted stops the migration before anything is written.
type ConvertProperty struct {
	Type     string `json:"type"`
	Property string `json:"property"`
	To       string `json:"to"`
}

// RetypeNodes makes nodes of type From nodes of type To: all of them, or
// those IDs lists, or those Where matches (a filter of the query
// language, over the node as the earlier steps leave it), or, with both,
// those listed that match. A re-typed node keeps its ID, properties,
// creation time and edges; it must fit To, and each of its edges must
// still join types its label allows, or the batch that writes it is
// refused.
type RetypeNodes struct {
	From  string          `json:"from"`
	To    string          `json:"to"`
	IDs   []ID            `json:"ids,omitempty"`
	Where json.RawMessage `json:"where,omitempty"`

	ids   map[ID]bool
	where *filter
}

// matches reports whether r re-types n.
func (r *RetypeNodes) matches(n *Node) bool {
	return (r.ids == nil || r.ids[n.ID]) && r.where.match(n)
}

// compiledFilterSchema checks a filter as the query language does.
var compiledFilterSchema = sync.OnceValue(func() *jsonschema.Schema { return compileQuerySchema("#/$defs/filter") })

// compileWhere checks and compiles a retypeNodes filter. Its fields are
// not checked against a model: a migration is read before the model it
// runs under is known, and a field no node has matches nothing.
func compileWhere(raw json.RawMessage) (*filter, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	if err := compiledFilterSchema().Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return nil, &QueryError{explain(schema.Flatten(ve))}
		}
		return nil, err
	}
	v := &checker{}
	f := v.filter("", raw, fields{})
	if len(v.problems) > 0 {
		return nil, &QueryError{v.problems}
	}
	return f, nil
}

// ParseMigration decodes a migration document strictly: an unknown field,
// a step with no change or with two, or a missing name is an error that
// says where. So is what the decoder would take silently (a key given
// twice, of which it keeps the last; invalid UTF-8, which it replaces, and
// which a setDefault value would write into every node) or slowly
// (nesting deeper than schema.DefaultMaxDepth).
func ParseMigration(data []byte) (*Migration, error) {
	if err := schema.CheckJSON(data, schema.DefaultMaxDepth); err != nil {
		return nil, fmt.Errorf("migration: %w", err)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	var m Migration
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("migration: %w", err)
	}
	if len(m.Steps) == 0 {
		return nil, errors.New("migration: no steps")
	}
	for i := range m.Steps {
		if err := m.Steps[i].check(); err != nil {
			return nil, fmt.Errorf("migration: /steps/%d: %w", i, err)
		}
		// A node re-typed into T goes through T's later steps only; a
		// second run would put it through T's earlier ones too.
		if r := m.Steps[i].RetypeNodes; r != nil {
			for j := range i {
				if m.Steps[j].typ() == r.To {
					return nil, fmt.Errorf("migration: /steps/%d: retypeNodes: /steps/%d changes %s nodes before this step makes more of them, so running the migration again would change those too; put it after this step", i, j, r.To)
				}
			}
		}
	}
	return &m, nil
}

func (st *MigrationStep) check() error {
	set := 0
	for _, ok := range []bool{st.RenameProperty != nil, st.SetDefault != nil, st.ConvertProperty != nil, st.RetypeNodes != nil} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return errors.New("want exactly one of renameProperty, setDefault, convertProperty, retypeNodes")
	}
	need := func(name, v string) error {
		if v == "" {
			return fmt.Errorf("%s is required", name)
		}
		return nil
	}
	switch {
	case st.RenameProperty != nil:
		r := st.RenameProperty
		if err := errors.Join(need("renameProperty/type", r.Type), need("renameProperty/from", r.From), need("renameProperty/to", r.To)); err != nil {
			return err
		}
		if r.From == r.To {
			return errors.New("renameProperty: from and to are the same")
		}
	case st.SetDefault != nil:
		s := st.SetDefault
		if err := errors.Join(need("setDefault/type", s.Type), need("setDefault/property", s.Property)); err != nil {
			return err
		}
		if len(s.Value) == 0 {
			return errors.New("setDefault/value is required")
		}
		d := json.NewDecoder(bytes.NewReader(s.Value))
		d.UseNumber()
		if err := d.Decode(&s.value); err != nil {
			return fmt.Errorf("setDefault/value: %w", err)
		}
	case st.RetypeNodes != nil:
		r := st.RetypeNodes
		if err := errors.Join(need("retypeNodes/from", r.From), need("retypeNodes/to", r.To)); err != nil {
			return err
		}
		if r.From == r.To {
			return errors.New("retypeNodes: from and to are the same")
		}
		if r.IDs != nil {
			if len(r.IDs) == 0 {
				return errors.New("retypeNodes/ids is empty: leave it out to re-type every node of the type")
			}
			r.ids = make(map[ID]bool, len(r.IDs))
			for i, id := range r.IDs {
				if err := id.Check(); err != nil {
					return fmt.Errorf("retypeNodes/ids/%d: %s", i, unwrapMsg(err))
				}
				r.ids[id] = true
			}
		}
		if len(r.Where) > 0 {
			f, err := compileWhere(r.Where)
			if err != nil {
				return fmt.Errorf("retypeNodes/where: %w", err)
			}
			r.where = f
		}
	default:
		c := st.ConvertProperty
		if err := errors.Join(need("convertProperty/type", c.Type), need("convertProperty/property", c.Property)); err != nil {
			return err
		}
		switch c.To {
		case "string", "integer", "number", "boolean":
		default:
			return fmt.Errorf("convertProperty/to: want string, integer, number or boolean, not %q", c.To)
		}
	}
	return nil
}

// typ is the node type the step changes.
func (st *MigrationStep) typ() string {
	switch {
	case st.RenameProperty != nil:
		return st.RenameProperty.Type
	case st.SetDefault != nil:
		return st.SetDefault.Type
	case st.RetypeNodes != nil:
		return st.RetypeNodes.From
	default:
		return st.ConvertProperty.Type
	}
}

// apply changes n's type and properties in place (a copy of them: the
// caller's map is not written) and reports whether anything changed; on
// an error, n is left as it was.
func (m *Migration) apply(n *Node) (changed bool, err error) {
	props := n.Properties
	typ := n.Type
	own := false
	write := func() {
		if !own {
			c := make(Props, len(props)+1)
			for k, v := range props {
				c[k] = v
			}
			props, own = c, true
		}
	}
	for i := range m.Steps {
		st := &m.Steps[i]
		if st.typ() != typ {
			continue
		}
		switch {
		case st.RetypeNodes != nil:
			cur := *n
			cur.Type, cur.Properties = typ, props
			if st.RetypeNodes.matches(&cur) {
				typ = st.RetypeNodes.To
				changed = true
			}
		case st.RenameProperty != nil:
			r := st.RenameProperty
			v, ok := props[r.From]
			if !ok {
				continue
			}
			write()
			if _, has := props[r.To]; !has {
				props[r.To] = v
			}
			delete(props, r.From)
			changed = true
		case st.SetDefault != nil:
			s := st.SetDefault
			if _, ok := props[s.Property]; ok {
				continue
			}
			write()
			props[s.Property] = s.value
			changed = true
		default:
			c := st.ConvertProperty
			v, ok := props[c.Property]
			if !ok || v == nil {
				continue
			}
			nv, err := convertValue(v, c.To)
			if err != nil {
				return false, fmt.Errorf("/steps/%d: property %s: %w", i, c.Property, err)
			}
			if sameValue(v, nv) {
				continue
			}
			write()
			props[c.Property] = nv
			changed = true
		}
	}
	if changed {
		n.Type, n.Properties = typ, props
	}
	return changed, nil
}

func sameValue(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// convertValue converts one property value (as stored: string,
// json.Number, bool, []any, map[string]any) to the JSON type to.
func convertValue(v any, to string) (any, error) {
	switch to {
	case "string":
		switch x := v.(type) {
		case string:
			return x, nil
		case json.Number:
			return x.String(), nil
		case bool:
			return strconv.FormatBool(x), nil
		}
	case "integer":
		switch x := v.(type) {
		case json.Number:
			if i, err := x.Int64(); err == nil {
				return json.Number(strconv.FormatInt(i, 10)), nil
			}
			if f, err := x.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
				return json.Number(strconv.FormatInt(int64(f), 10)), nil
			}
			return nil, fmt.Errorf("%s is not an integer", x)
		case string:
			if i, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
				return json.Number(strconv.FormatInt(i, 10)), nil
			}
			return nil, fmt.Errorf("%q is not an integer", x)
		}
	case "number":
		switch x := v.(type) {
		case json.Number:
			return x, nil
		case string:
			t := strings.TrimSpace(x)
			if f, err := strconv.ParseFloat(t, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
				return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
			}
			return nil, fmt.Errorf("%q is not a number", x)
		}
	case "boolean":
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "true":
				return true, nil
			case "false":
				return false, nil
			}
			return nil, fmt.Errorf("%q is not true or false", x)
		}
	}
	return nil, fmt.Errorf("a %s cannot become a %s", jsonKind(v), to)
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}

// MigrationOptions configure Migrate.
type MigrationOptions struct {
	// BatchSize is the number of nodes per batch; 0 means 1,000.
	BatchSize int
	// DryRun checks every node and writes nothing.
	DryRun bool
	// Progress, if set, is called after each batch with the nodes examined
	// and changed so far.
	Progress func(examined, changed int64)
	// First is how many unconvertible nodes to list; 0 means 10.
	First int
}

// A MigrationReport is what Migrate did, or would do.
type MigrationReport struct {
	Examined int64 `json:"examined"`
	Changed  int64 `json:"changed"`
	Batches  int   `json:"batches"`
	// Failed counts the nodes a step cannot change (a value that does not
	// convert); First lists the first of them. Any failure stops the
	// migration before it writes.
	Failed int64       `json:"failed"`
	First  []Rejection `json:"first,omitempty"`
}

// Migrate runs m over the nodes of s: first a pass that changes nothing
// and fails if any node cannot be migrated, then, unless opt.DryRun, a
// pass that writes the changed nodes in batches of opt.BatchSize, each an
// ordinary atomic batch with op "migrate" in the change log, held to the
// revision each node had when it was read (a concurrent write to one of
// them makes the batch a conflict, and running Migrate again finishes).
func Migrate(ctx context.Context, s Store, m *Migration, opt MigrationOptions) (*MigrationReport, error) {
	first := opt.First
	if first <= 0 {
		first = 10
	}
	rep := &MigrationReport{}
	if err := eachMigrated(ctx, s, m, func(n *Node, changed bool, err error) error {
		rep.Examined++
		if err != nil {
			rep.Failed++
			if len(rep.First) < first {
				rep.First = append(rep.First, Rejection{Kind: "node", ID: string(n.ID), Violations: []schema.Violation{{Pointer: "/properties", Rule: "migration", Message: err.Error()}}})
			}
		} else if changed {
			rep.Changed++
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if rep.Failed > 0 {
		return rep, fmt.Errorf("%d nodes cannot be migrated (the first: %s: %s); nothing was written: %w",
			rep.Failed, rep.First[0].ID, rep.First[0].Violations[0].Message, ErrInvalid)
	}
	if opt.DryRun || rep.Changed == 0 {
		return rep, nil
	}
	size := opt.BatchSize
	if size <= 0 {
		size = 1000
	}
	var examined, changed int64
	b := &Batch{Op: "migrate", Retype: true}
	flush := func() error {
		if len(b.Nodes) == 0 {
			return nil
		}
		if _, err := s.Apply(ctx, b); err != nil {
			return fmt.Errorf("migration batch %d (%d nodes, from %s): %w", rep.Batches+1, len(b.Nodes), b.Nodes[0].ID, err)
		}
		rep.Batches++
		changed += int64(len(b.Nodes))
		if opt.Progress != nil {
			opt.Progress(examined, changed)
		}
		b = &Batch{Op: "migrate", Retype: true}
		return nil
	}
	err := eachMigrated(ctx, s, m, func(n *Node, ok bool, err error) error {
		examined++
		if err != nil {
			return fmt.Errorf("node %s changed since it was checked: %w", n.ID, err)
		}
		if !ok {
			return nil
		}
		rev := n.Revision
		b.Nodes = append(b.Nodes, NodeInput{ID: n.ID, Type: n.Type, Properties: n.Properties, ExpectedRevision: &rev})
		if len(b.Nodes) >= size {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return rep, err
}

// eachMigrated calls f with every node of the types m changes, migrated
// (when changed is set), in pages of one committed state each. A node
// re-typed into a type whose nodes are listed after its own (by an
// earlier batch of Migrate) is seen again there, unchanged.
func eachMigrated(ctx context.Context, s Store, m *Migration, f func(n *Node, changed bool, err error) error) error {
	seen := map[string]bool{}
	for i := range m.Steps {
		typ := m.Steps[i].typ()
		if seen[typ] {
			continue
		}
		seen[typ] = true
		if _, ok := s.Model().Node(typ); !ok && m.makes(typ) {
			continue // a type the store's model lacks yet: only re-typed nodes will have it
		}
		for p := (Page{Limit: MaxPageSize}); ; {
			page, err := s.NodesByType(ctx, typ, p)
			if err != nil {
				return err
			}
			for _, n := range page.Nodes {
				changed, err := m.apply(n)
				if err := f(n, changed, err); err != nil {
					return err
				}
			}
			if page.Next == "" {
				break
			}
			p.After = page.Next
		}
	}
	return nil
}

// Migrated returns a read-only view of s in which every node reads as m
// would leave it, for checking a model against the data as a migration
// will leave it (CheckModel(ctx, Migrated(s, m), model, n)) before
// anything is written. Only the Store interface is seen through it.
func Migrated(s Store, m *Migration) Store { return &migratedView{Store: s, m: m} }

type migratedView struct {
	Store
	m *Migration
}

func (v *migratedView) fix(nodes []*Node) {
	for i, n := range nodes {
		if n == nil {
			continue
		}
		c := *n
		if changed, err := v.m.apply(&c); err == nil && changed {
			nodes[i] = &c
		}
	}
}

func (v *migratedView) ScanNodes(ctx context.Context, p Page) (*NodePage, error) {
	page, err := v.Store.ScanNodes(ctx, p)
	if err == nil {
		v.fix(page.Nodes)
	}
	return page, err
}

// NodesByType lists the nodes that have typ once migrated, in ID order:
// those of typ that no step re-types, and those of the types that
// retypeNodes steps re-type, merged.
func (v *migratedView) NodesByType(ctx context.Context, typ string, p Page) (*NodePage, error) {
	sources := []string{typ}
	retypes := false
	for _, st := range v.m.Steps {
		if r := st.RetypeNodes; r != nil {
			retypes = true
			if !slices.Contains(sources, r.From) {
				sources = append(sources, r.From)
			}
		}
	}
	if !retypes {
		page, err := v.Store.NodesByType(ctx, typ, p)
		if err == nil {
			v.fix(page.Nodes)
		}
		return page, err
	}
	limit := p.Size()
	var nodes []*Node
	more := false // some source has nodes past those taken
	for i, src := range sources {
		if _, ok := v.Store.Model().Node(src); !ok && i > 0 {
			continue // no stored node has a type the model lacks
		}
		// Up to limit nodes of src that become typ, in ID order.
		var got []*Node
		for q := (Page{After: p.After, Limit: limit}); ; {
			page, err := v.Store.NodesByType(ctx, src, q)
			if err != nil {
				if !errors.Is(err, ErrInvalid) || !v.m.makes(typ) {
					return nil, err
				}
				break // typ is new: only re-typed nodes have it
			}
			v.fix(page.Nodes)
			for _, n := range page.Nodes {
				if n.Type == typ {
					got = append(got, n)
				}
			}
			if page.Next == "" {
				break
			}
			if len(got) >= limit {
				more = true
				break
			}
			q.After = page.Next
		}
		nodes = append(nodes, got...)
	}
	slices.SortFunc(nodes, func(a, b *Node) int { return strings.Compare(string(a.ID), string(b.ID)) })
	if len(nodes) > limit {
		nodes, more = nodes[:limit], true
	}
	page := &NodePage{Nodes: nodes}
	if more {
		page.Next = string(nodes[len(nodes)-1].ID)
	}
	return page, nil
}

// makes reports whether a retypeNodes step makes nodes of typ.
func (m *Migration) makes(typ string) bool {
	for _, st := range m.Steps {
		if st.RetypeNodes != nil && st.RetypeNodes.To == typ {
			return true
		}
	}
	return false
}

func (v *migratedView) Node(ctx context.Context, id ID) (*Node, error) {
	n, err := v.Store.Node(ctx, id)
	if err == nil {
		ns := []*Node{n}
		v.fix(ns)
		n = ns[0]
	}
	return n, err
}

func (v *migratedView) Nodes(ctx context.Context, ids []ID) ([]*Node, error) {
	ns, err := v.Store.Nodes(ctx, ids)
	if err == nil {
		v.fix(ns)
	}
	return ns, err
}
