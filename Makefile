# make test   vet, gofmt, the suite with cgo (-race) and without, the pure-Go
#             build cross-compiled for arm64, s390x (big-endian) and 32-bit
#             arm and run under qemu-user, other systems' and 386 builds vetted,
#             every benchmark once, the bench/, prom/ and fleet/ modules
#             (prom/'s scrape checked by promtool, fleet/ synced through a
#             real redis-server), a one-minute torture run (make
#             torture-short). It first installs what is missing beside
#             Go (make deps); what still cannot run is skipped, one line each
#             saying why and how to get it: without a C compiler the cgo
#             parts, without qemu-user the runs under it. Under CI=true a
#             skip fails instead: CI runs everything
# make deps   install gcc, libc6-dev, make, qemu-user-static, prometheus
#             (for promtool), redis-server, postgresql-15 with
#             postgresql-15-hll and nginx when missing, as root with
#             apt-get (.ci/install-deps; otherwise it says what it could
#             not install, and passes)
# make bench  the benchmarks, both cores beside a sync.Mutex+map baseline
# make demo   several processes counting one stream into one shared arena (a
#             Count-Min window and a Bloom filter); needs only Go (without a
#             C compiler Go builds it without cgo)
# make bench-report
#             measure every structure on both builds beside exact maps and
#             other libraries, and write docs/BENCHMARKS.md and its charts
#             (docs/bench/*.svg) and the README's quote of its headline;
#             under 10 minutes on 2 cores. It installs
#             valgrind for the instruction counts when missing (as root,
#             apt-get), else the report says why they are missing.
#             REPORT_FLAGS=-quick checks the program in about a minute
# make torture
#             kill workers of both builds (cgo and pure Go) on shared files
#             and check that nothing that returned is lost, time the lock's
#             recovery from killed holders, and print the table that
#             docs/RELIABILITY.md quotes; under 15 minutes on 2 cores.
#             TORTURE_FLAGS=-storm=30m runs longer; make torture-short (part
#             of make test) takes about a minute

GO      ?= go
PKG     := ./...
CROSS   := arm64 s390x arm
BENCH   ?= .
COUNT   ?= 5
# Every test run below passes -timeout=$(TIMEOUT), far above a quiet run's: a machine
# loaded by other work (or another make test beside this one) is slow,
# and Go's default of 10 minutes then kills a suite that nothing hangs.
TIMEOUT ?= 60m
TMP     := $(CURDIR)/.build

QEMU_arm64 := qemu-aarch64-static
QEMU_s390x := qemu-s390x-static
QEMU_arm   := qemu-arm-static

# Looked up when a recipe runs, after deps: the C compiler cgo uses (without
# one, Go turns cgo off) and, in test-cross, each architecture's qemu-user.
CC_NAME  = $(firstword $(shell $(GO) env CC))
HAVE_CC  = $(shell command -v $(CC_NAME) 2>/dev/null)
NO_CC    = $(CC_NAME) not found; install gcc and libc6-dev, or run make test as root on Debian
NO_QEMU  = not found; install qemu-user-static, or run make test as root on Debian

# $(call skip,WHAT,WHY): a shell command printing one line that says what did
# not run, why and how to get it; under CI=true it fails as well.
skip = echo "skipped: $(1) ($(2))$(if $(filter true,$(CI)),; CI=true runs everything: failing)"$(if $(filter true,$(CI)), && exit 1)

.PHONY: test deps vet fmt test-cgo test-purego check-prefetch test-cross test-other-os bench-smoke bench-module prom-module fleet-module torture-short torture torture-build bench bench-report report-deps demo clean

test: deps vet fmt test-cgo test-purego check-prefetch test-cross test-other-os bench-smoke bench-module prom-module fleet-module torture-short

deps:
	@.ci/install-deps

vet: deps
	$(if $(HAVE_CC),CGO_ENABLED=1 $(GO) vet $(PKG),@$(call skip,vet of the cgo build,$(NO_CC)))
	CGO_ENABLED=0 $(GO) vet $(PKG)
	CGO_ENABLED=1 $(GO) vet -tags purego $(PKG)

fmt:
	@out=$$(gofmt -l . | grep -v -e '^bench/' -e '^prom/' -e '^fleet/' || true); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# The tests that do a quarter of their work under -race (raceScale), at
# full size without it: the cgo build's cores are compared only here.
RACE_SCALED := ^(TestParity_Cores|TestCountingBloom_Parity|TestWindows_HandlesShareToken|TestAllocs)$$

test-cgo: deps
	$(if $(HAVE_CC),CGO_ENABLED=1 $(GO) test -timeout=$(TIMEOUT) -race -count=1 $(PKG),@$(call skip,the suite with cgo and -race,$(NO_CC)))
	$(if $(HAVE_CC),CGO_ENABLED=1 $(GO) test -timeout=$(TIMEOUT) -count=1 -run '$(RACE_SCALED)' .,@$(call skip,the race-scaled tests at full size with cgo,$(NO_CC)))

