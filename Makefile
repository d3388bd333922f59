# make test   vet, gofmt, the suite with cgo (-race) and without, the pure-Go
#             build cross-compiled for arm64, s390x (big-endian) and 32-bit
#             arm and run under qemu-user, other systems' and 386 builds,
#             every benchmark once
# make bench  the benchmarks, both cores beside a sync.Mutex+map baseline
# make demo   several processes counting one stream into one shared sketch

GO      ?= go
PKG     := ./...
CROSS   := arm64 s390x arm
BENCH   ?= .
COUNT   ?= 5
TMP     := $(CURDIR)/.build

QEMU_arm64 := qemu-aarch64-static
QEMU_s390x := qemu-s390x-static
QEMU_arm   := qemu-arm-static

.PHONY: test vet fmt test-cgo test-purego check-prefetch test-cross test-other-os bench-smoke bench-module bench demo clean

test: vet fmt test-cgo test-purego check-prefetch test-cross test-other-os bench-smoke bench-module

vet:
	CGO_ENABLED=1 $(GO) vet $(PKG)
	CGO_ENABLED=0 $(GO) vet $(PKG)
	CGO_ENABLED=1 $(GO) vet -tags purego $(PKG)

fmt:
	@out=$$(gofmt -l . | grep -v '^bench/' || true); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

test-cgo:
	CGO_ENABLED=1 $(GO) test -race -count=1 $(PKG)

test-purego:
	CGO_ENABLED=0 $(GO) test -count=1 $(PKG)

# The C core's batches must keep their prefetch instructions: gcc once
# deleted them (a helper whose only effect was __builtin_prefetch looked
# like it did nothing), and only the benchmarks would have shown it.
check-prefetch:
	@mkdir -p $(TMP)
	@if [ "$$($(GO) env GOARCH)" = amd64 ]; then \
		CGO_ENABLED=1 $(GO) test -c -o $(TMP)/sketch.cgo.test . && \
		for fn in sk_cms_add_batch sk_cms_estimate_batch; do \
			n=$$($(GO) tool objdump -s "^$$fn\$$" $(TMP)/sketch.cgo.test | grep -c PREFETCH); \
			if [ "$$n" -eq 0 ]; then echo "$$fn: no prefetch instruction left"; exit 1; fi; \
			echo "$$fn: $$n prefetch instructions"; \
		done; \
	fi

# The pure-Go build on other architectures: compile the test binary, run it
# under qemu-user from the package directory (it reads testdata/).
test-cross:
	@mkdir -p $(TMP)
	@for arch in $(CROSS); do \
		echo "== linux/$$arch (pure Go, under qemu-user)"; \
		CGO_ENABLED=0 GOARCH=$$arch $(GO) test -c -o $(TMP)/sketch.$$arch.test . || exit 1; \
		CGO_ENABLED=0 GOARCH=$$arch $(GO) build -o /dev/null ./cmd/... || exit 1; \
		case $$arch in arm64) q=$(QEMU_arm64);; s390x) q=$(QEMU_s390x);; arm) q=$(QEMU_arm);; esac; \
		command -v $$q >/dev/null || { echo "$$q not found: install qemu-user-static"; exit 1; }; \
		$$q $(TMP)/sketch.$$arch.test -test.count=1 || exit 1; \
	done

# Other systems build and say ErrUnsupported at Open.
test-other-os:
	CGO_ENABLED=0 GOOS=darwin GOARCH=arm64 $(GO) build $(PKG)
	CGO_ENABLED=0 GOOS=windows GOARCH=amd64 $(GO) build $(PKG)
	CGO_ENABLED=0 GOOS=freebsd GOARCH=amd64 $(GO) build $(PKG)
	CGO_ENABLED=0 GOOS=linux GOARCH=386 $(GO) vet $(PKG)

bench-smoke:
	CGO_ENABLED=1 $(GO) test -run='^$$' -bench=. -benchtime=1x -count=1 $(PKG)
	CGO_ENABLED=0 $(GO) test -run='^$$' -bench=. -benchtime=1x -count=1 $(PKG)

# The comparison with another library lives in its own module (bench/).
bench-module:
	cd bench && CGO_ENABLED=1 $(GO) vet ./... && CGO_ENABLED=1 $(GO) test -run='^$$' -bench=. -benchtime=1x -count=1 ./...

bench:
	CGO_ENABLED=1 $(GO) test -run='^$$' -bench='$(BENCH)' -count=$(COUNT) -benchtime=300ms . | tee $(TMP).bench.txt

demo:
	$(GO) run ./cmd/sketch demo

clean:
	rm -rf $(TMP) $(TMP).bench.txt
