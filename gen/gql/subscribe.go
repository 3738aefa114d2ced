package gql

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"

	"github.com/lore-dev/lore/gen/gql/model"
	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/mcp"
)

// Subscriptions mirror MCP's resource subscriptions: each follows the
// catalog's feed of committed changes (Catalog.Updates) and passes on the
// changes that touched its resource.

func (r *subscriptionResolver) subscriptionResourceUpdated(ctx context.Context, uri string) (<-chan *model.ResourceUpdate, error) {
	return follow(ctx, r.Cat, uri)
}

func (r *subscriptionResolver) subscriptionNodeChanged(ctx context.Context, id string) (<-chan *model.ResourceUpdate, error) {
	return follow(ctx, r.Cat, mcp.NodeURI(graph.ID(id)))
}

func (r *subscriptionResolver) subscriptionTypeChanged(ctx context.Context, typ string) (<-chan *model.ResourceUpdate, error) {
	return follow(ctx, r.Cat, mcp.TypeURI(typ))
}

// follow delivers every change committed from now on that touched uri,
// until ctx is done.
func follow(ctx context.Context, cat *mcp.Catalog, uri string) (<-chan *model.ResourceUpdate, error) {
	updates, err := cat.Updates(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan *model.ResourceUpdate)
	go func() {
		defer close(out)
		for u := range updates {
			if !slices.Contains(u.URIs, uri) {
				continue
			}
			select {
			case out <- &model.ResourceUpdate{URI: uri, Change: toChange(&u.Change)}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// replayPage is how many log entries the changes subscription reads per
// changes_since call while it replays.
const replayPage = 1000

// subscriptionChanges delivers every committed change: with since, first
// those after it from the change log (through changes_since), then the new
// ones. It starts following before it replays, so a change committed
// during the replay is delivered once, in order.
func (r *subscriptionResolver) subscriptionChanges(ctx context.Context, since *int) (<-chan *model.Change, error) {
	ctx, cancel := context.WithCancel(ctx)
	updates, err := r.Cat.Updates(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	var first *model.ChangesSinceResult
	if since != nil {
		// The first page is read now, so a bad cursor is the subscription's error.
		first, err = invoke[*model.ChangesSinceResult](ctx, r.Cat, "changes_since", map[string]any{"cursor": *since, "limit": replayPage})
		if err != nil {
			cancel()
			return nil, err
		}
	}
	out := make(chan *model.Change)
	go func() {
		defer cancel()
		defer close(out)
		last := -1
		send := func(c *model.Change) bool {
			if c == nil || c.Seq <= last {
				return true
			}
			last = c.Seq
			select {
			case out <- c:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for page := first; page != nil; {
			for _, c := range page.Changes {
				if !send(c) {
					return
				}
			}
			if more, _ := page.More.(bool); !more || len(page.Changes) == 0 {
				break
			}
			page, err = invoke[*model.ChangesSinceResult](ctx, r.Cat, "changes_since", map[string]any{"cursor": last, "limit": replayPage})
			if err != nil {
				if ctx.Err() == nil {
					r.log.ErrorContext(ctx, "replaying the change log", "error", err)
				}
				return
			}
		}
		for u := range updates {
			if !send(toChange(&u.Change)) {
				return
			}
		}
	}()
	return out, nil
}

// toChange converts a change-log entry to its GraphQL type through its
// JSON, the form every surface shows.
func toChange(c *graph.Change) *model.Change {
	data, err := json.Marshal(c)
	if err != nil {
		return nil
	}
	var out model.Change
	if err := decode(data, &out); err != nil {
		return nil
	}
	return &out
}

// discard is the logger when Options give none.
var discard = slog.New(slog.DiscardHandler)
