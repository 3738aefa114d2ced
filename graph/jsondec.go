package graph

import (
	"errors"

	sjson "github.com/segmentio/encoding/json"
)

// decodeJSON decodes one JSON value into v, numbers as json.Number, and
// refuses data after it; strict also refuses object fields v lacks. It is
// segmentio's decoder (already in the build through the MCP SDK): on the
// hot paths (every property read, every imported line) it costs a fraction
// of encoding/json's Decoder, which allocates a buffer per value.
func decodeJSON(data []byte, v any, strict bool) error {
	flags := sjson.UseNumber
	if strict {
		flags |= sjson.DisallowUnknownFields
	}
	rest, err := sjson.Parse(data, v, flags)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return errors.New("data after the JSON value")
	}
	return nil
}
