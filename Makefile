# Lore. `make run` serves the embedded store with the example data (ADDR=host:port listens elsewhere, ARGS adds flags);
# `make test` runs every test; `make test-race` runs them with the race detector and the OpenAPI validators (tag openapi),
# as CI does (.ci/run).
GO ?= go

.PHONY: all run test test-race test-short race lint cross bench bench-mcp bench-pg bench-go generate check-generate fuzz conformance inspector web check-web browser-test attack interop

all: generate lint test

run:            ; $(GO) run ./cmd/lore serve $(if $(ADDR),--addr '$(ADDR)') $(ARGS)
# make test skips go vet (make lint runs it, with every build tag; so does make test-race) and gen/cmd/generate, which has
# no tests (make generate runs it): from an empty build cache, compiling go/types, x/tools and gqlgen's generator for
# nothing was a tenth of the work.
TESTPKGS = $(shell $(GO) list ./... | grep -v '/gen/cmd/generate$$')
test:           ; $(GO) test -vet=off -timeout 20m $(TESTPKGS)
test-race:      ; $(GO) test -race -vet=off -tags openapi -timeout 30m ./...
test-short:     ; $(GO) test -short ./...
lint:           ; test -z "$$(gofmt -l .)" && $(GO) vet -tags browser,interop,attack,openapi ./... && $(GO) tool staticcheck -tags browser,interop,attack,openapi ./...
# The product (tests aside) builds where Lore is not tested: Windows (no dup, no rename over an open file; see
# graph/bolt/reopen_other.go) on a 32-bit int.
cross:          ; GOOS=windows GOARCH=386 $(GO) build ./...
# Default sizes of the benchmarks. They are variables because a comma inside $(or ...) separates its
# arguments: $(or $(SIZES),100000,1000000) gave 100000 alone.
BENCH_SIZES    = 10000,100000,1000000
BENCH_PG_SIZES = 100000,1000000
bench:          ; $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 180m ./graph/bolt -lore.sizes $(or $(SIZES),$(BENCH_SIZES)) -lore.qsizes $(or $(SIZES),$(BENCH_SIZES))
bench-mcp:      ; $(GO) test -run '^$$' -bench Transports -benchtime 1x -timeout 60m ./mcp -lore.mcpsizes $(or $(SIZES),10000)
# Lore against PostgreSQL at 127.0.0.1:5432 (trust auth; its own database, dropped after) on the same generated package
# index: answers checked to agree, then p50/p90 and Lore ÷ PostgreSQL per question (issue 18). SIZES=10000 is a quick run;
# RUNS sets the timed runs per question and side (default 30). PGSTORE=1 adds Lore on PostgreSQL (graph/postgres, in a
# database of its own on the same server) as a third side, with a table of its own.
bench-pg:       ; $(GO) test -run '^$$' -bench PG -benchtime 1x -timeout 240m ./graph/pgbench -lore.pgsizes $(or $(SIZES),$(BENCH_PG_SIZES)) -lore.pgruns $(or $(RUNS),30) -lore.pgstore=$(if $(PGSTORE),true,false)
bench-go:       ; $(GO) test -run '^$$' -bench . -benchmem ./...
# Every decoder of outside input has a fuzz target; make fuzz runs each for FUZZTIME (the issue notes quote 10m runs).
# CI counts executions, not seconds: with a duration, Go 1.26's fuzz coordinator can fail a target at the deadline
# with a bare "context deadline exceeded" and no failing input (golang/go#75804, fixed in Go 1.27).
FUZZTIME ?= 5000x
FUZZ = schema:FuzzCheckJSON schema:FuzzModel graph:FuzzQuery graph:FuzzQueryCursor graph:FuzzEdgeKey graph:FuzzImportNDJSON graph:FuzzNDJSONFastDecode \
	graph:FuzzImportNQuads graph:FuzzImportMemory graph:FuzzCursorQuery graph:FuzzCursorQueryPayload graph:FuzzCursorSearch \
	graph:FuzzCursorStorePage graph:FuzzDecodeSomeProps graph:FuzzCursorNeighborsPaths graph:FuzzSearchQuery graph:FuzzParseMigration graph:FuzzAppendCanonical graph/bolt:FuzzStoreRecords graph/bolt:FuzzPackedBlock gen/rest:FuzzRESTBody gen/rest:FuzzRESTQuery gen/gql:FuzzGraphQL cmd/lore:FuzzTokensFile \
	mcp:FuzzTopLevel mcp:FuzzAdmit
fuzz:           ; set -e; for t in $(FUZZ); do echo "fuzz $$t ($(FUZZTIME))"; $(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) ./$${t%%:*}; done
# Every finding of issue 16 replayed against real lore serve processes; prints each attack's server CPU and RSS.
attack:         ; $(GO) vet -tags attack ./cmd/lore && $(GO) test -tags attack -run '^TestAttack$$' -count=1 -timeout 10m -v ./cmd/lore
conformance:    ; .ci/conformance
# The MCP Inspector CLI in --strict mode lists the tools over stdio and HTTP: any schema portability warning fails.
inspector:      ; .ci/inspector
generate:       ; $(GO) run ./gen/cmd/generate
check-generate: generate ; git diff --exit-code && test -z "$$(git status --porcelain)"
web:            ; cd web/console && npm ci --ignore-scripts --no-audit --no-fund && node build.mjs
check-web:      web ; git diff --exit-code -- web/console && test -z "$$(git status --porcelain -- web/console/dist)"
browser-test:   ; .ci/browser-test
# The TypeScript MCP SDK's client on lore mcp, sharing a store with the Go SDK's, lore serve and the CLI (npm ci, then go test -tags interop).
interop:        ; .ci/interop