test-purego:
	CGO_ENABLED=0 $(GO) test -timeout=$(TIMEOUT) -count=1 $(PKG)

# The C core's batches must keep their prefetch instructions: gcc once
# deleted them (a helper whose only effect was __builtin_prefetch looked
# like it did nothing), and only the benchmarks would have shown it.
check-prefetch: deps
	@mkdir -p $(TMP)
	@if [ -z "$(HAVE_CC)" ]; then \
		$(call skip,the check that the C batches keep their prefetch instructions,$(NO_CC)); \
	elif [ "$$($(GO) env GOARCH)" = amd64 ]; then \
		CGO_ENABLED=1 $(GO) test -timeout=$(TIMEOUT) -c -o $(TMP)/sketch.cgo.test . && \
		for fn in sk_cms_add_batch sk_cms_estimate_batch sk_cbf_add_batch sk_bloom_add_batch sk_bloom_contains_batch; do \
			n=$$($(GO) tool objdump -s "^$$fn\$$" $(TMP)/sketch.cgo.test | grep -c PREFETCH); \
			if [ "$$n" -eq 0 ]; then echo "$$fn: no prefetch instruction left"; exit 1; fi; \
			echo "$$fn: $$n prefetch instructions"; \
		done; \
	fi

# The pure-Go build on other architectures: compile the test binaries of
# the package and of its cores (internal/cells: the hashes on big-endian),
# run them under qemu-user from their directories (they read testdata/).
# Without an architecture's qemu-user only its run is skipped.
test-cross: deps
	@mkdir -p $(TMP)
	@for arch in $(CROSS); do \
		echo "== linux/$$arch (pure Go, under qemu-user)"; \
		CGO_ENABLED=0 GOARCH=$$arch $(GO) test -timeout=$(TIMEOUT) -c -o $(TMP)/sketch.$$arch.test . || exit 1; \
		CGO_ENABLED=0 GOARCH=$$arch $(GO) test -timeout=$(TIMEOUT) -c -o $(TMP)/cells.$$arch.test ./internal/cells || exit 1; \
		CGO_ENABLED=0 GOARCH=$$arch $(GO) build -o /dev/null ./cmd/... || exit 1; \
		case $$arch in arm64) q=$(QEMU_arm64);; s390x) q=$(QEMU_s390x);; arm) q=$(QEMU_arm);; esac; \
		if ! command -v $$q >/dev/null; then \
			$(call skip,linux/$$arch pure-Go tests under qemu,$$q $(NO_QEMU)); continue; \
		fi; \
		(cd internal/cells && $$q $(TMP)/cells.$$arch.test -test.count=1 -test.timeout=$(TIMEOUT)) || exit 1; \
		$$q $(TMP)/sketch.$$arch.test -test.count=1 -test.timeout=$(TIMEOUT) || exit 1; \
	done

# Other systems build and say ErrUnsupported at Open.
test-other-os:
	CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 $(GO) vet $(PKG)
	CGO_ENABLED=0 GOOS=windows GOARCH=amd64 $(GO) vet $(PKG)
	CGO_ENABLED=0 GOOS=freebsd GOARCH=amd64 $(GO) vet $(PKG)
	CGO_ENABLED=0 GOOS=linux GOARCH=386 $(GO) vet $(PKG)

bench-smoke: deps
	$(if $(HAVE_CC),CGO_ENABLED=1 $(GO) test -timeout=$(TIMEOUT) -run='^$$' -bench=. -benchtime=1x -count=1 $(PKG),@$(call skip,every benchmark once with cgo,$(NO_CC)))
	CGO_ENABLED=0 $(GO) test -timeout=$(TIMEOUT) -run='^$$' -bench=. -benchtime=1x -count=1 $(PKG)

# The comparisons with other libraries and the report program live in their
# own module (bench/): gofmt, vet, the report's tests and every benchmark
# once, without cgo and with it.
bench-module: deps
	@out=$$(cd bench && gofmt -l .); \
	if [ -n "$$out" ]; then echo "gofmt would change (bench/):"; echo "$$out"; exit 1; fi
	cd bench && CGO_ENABLED=0 $(GO) vet ./... && CGO_ENABLED=0 $(GO) test -timeout=$(TIMEOUT) -bench=. -benchtime=1x -count=1 ./...
	$(if $(HAVE_CC),cd bench && CGO_ENABLED=1 $(GO) vet ./... && CGO_ENABLED=1 $(GO) test -timeout=$(TIMEOUT) -bench=. -benchtime=1x -count=1 ./...,@$(call skip,the bench/ module with cgo,$(NO_CC)))

