package web

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// A Check is one condition of readiness (/readyz): Run returns nil when
// it holds, else an error saying what is wrong, and what to do if that
// is known.
type Check struct {
	// Name identifies the check in /readyz's body, such as "store".
	Name string
	// Run runs the check; its ctx ends after Options.ReadyTimeout.
	Run func(ctx context.Context) error
}

// DefaultReadyTimeout bounds each check of /readyz unless
// Options.ReadyTimeout says otherwise.
const DefaultReadyTimeout = 5 * time.Second

// readyBody is /readyz's answer: status "ready" (200) or "unavailable"
// (503, with failed naming the first check that failed, and why).
type readyBody struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"` // name → "ok" or the error
	Failed string            `json:"failed,omitempty"`
	Error  string            `json:"error,omitempty"`
}

// readyz runs checks in order and answers 200 if all pass, else 503
// naming the first that failed; the checks after it are not run.
func readyz(checks []Check, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readyBody{Status: "ready", Checks: map[string]string{}}
		code := http.StatusOK
		for _, c := range checks {
			ctx, cancel := context.WithTimeout(r.Context(), timeout)
			err := c.Run(ctx)
			cancel()
			if err != nil {
				body.Status, body.Failed, body.Error, code = "unavailable", c.Name, err.Error(), http.StatusServiceUnavailable
				body.Checks[c.Name] = err.Error()
				break
			}
			body.Checks[c.Name] = "ok"
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(body)
	})
}
