package web

import (
	"net/http"
	"strconv"

	"github.com/lore-dev/lore/graph"
)

// Read-your-writes over HTTP (REST and GraphQL): a response to a request
// that wrote carries the write's change-log sequence number in a Lore-Seq
// header; a client sends the newest it holds back as Lore-Min-Seq, to any
// replica, and the reads of that request see at least that write (a
// replica reading from a hot standby waits for its replay; see
// graph.SeqFloor).
const (
	headerSeq    = "Lore-Seq"
	headerMinSeq = "Lore-Min-Seq"
)

// withSeqFloor runs h with a graph.SeqFloor in the request's context, set
// from Lore-Min-Seq, and reports it in Lore-Seq when it is above 0. A
// WebSocket upgrade gets the floor but no header, and its writer is left
// as it is (so it can be hijacked).
func withSeqFloor(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fl := new(graph.SeqFloor)
		if v := r.Header.Get(headerMinSeq); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				http.Error(w, headerMinSeq+" must be a change-log sequence number, as a Lore-Seq response header gave it", http.StatusBadRequest)
				return
			}
			fl.Raise(n)
		}
		r = r.WithContext(graph.WithSeqFloor(r.Context(), fl))
		if r.Header.Get("Upgrade") != "" {
			h.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(&seqWriter{ResponseWriter: w, floor: fl}, r)
	})
}

// seqWriter sets Lore-Seq as the response's header is written.
type seqWriter struct {
	http.ResponseWriter
	floor   *graph.SeqFloor
	stamped bool
}

func (w *seqWriter) stamp() {
	if !w.stamped {
		w.stamped = true
		if n := w.floor.Seq(); n > 0 {
			w.Header().Set(headerSeq, strconv.FormatUint(n, 10))
		}
	}
}

func (w *seqWriter) WriteHeader(code int) {
	w.stamp()
	w.ResponseWriter.WriteHeader(code)
}

func (w *seqWriter) Write(b []byte) (int, error) {
	w.stamp()
	return w.ResponseWriter.Write(b)
}

// Flush flushes a streamed response (REST's server-sent events).
func (w *seqWriter) Flush() {
	w.stamp()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *seqWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