# The Prometheus collector lives in its own module (prom/), so that the
# library's go.mod keeps its three dependencies: gofmt, vet and its tests
# without cgo and with it (-race). Its test runs promtool check metrics on
# a scrape; without promtool that check is skipped.
prom-module: deps
	@out=$$(cd prom && gofmt -l .); \
	if [ -n "$$out" ]; then echo "gofmt would change (prom/):"; echo "$$out"; exit 1; fi
	@if ! command -v promtool >/dev/null; then $(call skip,promtool check metrics of the prom/ collector's scrape,promtool not found; install prometheus or run make test as root on Debian); fi
	cd prom && CGO_ENABLED=0 $(GO) vet ./... && CGO_ENABLED=0 $(GO) test -timeout=$(TIMEOUT) -count=1 ./...
	$(if $(HAVE_CC),cd prom && CGO_ENABLED=1 $(GO) vet ./... && CGO_ENABLED=1 $(GO) test -timeout=$(TIMEOUT) -race -count=1 ./...,@$(call skip,the prom/ module with cgo,$(NO_CC)))

# The fleet's agent (fleet/: package fleet and the sketch-fleet command)
# is a module of its own too, for its Redis client: gofmt, vet and its
# tests both ways, each against a real redis-server the tests start (the
# tests skip without one, and fail under CI=true).
fleet-module: deps
	@out=$$(cd fleet && gofmt -l .); \
	if [ -n "$$out" ]; then echo "gofmt would change (fleet/):"; echo "$$out"; exit 1; fi
	cd fleet && CGO_ENABLED=0 $(GO) vet ./... && CGO_ENABLED=0 $(GO) test -timeout=$(TIMEOUT) -count=1 ./...
	$(if $(HAVE_CC),cd fleet && CGO_ENABLED=1 $(GO) vet ./... && CGO_ENABLED=1 $(GO) test -timeout=$(TIMEOUT) -race -count=1 ./...,@$(call skip,the fleet/ module with cgo,$(NO_CC)))

bench:
	CGO_ENABLED=1 $(GO) test -timeout=$(TIMEOUT) -run='^$$' -bench='$(BENCH)' -count=$(COUNT) -benchtime=300ms . | tee $(TMP).bench.txt

# The report program, built both ways (the build decides which core serves
# batches); the pure-Go one runs the show and starts the cgo one as a
# worker. Paths stay relative: the report records the command.
REPORT_FLAGS ?=

bench-report: deps report-deps
	@mkdir -p $(TMP)
	cd bench && CGO_ENABLED=0 $(GO) build -o ../.build/report.purego ./cmd/report
	$(if $(HAVE_CC),cd bench && CGO_ENABLED=1 $(GO) build -o ../.build/report.cgo ./cmd/report,@$(call skip,the cgo build in the report,$(NO_CC)))
	.build/report.purego $(if $(HAVE_CC),-cgo .build/report.cgo) -out docs/BENCHMARKS.md -charts docs/bench -readme README.md -command 'make bench-report' $(REPORT_FLAGS)

# valgrind, for the report's instruction counts: installed when missing and
# root with apt-get, as .ci/install-deps does for the test tools.
report-deps:
	@command -v valgrind >/dev/null && exit 0; \
	if [ "$$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then \
		echo "report-deps: valgrind not found and cannot install it (not root, or no apt-get): the report leaves out instruction counts"; exit 0; \
	fi; \
	echo "report-deps: installing valgrind"; \
	{ DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends valgrind; } >/dev/null 2>&1 || \
		echo "report-deps: apt-get could not install valgrind: the report leaves out instruction counts"

# The torture program, built both ways: the pure-Go build supervises and
# runs workers and checkers from both. It needs both backends, so without a
# C compiler it is skipped.
TORTURE_FLAGS ?=
# The pure-Go builds for other architectures, which the arch part runs
# under qemu-user (it says in its rows when qemu is missing).
TORTURE_CROSS = $(foreach arch,$(CROSS),-$(arch) $(TMP)/torture.$(arch))

torture-build: deps
	@mkdir -p $(TMP)
	CGO_ENABLED=0 $(GO) build -o $(TMP)/torture.purego ./cmd/torture
	CGO_ENABLED=1 $(GO) build -o $(TMP)/torture.cgo ./cmd/torture
	for arch in $(CROSS); do CGO_ENABLED=0 GOARCH=$$arch $(GO) build -o $(TMP)/torture.$$arch ./cmd/torture || exit 1; done

torture: deps
	@if [ -z "$(HAVE_CC)" ]; then $(call skip,make torture (it needs the cgo build beside the pure-Go one),$(NO_CC)); \
	else $(MAKE) --no-print-directory torture-build && $(TMP)/torture.purego -other $(TMP)/torture.cgo $(TORTURE_CROSS) -module $(CURDIR) $(TORTURE_FLAGS); fi

torture-short: deps
	@if [ -z "$(HAVE_CC)" ]; then $(call skip,make torture-short (it needs the cgo build beside the pure-Go one),$(NO_CC)); \
	else $(MAKE) --no-print-directory torture-build && $(TMP)/torture.purego -other $(TMP)/torture.cgo $(TORTURE_CROSS) -short -module $(CURDIR) $(TORTURE_FLAGS); fi

demo:
	$(GO) run ./cmd/sketch demo

clean:
	rm -rf $(TMP) $(TMP).bench.txt
